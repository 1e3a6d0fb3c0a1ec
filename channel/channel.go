// Package channel defines an agent's channels: named entry points that
// open and resume sessions. A channel lives in agent/channels/<id>.go, one
// per file, named after the file, and declares
//
//   - routes: net/http handlers the serve host mounts under
//     /<slug>/channels/<id>/…, each given a [tool.Handle] (CallTool, Send,
//     GetSession, the host's services) and authenticated as its [Auth]
//     says: the host's bearer token unless the channel supplies a verifier
//     (a webhook's signature check) — never open by accident;
//   - an OnStart hook, run when a session on the channel starts its first
//     model turn (however the session was made: by a route, by Send, over
//     the API), before the model is called. It can call tools, write into
//     the workspace and add context to the turn; its failure fails the
//     turn, with its error on the stream.
//
// A GitHub webhook channel:
//
//	var _ = channel.Define(channel.Config{
//		Description: "pull requests to review",
//		Routes: []channel.Route{{
//			Method: "POST", Path: "/webhook",
//			Auth:    channel.HMACSHA256("X-Hub-Signature-256", "sha256=", "GITHUB_WEBHOOK_SECRET"),
//			Handler: webhook,
//		}},
//	})
package channel

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/agentsdk/agentsdk/internal/define"
	"github.com/agentsdk/agentsdk/tool"
)

// Config declares a channel.
type Config struct {
	// Description says what the channel is for.
	Description string
	// Routes are the channel's HTTP endpoints.
	Routes []Route
	// OnStart, if set, runs once per session on the channel, at the start
	// of its first model turn, before the model is called. An error fails
	// that turn with the error as its reason; the next turn runs it again.
	OnStart func(ctx context.Context, s *Start) error
}

// Route is one HTTP endpoint of a channel, mounted at
// /<slug>/channels/<id><Path>.
type Route struct {
	// Method is the HTTP method: GET, POST, ….
	Method string
	// Path is the route's path below the channel, starting with "/"; it is
	// a net/http pattern, so it may hold wildcards ("/items/{id}").
	Path string
	// Auth says how a request is authenticated before Handler runs; the
	// zero value is the host's bearer token.
	Auth Auth
	// MaxBodyBytes bounds the request body (default 1 MiB); a larger one
	// is refused with 413 before anything runs.
	MaxBodyBytes int64
	// Handler serves an authenticated request, with a handle on the host.
	Handler func(h tool.Handle, w http.ResponseWriter, r *http.Request)
}

// MaxBodyBytesDefault bounds a route's request body unless it says
// otherwise.
const MaxBodyBytesDefault = 1 << 20

// Channel is a defined channel.
type Channel struct {
	id  string
	cfg Config
}

var registry = define.New[*Channel]("channel", "")

// Define defines the channel of the file it is called in: the file's name
// without .go is the channel's id (agent/channels/github.go → github).
// Call it once per file, in a package-level var. An invalid definition is
// reported when the host starts, naming the file and line.
func Define(cfg Config) *Channel {
	file, line := define.Caller()
	c, err := New(define.NameFromFile(file), cfg)
	registry.Add(c, err, file, line)
	return c
}

// New defines a channel with an explicit id, for programs that assemble
// their own set (host.Options.Channels).
func New(id string, cfg Config) (*Channel, error) {
	if err := tool.CheckName(id); err != nil {
		return nil, fmt.Errorf("channel %q: %w", id, err)
	}
	if id == "http" || id == "eval" {
		return nil, fmt.Errorf("channel %q: the name is the host's own channel", id)
	}
	seen := map[string]bool{}
	for i, r := range cfg.Routes {
		if err := r.check(); err != nil {
			return nil, fmt.Errorf("channel %s: route %d (%s %s): %w", id, i, r.Method, r.Path, err)
		}
		key := r.Method + " " + r.Path
		if seen[key] {
			return nil, fmt.Errorf("channel %s: route %s is declared twice", id, key)
		}
		seen[key] = true
	}
	cfg.Routes = slices.Clone(cfg.Routes)
	return &Channel{id: id, cfg: cfg}, nil
}

var validMethod = regexp.MustCompile(`^[A-Z]+$`)

func (r Route) check() error {
	switch {
	case !validMethod.MatchString(r.Method):
		return fmt.Errorf("the method %q is not an HTTP method in capitals (GET, POST, …)", r.Method)
	case !strings.HasPrefix(r.Path, "/") || strings.ContainsAny(r.Path, " \t\n?#"):
		return errors.New("the path must start with / and hold no spaces, ? or #")
	case r.Handler == nil:
		return errors.New("the route has no Handler")
	case r.Auth.custom && r.Auth.verify == nil:
		return errors.New("the route's Auth is a verifier, but the verifier is nil: give one, or leave Auth zero for the host's bearer token")
	case r.MaxBodyBytes < 0:
		return errors.New("MaxBodyBytes cannot be negative")
	}
	return nil
}

// Registered returns the channels defined with [Define] in the packages
// this program imports; the error reports every invalid definition and
// every file that defines two.
func Registered() ([]*Channel, error) { return registry.All() }

// ID returns the channel's id.
func (c *Channel) ID() string { return c.id }

// Description returns what the channel is for.
func (c *Channel) Description() string { return c.cfg.Description }

// Routes returns the channel's routes.
func (c *Channel) Routes() []Route { return slices.Clone(c.cfg.Routes) }

// HasOnStart reports whether the channel has an OnStart hook.
func (c *Channel) HasOnStart() bool { return c.cfg.OnStart != nil }

// RunOnStart runs the channel's OnStart hook (none: nil). Hosts call it,
// turning a panic into an error.
func (c *Channel) RunOnStart(ctx context.Context, s *Start) (err error) {
	if c.cfg.OnStart == nil {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("onStart panicked: %v", v)
		}
	}()
	return c.cfg.OnStart(ctx, s)
}

// Start is what an OnStart hook is given: a handle on the host (its
// CallTool runs in the session being started, as part of its first turn,
// unless given another SessionID), the session, the first message, and
// where to write.
type Start struct {
	tool.Handle
	// Session is the session being started.
	Session tool.Session
	// Message is the first turn's message.
	Message string

	workspace string
	context   []string
}

// NewStart returns what a host gives an OnStart hook.
func NewStart(h tool.Handle, sess tool.Session, message, workspace string) *Start {
	return &Start{Handle: h, Session: sess, Message: message, workspace: workspace}
}

// WorkspaceDir returns the session's workspace directory.
func (s *Start) WorkspaceDir() string { return s.workspace }

// AddContext adds text for the model to read ahead of the first message
// (what a deterministic call found, the state of a pull request).
func (s *Start) AddContext(text string) {
	if strings.TrimSpace(text) != "" {
		s.context = append(s.context, text)
	}
}

// Context returns the text AddContext added, in order.
func (s *Start) Context() []string { return slices.Clone(s.context) }
