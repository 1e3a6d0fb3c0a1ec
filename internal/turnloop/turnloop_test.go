package turnloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/turnloop"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/tool"
)

// recorder is an Env that keeps what the loop records and answers every
// tool call with "ok".
type recorder struct {
	mu       sync.Mutex
	payloads []api.Payload
}

func (r *recorder) Emit(ctx context.Context, payloads ...api.Payload) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.payloads = append(r.payloads, payloads...)
	return nil
}

func (r *recorder) Execute(ctx context.Context, callID string, c model.ToolCall) (tool.Output, bool) {
	return tool.Output{Result: []byte(`"ok"`)}, false
}

func (r *recorder) Admit(context.Context, *model.Request) (func(), error) { return func() {}, nil }

// run runs a turn against a fake answering script, through the real
// Anthropic client.
func run(t *testing.T, cfg turnloop.Config, script ...fakemodel.Reply) (*recorder, *fakemodel.Server, error) {
	t.Helper()
	fake := fakemodel.New(script...)
	t.Cleanup(fake.Close)
	p, err := anthropic.New(model.Config{Name: "claude-test", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model = p
	if cfg.MaxSteps == 0 {
		cfg.MaxSteps = 4
	}
	if cfg.ModelTimeout == 0 {
		cfg.ModelTimeout = 10 * time.Second
	}
	env := &recorder{}
	_, err = turnloop.Run(context.Background(), cfg, env, userSays("go"))
	return env, fake, err
}

// TestRunErrors: what Run returns can be told apart with errors.Is/As.
func TestRunErrors(t *testing.T) {
	t.Parallel()
	call := fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c", Name: "f", Input: `{}`}}}
	tests := []struct {
		name   string
		cfg    turnloop.Config
		script []fakemodel.Reply
		check  func(error) bool
	}{
		{"a provider failure wraps a *model.Error", turnloop.Config{}, []fakemodel.Reply{{Status: 401}},
			func(err error) bool {
				e, ok := errors.AsType[*model.Error](err)
				return ok && e.Reason == model.ReasonAuth && e.Status == 401
			}},
		{"the retries' last error", turnloop.Config{Retries: 1}, []fakemodel.Reply{{Status: 529, Header: map[string]string{"retry-after-ms": "1"}}, {Status: 429, Header: map[string]string{"retry-after-ms": "1"}}},
			func(err error) bool {
				e, ok := errors.AsType[*model.Error](err)
				return ok && e.Reason == model.ReasonRateLimited && e.Status == 429
			}},
		{"a timeout is a *model.Error", turnloop.Config{ModelTimeout: 200 * time.Millisecond}, []fakemodel.Reply{{Hang: 10 * time.Second}},
			func(err error) bool {
				e, ok := errors.AsType[*model.Error](err)
				return ok && e.Reason == model.ReasonTimeout
			}},
		{"the model timeout bounds the retries", turnloop.Config{ModelTimeout: 300 * time.Millisecond, Retries: 5},
			[]fakemodel.Reply{{Status: 529, Hang: 200 * time.Millisecond}, {Status: 529, Hang: 200 * time.Millisecond}, {Status: 529, Hang: 200 * time.Millisecond}},
			func(err error) bool {
				e, ok := errors.AsType[*model.Error](err)
				return ok && (e.Reason == model.ReasonTimeout || e.Reason == model.ReasonOverloaded)
			}},
		{"the step limit", turnloop.Config{MaxSteps: 2}, []fakemodel.Reply{call, call},
			func(err error) bool { return errors.Is(err, turnloop.ErrStepLimit) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, _, err := run(t, tt.cfg, tt.script...)
			if err == nil || !tt.check(err) {
				t.Errorf("Run: %v", err)
			}
			if tt.cfg.ModelTimeout > 0 && time.Since(start) > tt.cfg.ModelTimeout+time.Second {
				t.Errorf("Run took %s, past the model timeout %s", time.Since(start), tt.cfg.ModelTimeout)
			}
		})
	}
}

// TestReasoningRecorded: reasoning deltas and blocks are recorded before
// the answer's message and calls, and never as text.
func TestReasoningRecorded(t *testing.T) {
	t.Parallel()
	fake := fakemodel.New(
		fakemodel.Reply{Thinking: []fakemodel.Thinking{{Text: []string{"hm", "m"}}, {Redacted: "xyz"}}, Text: []string{"Hi."}, Calls: []fakemodel.Call{{ID: "c", Name: "f", Input: `{}`}}},
		fakemodel.Reply{Text: []string{"Done."}},
	)
	t.Cleanup(fake.Close)
	p, err := anthropic.New(model.Config{Name: "claude-test", APIKey: "k", BaseURL: fake.AnthropicURL(), Thinking: &model.Thinking{BudgetTokens: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	env := &recorder{}
	if _, err := turnloop.Run(context.Background(), turnloop.Config{Model: p, MaxSteps: 3, ModelTimeout: 10 * time.Second}, env, userSays("go")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pl := range env.payloads {
		got = append(got, string(pl.EventKind()))
	}
	want := []string{"reasoning.delta", "reasoning.delta", "reasoning", "reasoning", "message.delta", "message", "model.usage", "actions.requested", "action.result", "message.delta", "message", "model.usage"}
	if len(got) != len(want) {
		t.Fatalf("recorded %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("recorded %v, want %v", got, want)
		}
	}
	if m := env.payloads[5].(api.Message); m.Text != "Hi." {
		t.Errorf("the message: %+v", m)
	}
	// History rebuilds the blocks onto the assistant message they led to.
	h := turnloop.NewHistory()
	h.Add(api.NewEvent(api.Message{Role: api.RoleUser, Text: "go"}))
	for _, pl := range env.payloads[:8] {
		h.Add(api.NewEvent(pl))
	}
	msgs, _ := h.Messages()
	if len(msgs) != 3 || len(msgs[1].Reasoning) != 2 || msgs[1].Reasoning[0].Text != "hmm" || msgs[1].Reasoning[0].Signature == "" ||
		msgs[1].Reasoning[1].Redacted != "xyz" || len(msgs[1].ToolCalls) != 1 || msgs[1].Text != "Hi." {
		t.Errorf("history: %+v", msgs)
	}
}

// TestHistoryDropsAnUnansweredReasoning: blocks of an answer that never
// came (the turn failed after them) go with no later message.
func TestHistoryDropsAnUnansweredReasoning(t *testing.T) {
	t.Parallel()
	h := turnloop.NewHistory()
	for _, p := range []api.Payload{
		api.TurnStarted{}, api.Message{Role: api.RoleUser, Text: "a"}, api.Reasoning{Text: "t", Signature: "s"}, api.TurnFailed{Reason: "x"},
		api.TurnStarted{}, api.Message{Role: api.RoleUser, Text: "b"}, api.Message{Role: api.RoleAssistant, Text: "B"},
	} {
		h.Add(api.NewEvent(p))
	}
	msgs, _ := h.Messages()
	if len(msgs) != 2 || msgs[1].Text != "B" || msgs[1].Reasoning != nil {
		t.Errorf("history: %+v", msgs)
	}
}

// TestResultContent: a Result's images come apart from its text, decoded.
func TestResultContent(t *testing.T) {
	t.Parallel()
	out := tool.Output{Result: mustJSON(t, tool.Result{Content: []tool.Content{
		tool.Text("one"), tool.Image([]byte("png!"), "image/png"), tool.Audio([]byte("wav"), "audio/wav"), tool.Image([]byte("gif!"), "image/gif"),
		{Type: "image", Data: "not base64!", MimeType: "image/png"},
	}})}
	text, images := turnloop.ResultContent(out)
	if text != "one\n[audio content, audio/wav]\n[image content, image/png]" {
		t.Errorf("text %q", text)
	}
	if len(images) != 2 || string(images[0].Data) != "png!" || images[0].MimeType != "image/png" || images[0].Name != "image 1 of the result" ||
		string(images[1].Data) != "gif!" || images[1].Name != "image 2 of the result" {
		t.Errorf("images %+v", images)
	}
	if got := turnloop.ResultText(out); got != "one\n[image content, image/png]\n[audio content, audio/wav]\n[image content, image/gif]\n[image content, image/png]" {
		t.Errorf("ResultText %q", got)
	}
	if text, images := turnloop.ResultContent(tool.Output{Result: mustJSON(t, tool.Result{Content: []tool.Content{tool.Image([]byte("x"), "image/png")}})}); text != "" || len(images) != 1 {
		t.Errorf("an image alone: %q, %+v", text, images)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// userSays is a history of one user message.
func userSays(text string) *turnloop.History {
	h := turnloop.NewHistory()
	h.Push(model.Message{Role: model.User, Text: text})
	return h
}
