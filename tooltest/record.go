package tooltest

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// Message is a message a tool sent with call.Send (or call.Handle.Send),
// and the session and turn it was answered with.
type Message struct {
	Channel string
	Text    string
	// Options are the SendOptions as the host received them: call.Send
	// fills in the calling session's principal.
	Options   tool.SendOptions
	SessionID string
	TurnID    string
	Err       error // the error Send returned, if any
}

// ToolCall is a call a tool made with call.CallTool, and what it was
// answered.
type ToolCall struct {
	Tool    string
	Input   json.RawMessage
	Options tool.CallToolOptions
	// Outcome is the call's outcome, or nil when Err says why it did not
	// run.
	Outcome *tool.Outcome
	Err     error
	Stubbed bool // answered by Options.Stubs
}

// Sent returns the messages tools sent, in order.
func (k *Kit) Sent() []Message {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.sent)
}

// ToolCalls returns the calls tools made with call.CallTool, in order.
func (k *Kit) ToolCalls() []ToolCall {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.toolCalls)
}

// backend is the kit as the host side of a call's Handle.
type backend struct{ k *Kit }

var _ tool.Backend = backend{}

// CallTool runs a nested call: stubbed, or through the kit as a direct
// call, in the session opts names (if the kit knows it).
func (b backend) CallTool(ctx context.Context, name string, input any, opts *tool.CallToolOptions) (*tool.Outcome, error) {
	k := b.k
	var o tool.CallToolOptions
	if opts != nil {
		o = *opts
	}
	raw, _ := inputJSON(input)
	rec := ToolCall{Tool: name, Input: raw, Options: o}
	defer func() {
		k.mu.Lock()
		k.toolCalls = append(k.toolCalls, rec)
		k.mu.Unlock()
	}()
	var session *tool.Session
	if o.SessionID != "" {
		s, ok := k.session(o.SessionID)
		if !ok {
			rec.Err = api.Errorf(api.CodeSessionNotFound, "session not found: %s", o.SessionID)
			return nil, rec.Err
		}
		session = &s
	}
	if stub, ok := k.opts.Stubs[name]; ok {
		rec.Stubbed = true
		rec.Outcome, rec.Err = k.stub(ctx, name, stub, input, session)
		return rec.Outcome, rec.Err
	}
	out := k.call(ctx, name, input, false, session)
	if out.Err != nil {
		rec.Err = out.Err
		return nil, out.Err
	}
	o2 := out.Outcome
	rec.Outcome = &o2
	return &o2, nil
}

// stub answers a nested call with a stub: the input is validated first
// against the tool of that name if the kit has one (a refusal is the
// caller's error, as from a host), and what the stub returns is
// normalised by a tool's own Run.
func (k *Kit) stub(ctx context.Context, name string, stub Stub, input any, session *tool.Session) (*tool.Outcome, error) {
	start := time.Now()
	raw, err := inputJSON(input)
	if err != nil {
		return nil, api.AsError(&tool.InputError{Tool: name, Violations: []tool.Violation{{Path: "input", Message: err.Error()}}})
	}
	if _, ok := k.tools.Lookup(name); ok {
		if _, _, err := k.validate(name, raw); err != nil {
			return nil, api.AsError(err)
		}
	}
	st, err := tool.New(name, tool.Config{Description: "the test's stub of " + name},
		func(ctx context.Context, call *tool.Call, in json.RawMessage) (any, error) { return stub(ctx, in) })
	if err != nil {
		return nil, fmt.Errorf("tooltest: stubbing %s: %w", name, err)
	}
	in, err := st.Validate(raw)
	if err != nil {
		return nil, api.AsError(err)
	}
	id := tool.NewCallID(name)
	info := tool.CallInfo{ID: id, Tool: name, StateRoot: k.opts.StateRoot, Host: k.servicesFor(session), Backend: backend{k}, Logger: k.log, MaxResultBytes: k.opts.MaxResultBytes}
	if session != nil {
		info.Session = *session
	}
	res, err := st.Run(ctx, tool.NewCall(info), in)
	if err != nil {
		res = tool.ErrorOutput(err.Error())
	}
	return &tool.Outcome{ToolName: name, CallID: id, IsError: res.IsError, Result: res.Result, DurationMs: time.Since(start).Milliseconds()}, nil
}

// Send records a message and answers it (Options.Send, else a session
// of the kit's own).
func (b backend) Send(ctx context.Context, channelID, message string, opts *tool.SendOptions) (string, string, error) {
	k := b.k
	var o tool.SendOptions
	if opts != nil {
		o = *opts
	}
	m := Message{Channel: channelID, Text: message, Options: o}
	if k.opts.Send != nil {
		m.SessionID, m.TurnID, m.Err = k.opts.Send(ctx, channelID, message, &o)
	} else {
		m.SessionID, m.TurnID, m.Err = k.open(channelID, o)
	}
	k.mu.Lock()
	k.sent = append(k.sent, m)
	k.mu.Unlock()
	return m.SessionID, m.TurnID, m.Err
}

// open answers a Send: the session it names, the one its key names on
// the channel, or a new one.
func (k *Kit) open(channelID string, o tool.SendOptions) (string, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.seq++
	turn := fmt.Sprintf("turn_%d", k.seq)
	switch {
	case o.SessionID != "":
		if _, ok := k.sessions[o.SessionID]; !ok {
			return "", "", api.Errorf(api.CodeSessionNotFound, "session not found: %s", o.SessionID)
		}
		return o.SessionID, turn, nil
	case o.Key != "":
		if id, ok := k.keys[channelID+"\x00"+o.Key]; ok {
			return id, turn, nil
		}
	}
	id := fmt.Sprintf("session_%d", k.seq)
	k.sessions[id] = tool.Session{ID: id, Channel: channelID, Mode: "local", Principal: o.Principal}
	if o.Key != "" {
		k.keys[channelID+"\x00"+o.Key] = id
	}
	return id, turn, nil
}

func (k *Kit) session(id string) (tool.Session, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.sessions[id]
	return s, ok
}

// GetSession reads a session the kit knows: Options.Session, or one a
// Send opened.
func (b backend) GetSession(ctx context.Context, channelID, sessionID string) (tool.SessionState, error) {
	s, ok := b.k.session(sessionID)
	if !ok || (s.Channel != "" && channelID != "" && s.Channel != channelID) {
		return tool.SessionState{}, api.Errorf(api.CodeSessionNotFound, "session not found: %s", sessionID)
	}
	return tool.SessionState{Session: s}, nil
}

var errNoTurns = fmt.Errorf("tooltest: %w: the kit runs no model turns, so a session has no stream to follow; give tooltest.Options.Follow", tool.ErrNotConfigured)

// Follow answers with Options.Follow, else with an error.
func (b backend) Follow(ctx context.Context, sessionID string, after int64) iter.Seq2[tool.Event, error] {
	if b.k.opts.Follow != nil {
		return b.k.opts.Follow(ctx, sessionID, after)
	}
	return func(yield func(tool.Event, error) bool) { yield(tool.Event{}, errNoTurns) }
}

// GetApproval: the kit parks nothing, so no call is found.
func (b backend) GetApproval(ctx context.Context, callID string) (tool.ApprovalState, error) {
	return tool.ApprovalState{}, api.Errorf(api.CodeApprovalNotFound, "%s: %s", api.ErrApprovalNotFound.Message, callID)
}

// ListApprovals: the kit parks nothing.
func (b backend) ListApprovals(ctx context.Context, status tool.ApprovalStatus, opts *tool.ListOptions) ([]tool.ApprovalState, string, error) {
	return nil, "", nil
}

// Decide: the kit parks nothing, so no call is found.
func (b backend) Decide(ctx context.Context, channelID, callID string, d tool.Decision) (tool.ApprovalState, error) {
	return b.GetApproval(ctx, callID)
}

// recorder keeps a call's progress and output (tool.Reporter).
type recorder struct {
	mu       sync.Mutex
	progress []Progress
	output   strings.Builder
}

func (r *recorder) Progress(done, total float64, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, Progress{Done: done, Total: total, Message: message})
}

func (r *recorder) Output(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.output.WriteString(text)
}

// testLogger logs to t.Log until the test ends (a handler that runs on
// past its call may log later: that is dropped).
func testLogger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(w.stop)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testWriter) stop() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
