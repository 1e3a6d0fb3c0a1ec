package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
)

// lookupTools has lookup (a plain tool) and gated (always needs approval).
func lookupTools(t *testing.T) *tool.Set {
	lookup, err := tool.New("lookup", tool.Config{Description: "Look a thing up."}, func(ctx context.Context, call *tool.Call, in struct {
		Q string `json:"q"`
	}) (string, error) {
		return "found " + in.Q, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	gated, _ := tool.New("gated", tool.Config{Description: "Needs a person.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in struct{}) (string, error) { return "ran", nil })
	set, _ := tool.NewSet(lookup, gated)
	return set
}

// TestOnStart: the hook runs in the first turn before the model is called,
// its call is on the stream, its file in the workspace and its context in
// the model's first request; it does not run again.
func TestOnStart(t *testing.T) {
	var runs atomic.Int32
	var gatedErr atomic.Value
	gh, err := channel.New("gh", channel.Config{OnStart: func(ctx context.Context, s *channel.Start) error {
		runs.Add(1)
		out, err := s.CallTool(ctx, "lookup", map[string]string{"q": "pr 42"}, nil)
		if err != nil {
			return err
		}
		if _, err := s.CallTool(ctx, "gated", map[string]any{}, nil); err != nil {
			gatedErr.Store(err.Error())
		}
		if err := os.WriteFile(filepath.Join(s.WorkspaceDir(), "pr.txt"), []byte(s.Message), 0o644); err != nil {
			return err
		}
		s.AddContext("context: " + string(out.Result))
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	h, fake := timerHost(t, openStore(t, "sqlite"), lookupTools(t), host.Options{Channels: []*channel.Channel{gh}})
	ctx := context.Background()
	sess, _, err := h.Sessions().Create(ctx, host.SessionOptions{Channel: "gh", Message: "review it"})
	if err != nil {
		t.Fatal(err)
	}
	evs := waitEvents(t, h, sess.ID, api.KindTurnCompleted, 1)
	want := "session.created turn.started message action.result channel.started message.delta message model.usage turn.completed"
	if got := kinds(evs); got != want {
		t.Fatalf("events: %s\nwant:   %s", got, want)
	}
	r, _ := api.Decode[api.ActionResult](find(evs, api.KindActionResult)[0])
	if !r.Direct || r.Tool != "lookup" || r.IsError || evs[3].TurnID != evs[1].TurnID {
		t.Fatalf("onStart's call: %+v", r)
	}
	if got, _ := gatedErr.Load().(string); !strings.Contains(got, "needs approval") {
		t.Fatalf("onStart calling a gated tool: %q", got)
	}
	req := string(fake.Requests()[0])
	if !strings.Contains(req, "review it") || !strings.Contains(req, "context: \\\"found pr 42\\\"") {
		t.Fatalf("the model's first request lacks the message or the context: %s", req)
	}
	if b, err := os.ReadFile(filepath.Join(h.Sessions().WorkspaceDir(sess.ID), "pr.txt")); err != nil || string(b) != "review it" {
		t.Fatalf("the workspace file: %q, %v", b, err)
	}
	if _, err := h.Sessions().Send(ctx, sess.ID, "again"); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, h, sess.ID, api.KindTurnCompleted, 2)
	if n := runs.Load(); n != 1 {
		t.Fatalf("onStart ran %d times, want once", n)
	}
	// A session on another channel has no hook.
	other, _, _ := h.Sessions().Create(ctx, host.SessionOptions{Message: "hi"})
	waitEvents(t, h, other.ID, api.KindTurnCompleted, 1)
	if runs.Load() != 1 {
		t.Fatal("onStart ran for a session on the http channel")
	}
}

// TestOnStartFails: a failing hook fails the first turn with its error and
// the model is not called; the next turn runs it again.
func TestOnStartFails(t *testing.T) {
	var runs atomic.Int32
	gh, _ := channel.New("gh", channel.Config{OnStart: func(ctx context.Context, s *channel.Start) error {
		if runs.Add(1) == 1 {
			return errors.New("the repository is archived")
		}
		return nil
	}})
	h, fake := timerHost(t, openStore(t, "sqlite"), lookupTools(t), host.Options{Channels: []*channel.Channel{gh}})
	ctx := context.Background()
	sess, _, err := h.Sessions().Create(ctx, host.SessionOptions{Channel: "gh", Message: "review it"})
	if err != nil {
		t.Fatal(err)
	}
	evs := waitEvents(t, h, sess.ID, api.KindTurnFailed, 1)
	f, _ := api.Decode[api.TurnFailed](find(evs, api.KindTurnFailed)[0])
	if !strings.Contains(f.Reason, "onStart of channel gh: the repository is archived") || len(fake.Requests()) != 0 {
		t.Fatalf("turn.failed %q; model asked %d times", f.Reason, len(fake.Requests()))
	}
	if _, err := h.Sessions().Send(ctx, sess.ID, "try again"); err != nil {
		t.Fatal(err)
	}
	evs = waitEvents(t, h, sess.ID, api.KindTurnCompleted, 1)
	if runs.Load() != 2 || len(find(evs, api.KindChannelStarted)) != 1 || len(fake.Requests()) != 1 {
		t.Fatalf("second turn: onStart ran %d times; events %s", runs.Load(), kinds(evs))
	}
}

// TestSendByKey: Send with a key opens a session on the channel once and
// resumes it after; the handle's calls are the same as a tool's.
func TestSendByKey(t *testing.T) {
	h, _ := timerHost(t, openStore(t, "sqlite"), lookupTools(t), host.Options{})
	ctx := context.Background()
	hd := h.Handle()
	first, turn1, err := hd.Send(ctx, "github", "review acme/shop#42", &tool.SendOptions{Key: "acme/shop#42", Principal: "webhook"})
	if err != nil || turn1 == "" {
		t.Fatalf("the first Send: turn %q, %v", turn1, err)
	}
	followTurn(t, hd, first, turn1, "review acme/shop#42")
	again, turn2, err := hd.Send(ctx, "github", "new commits on acme/shop#42", &tool.SendOptions{Key: "acme/shop#42"})
	if err != nil || again != first || turn2 == "" || turn2 == turn1 {
		t.Fatalf("the second Send with the key: %s, turn %q, %v; want %s and a new turn", again, turn2, err, first)
	}
	followTurn(t, hd, first, turn2, "new commits on acme/shop#42")
	other, _, err := hd.Send(ctx, "github", "review acme/shop#43", &tool.SendOptions{Key: "acme/shop#43"})
	if err != nil || other == first {
		t.Fatalf("another key: %s, %v", other, err)
	}
	sameKeyOtherChannel, _, err := hd.Send(ctx, "gitlab", "x", &tool.SendOptions{Key: "acme/shop#42"})
	if err != nil || sameKeyOtherChannel == first {
		t.Fatalf("the key on another channel: %s, %v", sameKeyOtherChannel, err)
	}
	st, err := hd.GetSession(ctx, "github", first)
	if err != nil || st.Channel != "github" || st.Principal != "webhook" {
		t.Fatalf("GetSession = %+v, %v", st, err)
	}
	waitEvents(t, h, first, api.KindTurnCompleted, 2)
	if _, _, err := hd.Send(ctx, "github", "x", &tool.SendOptions{Key: "k", SessionID: first}); err == nil {
		t.Fatal("Send with a key and a session id was accepted")
	}
	out, err := hd.CallTool(ctx, "lookup", map[string]string{"q": "x"}, nil)
	if err != nil || out.IsError || string(out.Result) != `"found x"` {
		t.Fatalf("Handle.CallTool = %+v, %v", out, err)
	}
	if _, err := hd.CallTool(ctx, "nope", nil, nil); api.AsError(err).Code != api.CodeUnknownTool {
		t.Fatalf("an unknown tool: %v", err)
	}
	// Two first Sends with one key at once: one session, the other Send
	// finds it (and its turn running, or not).
	ids := make(chan string, 2)
	for range 2 {
		go func() {
			id, _, err := hd.Send(ctx, "github", "race", &tool.SendOptions{Key: "acme/shop#99"})
			if err != nil && !errors.Is(err, &api.Error{Code: api.CodeSessionBusy}) {
				t.Errorf("a racing Send: %v", err)
			}
			ids <- id
		}()
	}
	if a, b := <-ids, <-ids; a == "" || a != b {
		t.Fatalf("racing Sends with one key: %q and %q", a, b)
	}
	if _, _, err := (tool.Handle{}).Send(ctx, "x", "y", nil); !errors.Is(err, tool.ErrNotConfigured) {
		t.Fatalf("a zero Handle: %v", err)
	}
	for _, err := range (tool.Handle{}).Follow(ctx, first, 0) {
		if !errors.Is(err, tool.ErrNotConfigured) {
			t.Fatalf("following through a zero Handle: %v", err)
		}
	}
}

// followTurn follows a session through a handle until the turn Send
// started ends, checking that it is the turn of the message sent.
func followTurn(t *testing.T, hd tool.Handle, sessionID, turnID, message string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var said string
	for e, err := range hd.Follow(ctx, sessionID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if e.TurnID != turnID {
			continue
		}
		switch e.Kind {
		case api.KindMessage:
			if m, _ := api.Decode[api.Message](e); m.Role == api.RoleUser {
				said = m.Text
			}
		case api.KindTurnCompleted, api.KindTurnFailed:
			if said != message {
				t.Fatalf("turn %s said %q, want %q", turnID, said, message)
			}
			return
		}
	}
	t.Fatalf("turn %s did not end", turnID)
}

// TestOnStartCloud: a cloud session's hook runs on the host before the
// turn is offered to runners, whose claim carries what it added; a failing
// hook fails the turn, and no runner gets it.
func TestOnStartCloud(t *testing.T) {
	gh, _ := channel.New("gh", channel.Config{OnStart: func(ctx context.Context, s *channel.Start) error {
		if strings.Contains(s.Message, "fail") {
			return errors.New("refused")
		}
		out, err := s.CallTool(ctx, "lookup", map[string]string{"q": "pr"}, nil)
		if err != nil {
			return err
		}
		s.AddContext("context: " + string(out.Result))
		return nil
	}})
	h, _ := timerHost(t, openStore(t, "sqlite"), lookupTools(t), host.Options{Channels: []*channel.Channel{gh}})
	ctx := context.Background()
	if _, _, err := h.Sessions().Create(ctx, host.SessionOptions{Channel: "gh", Mode: api.ModeCloud, Message: "review"}); err != nil {
		t.Fatal(err)
	}
	c, err := h.Runners().Claim(ctx, "r1", 10*time.Second)
	if err != nil || c == nil {
		t.Fatalf("claim: %+v, %v", c, err)
	}
	if got := kinds(c.Events); !strings.Contains(got, "message action.result channel.started") {
		t.Fatalf("the claim's events: %s", got)
	}
	started, _ := api.Decode[api.ChannelStarted](find(c.Events, api.KindChannelStarted)[0])
	if len(started.Context) != 1 || !strings.Contains(started.Context[0], "found pr") {
		t.Fatalf("channel.started: %+v", started)
	}
	failing, _, err := h.Sessions().Create(ctx, host.SessionOptions{Channel: "gh", Mode: api.ModeCloud, Message: "fail please"})
	if err != nil {
		t.Fatal(err)
	}
	evs := waitEvents(t, h, failing.ID, api.KindTurnFailed, 1)
	if f, _ := api.Decode[api.TurnFailed](find(evs, api.KindTurnFailed)[0]); !strings.Contains(f.Reason, "onStart of channel gh: refused") {
		t.Fatalf("turn.failed: %+v", f)
	}
	if c, err := h.Runners().Claim(ctx, "r1", 500*time.Millisecond); c != nil || err != nil {
		t.Fatalf("a runner got the failed turn: %+v, %v", c, err)
	}
}

// TestHandleDecides: a channel reads and decides parked calls through its
// handle, the decision recorded as the channel's user; the call runs once.
func TestHandleDecides(t *testing.T) {
	h, _ := timerHost(t, openStore(t, "sqlite"), lookupTools(t), host.Options{})
	ctx := context.Background()
	hd := h.Handle()
	_, err := hd.CallTool(ctx, "gated", map[string]any{}, nil)
	var pending *host.ApprovalPendingError
	if !errors.As(err, &pending) {
		t.Fatalf("calling the gated tool: %v, want it parked", err)
	}
	list, next, err := hd.ListApprovals(ctx, tool.ApprovalPending, &tool.ListOptions{Limit: 10})
	if err != nil || next != "" || len(list) != 1 || list[0].CallID != pending.CallID || list[0].Tool != "gated" {
		t.Fatalf("ListApprovals = %+v, %q, %v; want the parked call", list, next, err)
	}
	for _, user := range []string{"", "U 1", "U1\nlevel=INFO", strings.Repeat("u", 201)} {
		if _, err := hd.Decide(ctx, "slack", pending.CallID, tool.Decision{Approved: true, User: user}); api.AsError(err).Code != api.CodeBadRequest {
			t.Errorf("deciding as %q: %v, want bad_request", user, err)
		}
	}
	if _, err := hd.Decide(ctx, "no such/channel", pending.CallID, tool.Decision{Approved: true, User: "U1"}); api.AsError(err).Code != api.CodeInvalidChannel {
		t.Errorf("deciding on an invalid channel: %v", err)
	}
	a, err := hd.Decide(ctx, "slack", pending.CallID, tool.Decision{Approved: true, User: "U0ALICE"})
	if err != nil || a.Status != tool.ApprovalApproved || a.DecidedBy != "slack:U0ALICE" {
		t.Fatalf("Decide = %+v, %v; want approved by slack:U0ALICE", a, err)
	}
	if _, err := hd.Decide(ctx, "slack", pending.CallID, tool.Decision{Approved: false, Reason: "no", User: "U0BOB"}); err == nil {
		t.Fatal("a second decision was taken")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := hd.GetApproval(ctx, pending.CallID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Outcome != nil {
			if got.DecidedBy != "slack:U0ALICE" || string(got.Outcome.Result) != `"ran"` {
				t.Fatalf("the decided call: %+v, outcome %s", got, got.Outcome.Result)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the approved call has no outcome: %+v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
