package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// contextBundle is a started host whose model (a fake with a small
// window) calls logs, a tool answering 2 KB, and whose summaries another
// fake writes.
type contextBundle struct {
	*sessionBundle
	summaries *fakemodel.Server
}

func contextHost(t *testing.T, st store.Store, window int64, opts host.Options) *contextBundle {
	t.Helper()
	b := &contextBundle{sessionBundle: &sessionBundle{state: t.TempDir(), fake: fakemodel.New(), store: st}, summaries: fakemodel.New()}
	t.Cleanup(b.fake.Close)
	t.Cleanup(b.summaries.Close)
	b.summaries.SetDefault(fakemodel.Reply{Text: []string{"SUMMARY: the user asked for logs, turn after turn."}})
	if window < 1<<20 {
		b.fake.SetWindow(window) // a request over it is refused as the API refuses it
	}
	cfg := model.Config{Provider: "anthropic", Name: "fake", APIKey: "k", BaseURL: b.fake.AnthropicURL(), MaxTokens: 200, ContextWindow: window}
	p, err := anthropic.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := anthropic.New(model.Config{Name: "fake-summaries", APIKey: "k", BaseURL: b.summaries.AnthropicURL(), MaxTokens: 500})
	if err != nil {
		t.Fatal(err)
	}
	logs, _ := tool.New("logs", tool.Config{Description: "The logs."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		return strings.Repeat("log line\n", 228), nil // 2,052 bytes
	})
	deploy, _ := tool.New("deploy", tool.Config{Description: "Deploys.", NeedsApproval: tool.Always}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		return "deployed", nil
	})
	set, _ := tool.NewSet(logs, deploy)
	opts.StateRoot, opts.Store, opts.Model, opts.ModelConfig, opts.MaxTokens = b.state, st, p, cfg, cfg.MaxTokens
	if opts.Compaction.Model == nil {
		opts.Compaction.Model = sp
	}
	if b.host, err = host.New(set, &opts); err != nil {
		t.Fatal(err)
	}
	if err := b.host.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.host.Close() })
	return b
}

// logsTurn scripts a turn that calls logs (its call numbered call_0, as
// servers that number calls per answer do) and then answers.
func (b *contextBundle) logsTurn(n int) {
	b.fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "call_0", Name: "logs", Input: `{}`}}}, fakemodel.Reply{Text: []string{fmt.Sprint("answer ", n)}})
}

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A long session stays within its window: every turn completes, old
// results are cleared and the older turns summarised as the count passes
// the threshold, the model gets the summary, no request it is sent passes
// the window, and the session is read from its latest compaction — on
// SQLite and in memory.
func TestLongSessionStaysInItsWindow(t *testing.T) {
	for name, open := range map[string]func(*testing.T) store.Store{"sqlite": openSQLite, "memory": func(*testing.T) store.Store { return memory.New() }} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const window, turns = 8000, 500
			b := contextHost(t, open(t), window, host.Options{})
			ctx := context.Background()
			b.logsTurn(0)
			sessionID, _ := b.turn(t, "", "question 0")
			for n := 1; n < turns; n++ {
				b.logsTurn(n)
				_, evs := b.turn(t, sessionID, fmt.Sprint("question ", n))
				if last := evs[len(evs)-1]; last.Kind != api.KindTurnCompleted {
					t.Fatalf("turn %d: %s %s", n, last.Kind, last.Data)
				}
			}
			evs, err := b.host.Sessions().Events(ctx, sessionID, 0, 10000)
			if err != nil {
				t.Fatal(err)
			}
			compacted, cleared := decodeAll[api.ContextCompacted](t, evs), decodeAll[api.ContextCleared](t, evs)
			if len(compacted) < 2 || len(cleared) < 1 {
				t.Fatalf("%d compactions, %d clearings in %d events", len(compacted), len(cleared), len(evs))
			}
			for _, c := range compacted {
				if c.TokensAfter >= c.TokensBefore || c.Trigger != "auto" || !strings.HasPrefix(c.Summary, "SUMMARY:") {
					t.Errorf("a compaction: %+v", c)
				}
			}
			summaryCalls := 0
			var summaryIn, summaryOut, turnIn, maxIn int64
			for _, u := range decodeAll[api.ModelUsage](t, evs) {
				in := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
				if u.Purpose == "compaction" {
					summaryCalls++
					summaryIn, summaryOut = summaryIn+in, summaryOut+u.OutputTokens
					continue
				}
				turnIn, maxIn = turnIn+in, max(maxIn, in)
				if in := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens; in+200 > window {
					t.Errorf("a request of %d tokens, with 200 for the answer, was sent to a window of %d", in, window)
				}
			}
			t.Logf("%d turns, %d events: %d compactions (%d tokens in, %d out; %.1f%% of the turns' %d input tokens), %d clearings; the largest request %d tokens",
				turns, len(evs), len(compacted), summaryIn, summaryOut, 100*float64(summaryIn)/float64(turnIn), turnIn, len(cleared), maxIn)
			// The prompt cache: the share of the turns' input read from it,
			// over every call, and over those that follow another call with
			// no compaction between them.
			var read, all, readBetween, allBetween int64
			after := false // the call follows a compaction
			for _, e := range evs {
				switch e.Kind {
				case api.KindContextCompacted:
					after = true
				case api.KindModelUsage:
					u, _ := api.Decode[api.ModelUsage](e)
					if u.Purpose != "" {
						continue
					}
					in := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
					read, all = read+u.CacheReadTokens, all+in
					if !after {
						readBetween, allBetween = readBetween+u.CacheReadTokens, allBetween+in
					}
					after = false
				}
			}
			t.Logf("cache reads: %.1f%% of the turns' input, %.1f%% between compactions", 100*float64(read)/float64(all), 100*float64(readBetween)/float64(allBetween))
			if share := float64(readBetween) / float64(allBetween); share < 0.70 {
				t.Errorf("%.1f%% of the input between compactions was read from the cache, want 70%% or more", 100*share)
			}
			if summaryCalls != len(compacted) {
				t.Errorf("%d summary calls for %d compactions", summaryCalls, len(compacted))
			}
			reqs := b.fake.Requests()
			if last := string(reqs[len(reqs)-1]); !strings.Contains(last, "SUMMARY: the user asked for logs") || strings.Contains(last, `"question 0"`) ||
				!strings.Contains(last, fmt.Sprint("question ", turns-1)) {
				t.Errorf("the last request does not start from the summary: %.300s", last)
			}
			sess, err := b.host.Sessions().Get(ctx, sessionID)
			if err != nil || sess.CompactedSeq == 0 || evs[sess.CompactedSeq-1].Kind != api.KindContextCompacted {
				t.Errorf("CompactedSeq %d, %v", sess.CompactedSeq, err)
			}
		})
	}
}

// A cleared result is read again with read_result {"call": …}: the
// stand-in names it, and the model gets the whole result.
func TestReadClearedResult(t *testing.T) {
	b := contextHost(t, openSQLite(t), 8000, host.Options{})
	b.logsTurn(0)
	sessionID, _ := b.turn(t, "", "question 0")
	var evs []api.Event
	for n := 1; n < 12; n++ {
		b.logsTurn(n)
		_, evs = b.turn(t, sessionID, fmt.Sprint("question ", n))
	}
	cleared := decodeAll[api.ContextCleared](t, evs)
	if len(cleared) == 0 {
		t.Fatal("nothing was cleared")
	}
	first := decodeAll[api.ActionResult](t, evs)[0]
	reqs := b.fake.Requests()
	standIn := fmt.Sprintf(`Call read_result with {\"call\": \"%s\"} to read it again.`, first.CallID)
	if !strings.Contains(string(reqs[len(reqs)-1]), standIn) {
		t.Fatalf("no stand-in naming %s in the last request", first.CallID)
	}
	b.fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "r", Name: "read_result", Input: fmt.Sprintf(`{"call": %q}`, first.CallID)}}}, fakemodel.Reply{Text: []string{"read it"}})
	_, evs = b.turn(t, sessionID, "read the first logs again")
	results := decodeAll[api.ActionResult](t, evs)
	last := results[len(results)-1]
	var got struct{ Text string }
	if last.IsError || json.Unmarshal(last.Result, &got) != nil || got.Text != strings.Repeat("log line\n", 228) {
		t.Errorf("read_result: %s", last.Result)
	}
}

// POST …/compact's host side: a turn of its own that summarises all but
// the last turns; nothing to summarise says so; a busy session is refused.
func TestCompactOnDemand(t *testing.T) {
	b := contextHost(t, openSQLite(t), 200_000, host.Options{})
	ctx := context.Background()
	b.logsTurn(0)
	sessionID, _ := b.turn(t, "", "question 0")
	ans, err := b.host.Sessions().Compact(ctx, sessionID)
	if err != nil || ans.Compacted || ans.Reason == "" {
		t.Errorf("one turn: %+v, %v", ans, err)
	}
	for n := 1; n < 4; n++ {
		b.logsTurn(n)
		b.turn(t, sessionID, fmt.Sprint("question ", n))
	}
	ans, err = b.host.Sessions().Compact(ctx, sessionID)
	if err != nil || !ans.Compacted || ans.Context == nil || ans.Context.Trigger != "manual" || ans.Seq == 0 || ans.TurnID == "" {
		t.Fatalf("four turns: %+v, %v", ans, err)
	}
	evs, _ := b.host.Sessions().Events(ctx, sessionID, 0, 1000)
	var tail []string
	for _, e := range evs {
		if e.TurnID == ans.TurnID {
			tail = append(tail, string(e.Kind))
		}
	}
	if strings.Join(tail, " ") != "turn.started model.usage context.compacted turn.completed" {
		t.Errorf("the compact turn: %v", tail)
	}
	b.logsTurn(4)
	b.turn(t, sessionID, "question 4")
	reqs := b.fake.Requests()
	if last := string(reqs[len(reqs)-1]); !strings.Contains(last, "SUMMARY:") || strings.Contains(last, "question 1") || !strings.Contains(last, "question 3") {
		t.Errorf("the next turn's request: %.300s", last)
	}
	// A summary the model refuses: nothing compacted, the failure
	// classified, the compact turn failed.
	b.summaries.Push(fakemodel.Reply{Status: 401})
	failed, err := b.host.Sessions().Compact(ctx, sessionID)
	if err != nil || failed.Compacted || failed.Code != api.FailureAuthFailed || failed.Reason == "" {
		t.Errorf("a refused summary: %+v, %v", failed, err)
	}
	evs, _ = b.host.Sessions().Events(ctx, sessionID, 0, 1000)
	if last := evs[len(evs)-1]; last.Kind != api.KindTurnFailed || last.TurnID != failed.TurnID {
		t.Errorf("the failed compaction ended with %s", last.Kind)
	}
	// A turn parked on an approval holds the session.
	b.fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "call_0", Name: "deploy", Input: `{}`}}})
	turnID, _ := b.host.Sessions().Send(ctx, sessionID, "deploy")
	waitParked(t, b.sessionBundle, sessionID, turnID)
	if _, err := b.host.Sessions().Compact(ctx, sessionID); !errors.Is(err, api.ErrSessionBusy) {
		t.Errorf("a busy session: %v", err)
	}
}

// A message over MaxMessageBytes is refused, message_too_large.
func TestMessageTooLarge(t *testing.T) {
	b := contextHost(t, openSQLite(t), 200_000, host.Options{MaxMessageBytes: 1000})
	_, _, err := b.host.Sessions().Create(context.Background(), host.SessionOptions{Message: strings.Repeat("x", 1001)})
	if e, ok := errors.AsType[*api.Error](err); !ok || e.Code != api.CodeMessageTooBig || e.Code.Status() != 413 {
		t.Errorf("Create: %v", err)
	}
	sess, _, _ := b.host.Sessions().Create(context.Background(), host.SessionOptions{})
	if _, err := b.host.Sessions().Send(context.Background(), sess.ID, strings.Repeat("x", 1001)); !errors.Is(err, api.ErrMessageTooBig) {
		t.Errorf("Send: %v", err)
	}
}

// A server that numbers calls per answer (call_0 in every turn): an
// approved call's result pairs with its own answer's call, so the turn
// completes instead of parking again and again.
func TestApprovalWithCallIDsPerAnswer(t *testing.T) {
	b := contextHost(t, openSQLite(t), 200_000, host.Options{})
	ctx := context.Background()
	b.logsTurn(0)
	sessionID, _ := b.turn(t, "", "question 0")
	for n := 1; n <= 2; n++ {
		b.fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "call_0", Name: "deploy", Input: `{}`}}}, fakemodel.Reply{Text: []string{fmt.Sprint("deployed ", n)}})
		turnID, err := b.host.Sessions().Send(ctx, sessionID, "deploy")
		if err != nil {
			t.Fatal(err)
		}
		evs := waitParked(t, b.sessionBundle, sessionID, turnID)
		if _, err := b.host.Approvals().Resolve(ctx, pendingCall(t, evs), host.Decision{Approved: true, By: "bob"}); err != nil {
			t.Fatal(err)
		}
		evs = b.waitTurn(t, sessionID, turnID)
		if last := evs[len(evs)-1]; last.Kind != api.KindTurnCompleted {
			t.Fatalf("deploy %d: %s %s", n, last.Kind, last.Data)
		}
		if got := len(find(turnEvents(evs, turnID), api.KindApprovalRequested)); got != 1 {
			t.Errorf("deploy %d parked %d times", n, got)
		}
	}
}

func turnEvents(evs []api.Event, turnID string) []api.Event {
	var out []api.Event
	for _, e := range evs {
		if e.TurnID == turnID {
			out = append(out, e)
		}
	}
	return out
}

// waitParked waits for the turn to park a call, and returns the session's
// events.
func waitParked(t *testing.T, b *sessionBundle, sessionID, turnID string) []api.Event {
	t.Helper()
	evs := b.followUntil(t, sessionID, "turn "+turnID+" did not park", func(e api.Event) bool {
		return e.TurnID == turnID && (e.Kind == api.KindApprovalRequested || e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed)
	})
	if last := evs[len(evs)-1]; last.Kind != api.KindApprovalRequested {
		t.Fatalf("turn %s ended without parking: %s", turnID, last.Data)
	}
	return evs
}
