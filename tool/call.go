package tool

import (
	"encoding/base32"
	"encoding/binary"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
)

// Call is what a handler knows about the call it is running: the call id,
// the session (if any), where to work and the agent's durable state root.
// The host builds one per call with [NewCall].
type Call struct {
	// ID identifies the call: tool_<name>_<random>. It matches the ids on
	// the actions.requested and action.result stream events.
	ID string
	// Tool is the name of the tool being called.
	Tool string
	// Session describes the session the call belongs to; it is zero for a
	// call made outside any session.
	Session Session
	// StateRoot is the agent's durable state directory, shared by every
	// session.
	StateRoot string
	// Handle holds the host's services (call.Host.KV, call.Host.Files, …)
	// and the calls every entry point shares: CallTool, Send, GetSession.
	Handle
	// Artifacts are this call's session's files; outside a session they
	// answer ErrNoSession.
	Artifacts Artifacts

	logger     *slog.Logger // tagged with the tool and call id on first use
	loggerOnce sync.Once
	workspace  func() (string, error)
	goroutines goGroup      // started with Go
	reporter   Reporter     // nil: progress and output go nowhere
	overrun    func(Output) // CallInfo.Overrun

	maxResultBytes int64 // the host's cap on a result; 0: none
}

// Session is read-only information about the session a call belongs to.
type Session struct {
	ID        string `json:"id"`
	Channel   string `json:"channel"`             // "http", "slack", …
	Mode      string `json:"mode"`                // "local" or "cloud"
	Principal string `json:"principal,omitempty"` // who opened the session
}

// IsZero reports whether there is no session.
func (s Session) IsZero() bool { return s == Session{} }

// CallInfo is what a host gives [NewCall].
type CallInfo struct {
	ID        string
	Tool      string
	Session   Session
	StateRoot string
	// Host holds the services; unset ones answer that they are not
	// configured.
	Host Services
	// Artifacts are the session's files (nil outside a session).
	Artifacts Artifacts
	// Backend backs the call's Handle: CallTool, Send and GetSession
	// (nil: not configured).
	Backend Backend
	// Logger is the handler's logger; nil discards.
	Logger *slog.Logger
	// Workspace returns the call's workspace directory, creating it if
	// need be; nil means the call has none.
	Workspace func() (string, error)
	// Reporter receives Call.Progress and Call.Output; nil drops them.
	Reporter Reporter
	// MaxResultBytes caps the call's result, unless the tool sets its own
	// (Config.MaxResultBytes); zero means no cap.
	MaxResultBytes int64
	// Overrun, if set, makes [Tool.Run] call the handler on its own
	// goroutine rather than on a new one, which saves a goroutine switch
	// per call. Run still keeps the tool's timeout for a handler that
	// ignores its context, but by telling rather than by returning: if
	// the call's context ends before the handler returns, Overrun receives
	// the call's result (the timeout or cancellation error) at once, from
	// another goroutine, and Run returns that same result only once the
	// handler has returned. The timeout always counts; the caller's ctx
	// ending counts once the call watches its context (Done, a context
	// derived from it, Err): a call that never looks at it is not
	// interrupted, and its result stands. That spares every call a
	// registration with the caller's context. A host uses it where someone
	// else waits for the answer — serve answers the HTTP request from
	// Overrun, and a request whose client has gone needs no answer. Nil:
	// the handler runs on a goroutine of its own, and Run returns on time.
	Overrun func(Output)
}

// NewCall returns the Call a handler receives. Hosts call it; tools do not.
func NewCall(info CallInfo) *Call {
	if info.Artifacts == nil {
		info.Artifacts = artifactsOutsideSession
	}
	return &Call{
		ID:        info.ID,
		Tool:      info.Tool,
		Session:   info.Session,
		StateRoot: info.StateRoot,
		Handle:    NewHandle(info.Host, info.Backend),
		Artifacts: info.Artifacts,
		logger:    info.Logger,
		workspace: info.Workspace,
		reporter:  info.Reporter,
		overrun:   info.Overrun,

		maxResultBytes: info.MaxResultBytes,
	}
}

// ErrNoWorkspace is returned by [Call.WorkspaceDir] when the call has no
// workspace, or no longer has one because it has returned.
var ErrNoWorkspace = errors.New("this call has no workspace directory")

// WorkspaceDir returns the directory the call works in: the session's
// workspace, or for a call outside any session a scratch directory under
// <StateRoot>/tool-calls/<ID> that is removed when the call returns. The
// directory exists when WorkspaceDir returns without error.
func (c *Call) WorkspaceDir() (string, error) {
	if c.workspace == nil {
		return "", ErrNoWorkspace
	}
	return c.workspace()
}

// Logger returns a logger for the handler, tagged with the tool and call id.
func (c *Call) Logger() *slog.Logger {
	c.loggerOnce.Do(func() {
		if c.logger == nil {
			c.logger = slog.New(slog.DiscardHandler)
			return
		}
		c.logger = c.logger.With("tool", c.Tool, "call_id", c.ID)
	})
	return c.logger
}

// NewCallID returns a fresh call id for the named tool: tool_<name>_<random>.
// The 80 random bits come from math/rand/v2's global generator (the
// runtime's ChaCha8, seeded from the operating system per thread): unique
// and unpredictable, at a tenth of crypto/rand's cost on the hot path. A
// call id names a call; it is not a credential.
func NewCallID(name string) string {
	var random [16]byte
	binary.LittleEndian.PutUint64(random[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(random[8:], rand.Uint64())
	id := make([]byte, 0, len("tool_")+len(name)+1+16)
	id = append(append(append(id, "tool_"...), name...), '_')
	id = callIDEncoding.AppendEncode(id, random[:10])
	return string(id)
}

// callIDEncoding writes 16 lower-case characters for 10 random bytes.
var callIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)
