// Package serveflags defines the flags of serving an agent once, for the
// agent binary (package agentmain) and for the agent-sdk CLI's serve
// command, which shows them in its help and passes on the ones given.
package serveflags

import (
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
)

// Defaults. They are the serve and host packages' defaults (a test checks
// that they agree); this package repeats them so that the CLI can show
// them without linking the host.
const (
	AddrDefault               = "127.0.0.1:3000"
	MaxBodyBytesDefault       = 4 << 20
	DrainTimeoutDefault       = 30 * time.Second
	LeaseTTLDefault           = 15 * time.Second
	ApprovalWaitDefault       = 30 * time.Second
	ApprovalTimeoutDefault    = 24 * time.Hour
	LogFormatDefault          = "text"
	BodyTimeoutDefault        = 30 * time.Second
	HeaderTimeoutDefault      = 10 * time.Second
	IdleTimeoutDefault        = 120 * time.Second
	MaxConnsDefault           = 1024
	MaxStreamsDefault         = 512
	IdempotencyTTLDefault     = 24 * time.Hour
	MaxSessionsDefault        = 1000
	MaxPendingDefault         = 1000
	MaxResultBytesDefault     = 16 << 20
	ModelResultBytesDefault   = 64 << 10
	StreamWriteTimeoutDefault = 30 * time.Second
	MaxOverrunDefault         = 64
	UnauthBodyTimeoutDefault  = 5 * time.Second
	MaxUnauthBodiesDefault    = 32
	MaxEvalBatchesDefault     = 4
	MaxMessageBytesDefault    = 1 << 20
)

// Serve holds the flags of serving an agent's API.
type Serve struct {
	Addr               string
	Slug               string
	Token              string
	MaxBodyBytes       int64
	DrainTimeout       time.Duration
	LogFormat          string
	LeaseTTL           time.Duration
	ApprovalWait       time.Duration
	ApprovalTimeout    time.Duration
	Model              string
	Store              string
	BodyTimeout        time.Duration
	HeaderTimeout      time.Duration
	IdleTimeout        time.Duration
	MaxConns           int
	MaxStreams         int
	IdempotencyTTL     time.Duration
	MaxSessions        int
	MaxPending         int
	MCPOrigins         string
	PublicURL          string
	CloudToolsURL      string
	MaxResultBytes     int64
	ModelResultBytes   int
	StreamWriteTimeout time.Duration
	MaxOverrun         int
	UnauthBodyTimeout  time.Duration
	MaxUnauthBodies    int
	MaxEvalBatches     int
	MaxMessageBytes    int
	Record             string
	Replay             string
}

// Register defines the flags on fs. slugDefault is the default slug (the
// agent directory's name).
func (s *Serve) Register(fs *pflag.FlagSet, slugDefault string) {
	fs.StringVar(&s.Addr, "addr", AddrDefault, "address to listen on")
	fs.StringVar(&s.Slug, "slug", slugDefault, "URL prefix of the API: /<slug>/v1/… (default: the agent directory's name)")
	fs.StringVar(&s.Token, "token", "", "bearer token (default $AGENT_SDK_TOKEN, else generated into <state>/token)")
	fs.Int64Var(&s.MaxBodyBytes, "max-body-bytes", MaxBodyBytesDefault, "largest request body accepted")
	fs.DurationVar(&s.DrainTimeout, "drain-timeout", DrainTimeoutDefault, "how long shutdown waits for in-flight calls")
	fs.StringVar(&s.LogFormat, "log-format", LogFormatDefault, "request log format: text or json")
	fs.StringVar(&s.Model, "model", "", "model as provider/name (anthropic/…, openai/…, gemini/…), overriding agent/agent.yaml")
	fs.DurationVar(&s.LeaseTTL, "lease-ttl", LeaseTTLDefault, "how long a turn holds its session between renewals; a dead host's turns are resumed (or closed) after it")
	fs.DurationVar(&s.ApprovalWait, "approval-wait", ApprovalWaitDefault, "how long a direct call of a gated tool waits for a decision before answering 202 (0: at once)")
	fs.DurationVar(&s.ApprovalTimeout, "approval-timeout", ApprovalTimeoutDefault, "how long a gated call stays pending before it expires, unless its tool says otherwise")
	fs.DurationVar(&s.BodyTimeout, "body-timeout", BodyTimeoutDefault, "how long a request's body may take to arrive after its headers; then 408 and the connection is closed (0: no limit)")
	fs.DurationVar(&s.HeaderTimeout, "header-timeout", HeaderTimeoutDefault, "how long a request's headers may take to arrive (0: no limit)")
	fs.DurationVar(&s.IdleTimeout, "idle-timeout", IdleTimeoutDefault, "how long a keep-alive connection is kept without a request (0: no limit)")
	fs.IntVar(&s.MaxConns, "max-conns", MaxConnsDefault, "most connections open at once; at the limit a new one replaces the longest idle, else gets 503 (0: no limit; keep it under the open-file limit)")
	fs.DurationVar(&s.IdempotencyTTL, "idempotency-ttl", IdempotencyTTLDefault, "how long the answer to a request with an Idempotency-Key is kept for its retries")
	fs.IntVar(&s.MaxSessions, "max-sessions", MaxSessionsDefault, "most sessions one principal may create in an hour; more get 429 quota_exceeded (-1: no limit)")
	fs.IntVar(&s.MaxPending, "max-pending", MaxPendingDefault, "most calls one principal may have parked for approval at once; more are refused (-1: no limit)")
	fs.IntVar(&s.MaxStreams, "max-streams", MaxStreamsDefault, "most event streams (SSE subscribers) followed at once; one more gets 503 (0: no limit)")
	fs.StringVar(&s.MCPOrigins, "mcp-origins", "", "browser origins allowed on the MCP endpoint /<slug>/mcp besides loopback ones, comma-separated (scheme://host[:port]); requests without Origin are not affected")
	fs.DurationVar(&s.StreamWriteTimeout, "stream-write-timeout", StreamWriteTimeoutDefault, "how long a write of an event stream (or a streamed call) may wait for a client that stopped reading before it is cut off (0: no limit)")
	fs.IntVar(&s.MaxOverrun, "max-overrun", MaxOverrunDefault, "most handlers of one tool still running past their timeout (they ignore their context), in direct calls answered at the timeout or in sessions and model turns; then that tool's direct calls get 503 tool_overrun until one returns (0: no limit)")
	fs.DurationVar(&s.UnauthBodyTimeout, "unauth-body-timeout", UnauthBodyTimeoutDefault, "how long the body of a request admitted without the token (a signed channel route's, the playground sign-in's) may take to arrive after its headers; then 408 and the connection is closed (0: only --body-timeout)")
	fs.IntVar(&s.MaxUnauthBodies, "max-unauth-bodies", MaxUnauthBodiesDefault, "most bodies of requests admitted without the token read at once; one more gets 503 over_capacity at once, unread (0: no limit; keep it well under --max-conns)")
	fs.IntVar(&s.MaxEvalBatches, "max-eval-batches", MaxEvalBatchesDefault, "most eval batches one principal may have queued or running at once; one more gets 429 quota_exceeded (-1: no limit)")
	fs.IntVar(&s.MaxMessageBytes, "max-message-bytes", MaxMessageBytesDefault, "largest message that starts a model turn (over HTTP, a channel, an eval); a larger one gets 413 message_too_large (-1: no limit but --max-body-bytes)")
	fs.Int64Var(&s.MaxResultBytes, "max-result-bytes", MaxResultBytesDefault, "largest tool result (its JSON), unless the tool sets its own; a larger one is an isError result (-1: no limit)")
	fs.IntVar(&s.ModelResultBytes, "model-result-bytes", ModelResultBytesDefault, "most of a result a model is fed; a larger one is saved as a session artifact and the model gets a preview and read_result (-1: whole results)")
	fs.StringVar(&s.PublicURL, "public-url", "", "the host's URL as runners and browsers reach it (https://agents.example.com); cloud turns call the server tools at <public-url>/<slug>/mcp")
	fs.StringVar(&s.CloudToolsURL, "cloud-tools-url", "", "the MCP endpoint runners call the server tools at, when it is not <public-url>/<slug>/mcp")
	fs.StringVar(&s.Record, "record", "", "record each model call (the request, normalised, and the streamed answer) as a cassette <hash>.json in this directory, for --replay and modeltest.Replay")
	fs.StringVar(&s.Replay, "replay", "", "answer model calls from the cassettes --record wrote in this directory, with no provider; a request none was recorded for fails its turn with a diff against the closest")
	RegisterStore(fs, &s.Store)
}

// RegisterStore defines --store on fs.
func RegisterStore(fs *pflag.FlagSet, store *string) {
	fs.StringVar(store, "store", "", "where state is kept: a postgres:// URL, or a SQLite file (default $AGENT_SDK_STORE, else <state>/agent.db)")
}

// Names lists the flags Register defines.
var Names = []string{"addr", "slug", "token", "max-body-bytes", "drain-timeout", "log-format", "model", "lease-ttl", "approval-wait", "approval-timeout", "store",
	"body-timeout", "header-timeout", "idle-timeout", "max-conns", "max-streams", "idempotency-ttl", "max-sessions", "max-pending", "mcp-origins", "public-url", "cloud-tools-url", "max-result-bytes", "model-result-bytes", "stream-write-timeout", "max-overrun", "unauth-body-timeout", "max-unauth-bodies", "max-eval-batches", "max-message-bytes", "record", "replay"}

// dirFlags are the flags naming a directory, which Args passes on
// absolute: the agent binary runs in the agent's directory, and a
// relative path means the one the command was given in.
var dirFlags = map[string]bool{"record": true, "replay": true}

// Args returns the flags of fs that Register defined and the command line
// set, as arguments to pass on ("--name=value"); a directory (--record,
// --replay) is made absolute.
func Args(fs *pflag.FlagSet) []string {
	var args []string
	for _, name := range Names {
		if f := fs.Lookup(name); f != nil && f.Changed {
			v := f.Value.String()
			if dirFlags[name] && v != "" {
				if abs, err := filepath.Abs(v); err == nil {
					v = abs
				}
			}
			args = append(args, "--"+name+"="+v)
		}
	}
	return args
}
