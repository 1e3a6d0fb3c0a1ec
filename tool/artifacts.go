package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"time"
)

// Artifacts are files a call leaves in its session, for people to fetch
// (GET /<slug>/v1/session/<id>/artifacts/<name>) and announced on the
// session's stream (artifact.created). The session is filled in: a tool
// names the file and nothing else.
type Artifacts interface {
	Put(ctx context.Context, name string, r io.Reader, opts *FilePutOptions) (FileInfo, error)
	Get(ctx context.Context, name string) (io.ReadCloser, FileInfo, error)
	List(ctx context.Context) ([]FileInfo, error)
}

// ErrNoSession is returned by session-bound services for a call made
// outside any session.
var ErrNoSession = errors.New("this call is not in a session")

type noArtifacts struct{ err error }

// artifactsOutsideSession is a call's Artifacts outside any session: an
// interface value made once, not per call.
var artifactsOutsideSession Artifacts = noArtifacts{err: errArtifactsOutsideSession}

func (a noArtifacts) Put(context.Context, string, io.Reader, *FilePutOptions) (FileInfo, error) {
	return FileInfo{}, a.err
}

func (a noArtifacts) Get(context.Context, string) (io.ReadCloser, FileInfo, error) {
	return nil, FileInfo{}, a.err
}

func (a noArtifacts) List(context.Context) ([]FileInfo, error) { return nil, a.err }

var errArtifactsOutsideSession = fmt.Errorf("artifacts: %w: artifacts belong to a session; call the tool in one (sessionId, --session) or from a model turn", ErrNoSession)

// SessionState is what GetSession tells of a session.
type SessionState struct {
	Session
	CreatedAt   time.Time `json:"createdAt"`
	LastSeq     int64     `json:"lastSeq"`
	RunningTurn string    `json:"runningTurn,omitempty"`
}

// SendOptions modify Call.Send. Nil means defaults.
type SendOptions struct {
	// SessionID resumes that session instead of opening a new one.
	SessionID string
	// Key names the session on the channel instead (a pull request, a
	// thread): the first Send with a key opens a session, later ones
	// resume it. Keys are durable and per channel.
	Key string
	// Principal opens the session as someone else than the calling
	// session's principal.
	Principal string
}

// Sessions starts, reads and follows sessions; hosts provide it, as part
// of a [Backend].
type Sessions interface {
	Send(ctx context.Context, channelID, message string, opts *SendOptions) (sessionID, turnID string, err error)
	GetSession(ctx context.Context, channelID, sessionID string) (SessionState, error)
	Follow(ctx context.Context, sessionID string, after int64) iter.Seq2[Event, error]
}

var errSessionsNotConfigured = fmt.Errorf("sessions: %w: the host has no store; serve the agent with agent-sdk serve, or give host.Options.Store", ErrNotConfigured)

// Send is [Handle.Send] with one default: the new session's principal is
// this call's session's unless opts says otherwise. A tool can hand work to
// another session this way, such as a chat tool opening a session for a
// pull request.
func (c *Call) Send(ctx context.Context, channelID, message string, opts *SendOptions) (sessionID, turnID string, err error) {
	var o SendOptions
	if opts != nil {
		o = *opts
	}
	if o.Principal == "" {
		o.Principal = c.Session.Principal
	}
	return c.Handle.Send(ctx, channelID, message, &o)
}
