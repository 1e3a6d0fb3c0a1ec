package host_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/model/openai"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// chartPNG is an image a tool returns: larger than the model's result
// budget (ModelResultBytesDefault), as screenshots are.
var chartPNG = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte("pixels"), 20_000)...)

// modelCallTools are weather, chart (a text and an image) and launch
// (always gated).
func modelCallTools(t *testing.T) *tool.Set {
	t.Helper()
	weather, _ := tool.New("weather", tool.Config{Description: "Weather in a city."},
		func(ctx context.Context, call *tool.Call, in weatherInput) (any, error) {
			return map[string]any{"city": in.City, "sky": "clear"}, nil
		})
	chart, _ := tool.New("chart", tool.Config{Description: "Draw a chart."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			return tool.Result{Content: []tool.Content{tool.Text("the chart"), tool.Image(chartPNG, "image/png")}}, nil
		})
	launch, _ := tool.New("launch", tool.Config{Description: "Launch.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "launched", nil })
	set, err := tool.NewSet(weather, chart, launch)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// setupModelCalls is setupSessions with a model of cfg (its provider, name
// and thinking) and modelCallTools.
func setupModelCalls(t *testing.T, cfg model.Config, opts host.Options, script ...fakemodel.Reply) *sessionBundle {
	t.Helper()
	return modelBundle(t, cfg, modelCallTools(t), opts, script...)
}

// modelBundle is a started host of set on SQLite whose model, of cfg's
// provider and name (and settings), is a fake answering script; opts'
// other fields apply.
func modelBundle(t *testing.T, cfg model.Config, set *tool.Set, opts host.Options, script ...fakemodel.Reply) *sessionBundle {
	t.Helper()
	b := &sessionBundle{state: t.TempDir(), fake: fakemodel.New(script...)}
	t.Cleanup(b.fake.Close)
	st, err := sqlite.Open(context.Background(), filepath.Join(b.state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	b.store = st
	cfg.APIKey, cfg.MaxTokens = "k", 100
	if cfg.Name == "" {
		cfg.Name = "fake"
	}
	var p model.Provider
	switch cfg.Provider {
	case "anthropic":
		cfg.BaseURL = b.fake.AnthropicURL()
		p, err = anthropic.New(cfg)
	case "openai":
		cfg.BaseURL = b.fake.OpenAIURL()
		p, err = openai.New(cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	opts.StateRoot, opts.Store, opts.Model, opts.ModelConfig = b.state, st, p, cfg
	if b.host, err = host.New(set, &opts); err != nil {
		t.Fatal(err)
	}
	if err := b.host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.host.Close(); st.Close() })
	return b
}

// turn runs a turn of message in a new session (or sessionID's) to its end.
func (b *sessionBundle) turn(t *testing.T, sessionID, message string) (string, []api.Event) {
	t.Helper()
	ctx := context.Background()
	var turnID string
	if sessionID == "" {
		sess, id, err := b.host.Sessions().Create(ctx, host.SessionOptions{Message: message, Principal: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		sessionID, turnID = sess.ID, id
	} else {
		id, err := b.host.Sessions().Send(ctx, sessionID, message)
		if err != nil {
			t.Fatal(err)
		}
		turnID = id
	}
	return sessionID, b.waitTurn(t, sessionID, turnID)
}

func retries(t *testing.T, evs []api.Event) []api.ModelRetry {
	t.Helper()
	var out []api.ModelRetry
	for _, e := range find(evs, api.KindModelRetry) {
		r, err := api.Decode[api.ModelRetry](e)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestModelRetryAfter: a provider answering 429 with retry-after: 1 twice
// is waited for, each retry on the stream, and the turn completes.
func TestModelRetryAfter(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"anthropic", "openai"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			limited := fakemodel.Reply{Status: 429, Header: map[string]string{"retry-after": "1"}}
			b := setupModelCalls(t, model.Config{Provider: provider}, host.Options{}, limited, limited, fakemodel.Reply{Text: []string{"At last."}})
			start := time.Now()
			_, evs := b.turn(t, "", "hello")
			if took := time.Since(start); took < 2*time.Second {
				t.Errorf("the turn took %s: the retries did not wait the 2 s asked for", took)
			}
			if got, want := kinds(evs), "session.created turn.started message model.retry model.retry message.delta message model.usage turn.completed"; got != want {
				t.Fatalf("events:\n%s\nwant:\n%s", got, want)
			}
			for i, r := range retries(t, evs) {
				if r.Attempt != i+1 || r.Code != api.FailureRateLimited || r.Status != 429 || r.WaitMs != 1000 || !strings.Contains(r.Message, "ate limit") {
					t.Errorf("retry %d: %+v", i+1, r)
				}
			}
			if n := len(b.fake.Requests()); n != 3 {
				t.Errorf("%d model requests, want 3", n)
			}
		})
	}
}

// TestModelFailures: what is retried and what is not, and what a failed
// turn says.
func TestModelFailures(t *testing.T) {
	t.Parallel()
	fast := map[string]string{"retry-after-ms": "5"}
	ok := fakemodel.Reply{Text: []string{"ok"}}
	tests := []struct {
		name     string
		provider string
		opts     host.Options
		script   []fakemodel.Reply
		failed   string // turn.failed's reason has it; "" for a completed turn
		requests int
		retries  []api.ModelRetry // attempt, code, status
	}{
		{"auth fails at once", "anthropic", host.Options{}, []fakemodel.Reply{{Status: 401}}, "auth_failed (401): invalid x-api-key", 1, nil},
		{"auth fails at once (openai)", "openai", host.Options{}, []fakemodel.Reply{{Status: 401}}, "auth_failed (401): Incorrect API key", 1, nil},
		{"context length", "anthropic", host.Options{}, []fakemodel.Reply{{ContextLength: true}}, "context_length_exceeded (400): prompt is too long", 1, nil},
		{"context length (openai)", "openai", host.Options{}, []fakemodel.Reply{{ContextLength: true}}, "context_length_exceeded (400): This model's maximum context length", 1, nil},
		{"invalid request", "anthropic", host.Options{}, []fakemodel.Reply{{Status: 400}}, "invalid_request (400)", 1, nil},
		{"529 retried", "anthropic", host.Options{}, []fakemodel.Reply{{Status: 529}, ok}, "", 2,
			[]api.ModelRetry{{Attempt: 1, Code: api.FailureOverloaded, Status: 529}}},
		{"500 and 503 retried with backoff", "openai", host.Options{}, []fakemodel.Reply{{Status: 500}, {Status: 503}, ok}, "", 3,
			[]api.ModelRetry{{Attempt: 1, Code: api.FailureOverloaded, Status: 500}, {Attempt: 2, Code: api.FailureOverloaded, Status: 503}}},
		{"a reset connection retried", "anthropic", host.Options{}, []fakemodel.Reply{{Reset: true}, ok}, "", 2,
			[]api.ModelRetry{{Attempt: 1, Code: api.FailureOverloaded}}},
		{"an error event before any text retried", "anthropic", host.Options{}, []fakemodel.Reply{{StreamError: true, Header: fast}, ok}, "", 2,
			[]api.ModelRetry{{Attempt: 1, Code: api.FailureOverloaded}}},
		{"an error event after text not retried", "openai", host.Options{}, []fakemodel.Reply{{Text: []string{"Hal"}, StreamError: true}, ok}, "overloaded: The server had an error", 1, nil},
		{"retries exhausted", "anthropic", host.Options{ModelRetries: 2}, []fakemodel.Reply{{Status: 429, Header: fast}, {Status: 529, Header: fast}, {Status: 503, Header: fast}, ok},
			"overloaded (503)", 3, []api.ModelRetry{{Attempt: 1, Code: api.FailureRateLimited, Status: 429}, {Attempt: 2, Code: api.FailureOverloaded, Status: 529}}},
		{"no retries", "anthropic", host.Options{ModelRetries: -1}, []fakemodel.Reply{{Status: 503}, ok}, "overloaded (503)", 1, nil},
		{"a wait past the model timeout is not waited", "openai", host.Options{ModelTimeout: 2 * time.Second}, []fakemodel.Reply{{Status: 429, Header: map[string]string{"retry-after": "30"}}, ok},
			"rate_limited (429)", 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupModelCalls(t, model.Config{Provider: tt.provider}, tt.opts, tt.script...)
			start := time.Now()
			_, evs := b.turn(t, "", "go")
			failed := find(evs, api.KindTurnFailed)
			switch {
			case tt.failed == "" && len(failed) != 0:
				t.Errorf("the turn failed: %s", failed[0].Data)
			case tt.failed != "" && (len(failed) != 1 || !strings.Contains(string(failed[0].Data), tt.failed)):
				t.Errorf("events %s: turn.failed %v, want a reason with %q", kinds(evs), failed, tt.failed)
			}
			if n := len(b.fake.Requests()); n != tt.requests {
				t.Errorf("%d model requests, want %d", n, tt.requests)
			}
			got := retries(t, evs)
			if len(got) != len(tt.retries) {
				t.Fatalf("retries %+v, want %+v", got, tt.retries)
			}
			for i, r := range got {
				want := tt.retries[i]
				if r.Attempt != want.Attempt || r.Code != want.Code || r.Status != want.Status || r.Message == "" {
					t.Errorf("retry %d: %+v, want %+v", i+1, r, want)
				}
			}
			if tt.name == "a wait past the model timeout is not waited" && time.Since(start) > time.Second {
				t.Errorf("the turn took %s: it waited", time.Since(start))
			}
		})
	}
}

// TestImageResultsReachTheModel: a tool result's image reaches the
// Anthropic fake as an image block of its tool_result and the OpenAI fake
// as a user message after the tool messages — in the turn, and in the
// next turn, from the stored history.
func TestImageResultsReachTheModel(t *testing.T) {
	t.Parallel()
	data := base64.StdEncoding.EncodeToString(chartPNG)
	for _, provider := range []string{"anthropic", "openai"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			b := setupModelCalls(t, model.Config{Provider: provider}, host.Options{},
				fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c1", Name: "chart", Input: `{}`}}},
				fakemodel.Reply{Text: []string{"A fine chart."}},
				fakemodel.Reply{Text: []string{"Still fine."}},
			)
			sess, evs := b.turn(t, "", "Chart it")
			if len(find(evs, api.KindTurnCompleted)) != 1 {
				t.Fatalf("events: %s", kinds(evs))
			}
			b.turn(t, sess, "And now?")
			reqs := b.fake.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			for _, n := range []int{1, 2} {
				checkImageSent(t, provider, reqs[n], data)
			}
		})
	}
}

// checkImageSent checks that a request body carries the chart as the
// provider takes images.
func checkImageSent(t *testing.T, provider string, body json.RawMessage, data string) {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) < 4 && !(provider == "anthropic" && len(req.Messages) == 3) {
		t.Errorf("the request has %d messages: %.600s", len(req.Messages), body)
		return
	}
	type part struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		Source    struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		} `json:"source"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	switch provider {
	case "anthropic":
		// user, assistant (tool_use), user (tool_result), …
		var blocks []part
		json.Unmarshal(req.Messages[2].Content, &blocks)
		var inner []part
		if len(blocks) == 1 {
			json.Unmarshal(blocks[0].Content, &inner)
		}
		if len(blocks) != 1 || blocks[0].Type != "tool_result" || blocks[0].ToolUseID != "c1" || len(inner) != 2 ||
			inner[0].Text != "the chart" || inner[1].Type != "image" || inner[1].Source.Type != "base64" || inner[1].Source.MediaType != "image/png" || inner[1].Source.Data != data {
			t.Errorf("the tool_result: %.600s", req.Messages[2].Content)
		}
	case "openai":
		// user, assistant (tool_calls), tool, user (the images), …
		var text string
		json.Unmarshal(req.Messages[2].Content, &text)
		var parts []part
		json.Unmarshal(req.Messages[3].Content, &parts)
		if req.Messages[2].Role != "tool" || !strings.HasPrefix(text, "the chart") || req.Messages[3].Role != "user" || len(parts) != 2 ||
			!strings.Contains(parts[0].Text, "c1") || parts[1].Type != "image_url" || parts[1].ImageURL.URL != "data:image/png;base64,"+data {
			t.Errorf("the tool message %q and the user message after it: %.600s", text, req.Messages[3].Content)
		}
	}
}

// TestThinkingRoundTrip: Anthropic's thinking blocks, signed and
// redacted, are recorded on the stream and sent back byte for byte —
// across a tool call, across a turn parked for approval and resumed from
// its stored history, and in a later turn. The fake refuses a request that
// drops or alters them, as the API does, so every call succeeding is the
// check; the request bodies are checked too.
func TestThinkingRoundTrip(t *testing.T) {
	t.Parallel()
	first := []string{"The user wants \"Oslo\" — ", "ünïcødé\\n <b>&</b>  \u2028", "trailing. "}
	second := []string{"Now launch, which needs a person's yes."}
	b := setupModelCalls(t, model.Config{Provider: "anthropic", Name: "claude-test", Thinking: &model.Thinking{BudgetTokens: 1024}}, host.Options{},
		fakemodel.Reply{Thinking: []fakemodel.Thinking{{Text: first}, {Redacted: "EmwKAhgBEgy3va3pzix/LafPsn4a"}},
			Calls: []fakemodel.Call{{ID: "toolu_w", Name: "weather", Input: `{"city":"Oslo"}`}}},
		fakemodel.Reply{Thinking: []fakemodel.Thinking{{Text: second}}, Text: []string{"Launching."},
			Calls: []fakemodel.Call{{ID: "toolu_l", Name: "launch", Input: `{}`}}},
		fakemodel.Reply{Thinking: []fakemodel.Thinking{{Text: []string{"It is done."}}}, Text: []string{"Launched."}},
		fakemodel.Reply{Text: []string{"You're welcome."}},
	)
	ctx := context.Background()
	sess, turnID, err := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "Weather, then launch", Principal: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	// The turn parks on launch; a person approves; it resumes from the
	// stored history.
	var callID string
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for e, err := range b.host.Sessions().Follow(fctx, sess.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Kind == api.KindTurnFailed {
			t.Fatalf("the turn failed: %s", e.Data)
		}
		if e.Kind == api.KindApprovalRequested {
			a, _ := api.Decode[api.ApprovalRequested](e)
			callID = a.CallID
			break
		}
	}
	if _, err := b.host.Approvals().Resolve(ctx, callID, host.Decision{Approved: true, By: "approver"}); err != nil {
		t.Fatal(err)
	}
	evs := b.waitTurn(t, sess.ID, turnID)
	if f := find(evs, api.KindTurnFailed); len(f) != 0 {
		t.Fatalf("the turn failed: %s", f[0].Data)
	}
	want := "session.created turn.started message " +
		"reasoning.delta reasoning.delta reasoning.delta reasoning reasoning model.usage actions.requested action.result " +
		"reasoning.delta reasoning message.delta message model.usage actions.requested action.approval_requested action.approval_resolved action.result " +
		"reasoning.delta reasoning message.delta message model.usage turn.completed"
	if got := kinds(evs); got != want {
		t.Fatalf("events:\n%s\nwant:\n%s", got, want)
	}
	var recorded []api.Reasoning
	for _, e := range find(evs, api.KindReasoning) {
		r, _ := api.Decode[api.Reasoning](e)
		recorded = append(recorded, r)
	}
	if recorded[0].Text != strings.Join(first, "") || recorded[0].Signature == "" || recorded[1] != (api.Reasoning{Redacted: "EmwKAhgBEgy3va3pzix/LafPsn4a"}) {
		t.Errorf("recorded: %+v", recorded)
	}
	_, evs = b.turn(t, sess.ID, "Thanks!")
	if f := find(evs, api.KindTurnFailed); len(f) != 0 {
		t.Fatalf("the next turn failed: %s", f[0].Data)
	}
	reqs := b.fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	// The last request carries every block of the conversation as it came.
	type block struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
		Data      string `json:"data"`
	}
	var last struct {
		Messages []struct {
			Role    string  `json:"role"`
			Content []block `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[3], &last); err != nil {
		t.Fatal(err)
	}
	var sent []api.Reasoning
	for _, m := range last.Messages {
		for _, c := range m.Content {
			if c.Type == "thinking" || c.Type == "redacted_thinking" {
				sent = append(sent, api.Reasoning{Text: c.Thinking, Signature: c.Signature, Redacted: c.Data})
			}
		}
	}
	if len(sent) != len(recorded) {
		t.Fatalf("sent %+v, recorded %+v", sent, recorded)
	}
	for i := range sent {
		if sent[i] != recorded[i] {
			t.Errorf("block %d sent %+v, recorded %+v", i, sent[i], recorded[i])
		}
	}
}
