package tooltest

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// Options configure a [Kit]. Nil means defaults.
type Options struct {
	// Tools is the set the kit calls from; nil means [tool.Registered]:
	// the tools defined with tool.Define in the packages the test binary
	// links (the package under test, for a test in agent/tools). A set
	// that does not build fails the test with every bad definition.
	Tools *tool.Set
	// Session runs the calls in that session, as a direct call with a
	// sessionId (or a model turn's call) runs: call.Session is it,
	// call.Artifacts, call.Host.Reminders and Otel.TagSession work (in
	// memory), and the workspace is the session's, kept from call to call.
	// Nil: outside any session, as agent-sdk call without --session runs:
	// those answer tool.ErrNoSession, and each call has a scratch
	// workspace removed when it returns.
	Session *tool.Session
	// Stubs answer call.CallTool for the tools they name, instead of
	// running the tool through the kit (the call is recorded either way).
	Stubs map[string]Stub
	// Send answers call.Send (recorded either way). Nil: each message
	// opens a new session, "session_<n>", unless it names one
	// (SendOptions.SessionID) or a key already used on its channel
	// (SendOptions.Key); the turn is "turn_<n>". No turn runs.
	Send func(ctx context.Context, channelID, message string, opts *tool.SendOptions) (sessionID, turnID string, err error)
	// Follow answers call.Follow. Nil: the sequence yields one error
	// saying the kit runs no model turns.
	Follow func(ctx context.Context, sessionID string, after int64) iter.Seq2[tool.Event, error]
	// MCP, Platforms, SlackNudges and Evals are call.Host's; nil: not
	// configured, as on a host whose agent.yaml does not configure them
	// (each call fails saying how to). Give fakes for a tool that uses
	// them; Platforms takes the keys tool.PlatformSlack and
	// tool.PlatformGitHub (a *slack.Client, a *github.Client pointed at a
	// test server).
	MCP         tool.MCP
	Platforms   map[string]any
	SlackNudges tool.SlackNudges
	Evals       tool.Evals
	// StateRoot is call.StateRoot, under which the workspaces are; "":
	// a directory of the test's own (t.TempDir).
	StateRoot string
	// MaxResultBytes caps a result's JSON unless the tool sets its own,
	// as host.Options.MaxResultBytes does; 0: tool.MaxResultBytesDefault,
	// negative: no cap.
	MaxResultBytes int64
	// MaxFileBytes bounds one file of Files and Artifacts; 0: 256 MiB, the
	// host's default.
	MaxFileBytes int64
	// Logger is the handlers' logger; nil: the test's log (t.Log), where a
	// handler's panic shows with its stack.
	Logger *slog.Logger
	// Now is the kit's clock: KV expiry, the times of files and
	// reminders. Nil: time.Now.
	Now func() time.Time
}

// Stub answers call.CallTool for one tool, as a handler would: what it
// returns is normalised into the result (a string as it is, another
// value as its JSON), and an error is a result with IsError. input is
// the JSON the calling tool passed.
type Stub func(ctx context.Context, input json.RawMessage) (any, error)

// maxFileBytesDefault is host.MaxFileBytesDefault (not imported: the kit
// links no host).
const maxFileBytesDefault = 256 << 20

// Kit runs tools as a host's direct call runs them, with the host's
// services in memory. Its services and records are shared by its calls;
// it is safe for concurrent use.
type Kit struct {
	t     testing.TB
	opts  Options
	tools *tool.Set
	log   *slog.Logger
	now   func() time.Time

	// KV is call.Host.KV, in memory.
	KV *KV
	// Files is call.Host.Files, in memory.
	Files *Files
	// Artifacts are the artifacts (call.Artifacts) calls in the kit's
	// sessions leave, in memory. Outside a session (Options.Session nil)
	// handlers get tool.ErrNoSession, as from a host; the test can still
	// read and seed them here.
	Artifacts *Files
	// Reminders are the reminders (call.Host.Reminders) calls in the
	// kit's sessions set (Options.Session's, or one a Send opened), in
	// memory: they are set, listed and cancelled, and never fire. Outside
	// a session handlers get tool.ErrNoSession.
	Reminders *Reminders
	// Otel records the metrics and session tags handlers give
	// call.Host.Otel.
	Otel *Otel

	direct, inSession tool.Services // call.Host outside a session, and in one; made once

	mu        sync.Mutex
	sent      []Message
	toolCalls []ToolCall
	sessions  map[string]tool.Session // opened by Send, and Options.Session
	keys      map[string]string       // channel + "\x00" + key -> session id
	seq       int
}

// New returns a kit for a test. It fails the test if the tools do not
// build (Options.Tools nil and tool.Registered fails).
//
// t may be nil outside a test (an Example, a program checking its tools):
// a failure then panics, the calls' context is context.Background, the
// handlers' logs are discarded, and the state root, unless
// Options.StateRoot names one, is a directory under the system's temporary
// directory, made when a call first opens its workspace and left behind.
func New(t testing.TB, opts *Options) *Kit {
	if t != nil {
		t.Helper()
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	tools := o.Tools
	if tools == nil {
		set, err := tool.Registered()
		if err != nil {
			fatalf(t, "tooltest: the tools do not build: %v", err)
		}
		tools = set
	}
	if s := o.Session; s != nil && (s.ID == "" || strings.ContainsAny(s.ID, `/\`) || s.ID == "." || s.ID == "..") {
		fatalf(t, "tooltest: Options.Session.ID %q: a session needs an id that can name a directory, such as s1", s.ID)
	}
	if o.StateRoot == "" {
		o.StateRoot = tempDir(t)
	}
	switch {
	case o.MaxResultBytes == 0:
		o.MaxResultBytes = tool.MaxResultBytesDefault
	case o.MaxResultBytes < 0:
		o.MaxResultBytes = 0
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = maxFileBytesDefault
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	k := &Kit{
		t: t, opts: o, tools: tools, now: now,
		KV:        newKV(now),
		Files:     newFiles("files", o.MaxFileBytes, now),
		Artifacts: newFiles("artifacts", o.MaxFileBytes, now),
		Reminders: newReminders(now),
		Otel:      &Otel{},
		sessions:  map[string]tool.Session{},
		keys:      map[string]string{},
	}
	k.log = o.Logger
	switch {
	case k.log != nil:
	case t != nil:
		k.log = testLogger(t)
	default:
		k.log = slog.New(slog.DiscardHandler)
	}
	k.direct = tool.Services{
		KV: k.KV, Files: k.Files, MCP: o.MCP, Otel: otelView{k.Otel, false}, Platforms: o.Platforms,
		SlackNudges: o.SlackNudges, Evals: o.Evals,
		Reminders: tool.NoReminders{Err: errRemindersOutsideSession},
	}
	k.inSession = k.direct
	k.inSession.Otel, k.inSession.Reminders = otelView{k.Otel, true}, k.Reminders
	if s := o.Session; s != nil {
		k.sessions[s.ID] = *s
	}
	return k
}

// Call runs the named tool once with input on a kit of its own (New(t,
// nil)) and returns its outcome. input is JSON text (a string, []byte or
// json.RawMessage) or any value that encodes to a JSON object, such as
// the tool's input struct or a map.
func Call(t testing.TB, name string, input any) *Outcome {
	if t != nil {
		t.Helper()
	}
	return New(t, nil).Call(name, input)
}

// Call runs the named tool with input as a host's direct call does: the
// input is validated with the tool's own validation, the approval
// predicate is asked, and the handler runs through [tool.Tool.Run]. It
// returns the outcome a direct call reports — a result, with IsError for
// a tool's failure; Err for a call that did not run (unknown tool, agent
// tool, invalid input); Parked, without running, for a call that needs
// approval. input is JSON text (a string, []byte or json.RawMessage) or
// any value that encodes to a JSON object. The call's context is the
// test's (t.Context).
func (k *Kit) Call(name string, input any) *Outcome {
	return k.CallContext(k.context(), name, input)
}

// CallApproved runs the named tool as Call does, but as if a person had
// approved it: the approval predicate is still asked (Outcome.Parked
// says whether a host would have parked it), and the handler runs
// either way, as a host runs an approved call.
func (k *Kit) CallApproved(name string, input any) *Outcome {
	return k.call(k.context(), name, input, true, k.opts.Session)
}

// CallContext is Call with a context of the caller's.
func (k *Kit) CallContext(ctx context.Context, name string, input any) *Outcome {
	return k.call(ctx, name, input, false, k.opts.Session)
}

// call validates and runs one call; approved runs it past its approval.
func (k *Kit) call(ctx context.Context, name string, input any, approved bool, session *tool.Session) *Outcome {
	start := time.Now()
	out := &Outcome{Outcome: tool.Outcome{ToolName: name}}
	t, in, err := k.validate(name, input)
	if err != nil {
		out.Violations, out.Err = refusal(err)
		return out
	}
	out.CallID = tool.NewCallID(name)
	needed, reason := in.NeedsApproval()
	if needed {
		out.Parked, out.ApprovalErr = true, reason
		if reason != nil {
			k.log.Warn("approval predicate failed; treating the call as needing approval", "tool", name, "err", reason)
		}
		if !approved {
			out.Err = &ApprovalPendingError{CallID: out.CallID, Tool: name}
			return out
		}
	}
	rec := &recorder{}
	ws := k.workspace(out.CallID, session)
	defer ws.close(k.log)
	info := tool.CallInfo{
		ID: out.CallID, Tool: name, StateRoot: k.opts.StateRoot,
		Host: k.servicesFor(session), Backend: backend{k}, Logger: k.log,
		Workspace: ws.open, Reporter: rec, MaxResultBytes: k.opts.MaxResultBytes,
	}
	if session != nil {
		info.Session = *session
		info.Artifacts = sessionArtifacts{k.Artifacts}
	}
	res, err := t.Run(ctx, tool.NewCall(info), in)
	if err != nil {
		res = tool.ErrorOutput(err.Error()) // as a host does: Run's error is the call's failure
	}
	out.IsError, out.Result = res.IsError, res.Result
	out.DurationMs = time.Since(start).Milliseconds()
	out.Progress, out.Output = rec.progress, rec.output.String()
	return out
}

// context is the calls' context: the test's.
func (k *Kit) context() context.Context {
	if k.t == nil {
		return context.Background()
	}
	return k.t.Context()
}

// fatalf fails the test, or panics outside one.
func fatalf(t testing.TB, format string, args ...any) {
	if t == nil {
		panic(fmt.Sprintf(format, args...))
	}
	t.Helper()
	t.Fatalf(format, args...)
}

// tempDir is a directory of the test's, or outside a test a new path
// under the system's temporary directory, made only when a call's
// workspace is (so that an Example leaves nothing behind).
func tempDir(t testing.TB) string {
	if t != nil {
		return t.TempDir()
	}
	return filepath.Join(os.TempDir(), tool.NewCallID("tooltest"))
}

// servicesFor is call.Host for a call in session (nil: outside any):
// Reminders and Otel.TagSession work only in one, as on a host.
func (k *Kit) servicesFor(session *tool.Session) tool.Services {
	if session == nil {
		return k.direct
	}
	return k.inSession
}

// Tools returns the kit's tools.
func (k *Kit) Tools() *tool.Set { return k.tools }

// workspace is a call's directory, made when the handler asks for it: the
// session's <StateRoot>/sessions/<id>/workspace (kept), or a scratch
// <StateRoot>/tool-calls/<callId> removed when the call returns, as a
// host lays them out.
type workspace struct {
	dir     string
	scratch bool

	mu           sync.Mutex
	made, closed bool
}

func (k *Kit) workspace(callID string, session *tool.Session) *workspace {
	if session != nil {
		return &workspace{dir: filepath.Join(k.opts.StateRoot, "sessions", session.ID, "workspace")}
	}
	return &workspace{dir: filepath.Join(k.opts.StateRoot, "tool-calls", callID), scratch: true}
}

func (w *workspace) open() (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return "", fmt.Errorf("%w: the call has returned and its scratch workspace is gone", tool.ErrNoWorkspace)
	}
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return "", fmt.Errorf("creating workspace: %w", err)
	}
	w.made = true
	return w.dir, nil
}

func (w *workspace) close(log *slog.Logger) {
	if !w.scratch {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.made {
		if err := os.RemoveAll(w.dir); err != nil {
			log.Warn("removing scratch workspace", "dir", w.dir, "err", err)
		}
	}
}
