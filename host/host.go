// Package host runs an agent's tools: direct calls, sessions with model
// turns, approvals that park a call until a person decides, and the
// services tools reach through call.Host. A Host is made from a
// [tool.Set] and options:
//
//	set, err := tool.Registered()
//	…
//	h, err := host.New(set, &host.Options{StateRoot: ".agent-sdk", Store: st})
//	…
//	out, err := h.CallTool(ctx, "inspect_pr", map[string]any{"prUrl": "https://github.com/acme/checkout/pull/42"}, nil)
//
// The host's parts, one concept a file set: direct calls and the one call
// builder (call.go, workspace.go); sessions and their event log (session.go,
// eventlog.go, hub.go), followed through one function (follow.go:
// Sessions.Follow, which the SSE stream, evals and channels use); the
// handle every entry point acts through (handle.go); the model turn loop
// (turn.go, history.go, on internal/turnloop); leases
// and recovery (lifecycle.go); approvals (approval.go, waiters.go); and the
// per-call services (kv.go, files.go, artifacts.go, telemetry.go);
// schedules and reminders (schedules.go, reminders.go). Work that is a
// client of sessions runs in packages of its own, as a [Subsystem]
// registered before Start (subsystem.go): package evals, eval batches.
// Every error a caller can act on is an [*api.Error] with its code
// (errors.go).
package host

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"github.com/agentsdk/agentsdk/internal/harness"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-github/v88/github"
	"github.com/slack-go/slack"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/schedule"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/tool"
)

// Options configure a [Host]. StateRoot is required; the rest have
// defaults.
type Options struct {
	// Runtime is the runtime of new sessions that name none: "" or
	// harness.Native for the host's model loop, else a key of Harnesses.
	Runtime string
	// Harnesses are the harnesses sessions may run on, by runtime name
	// (agent.yaml's harnesses, with the built-in claude-code, codex and
	// gemini).
	Harnesses map[string]harness.Spec
	// StateRoot is the agent's durable state directory. Direct calls made
	// outside a session work in scratch directories under
	// <StateRoot>/tool-calls; sessions in <StateRoot>/sessions/<id>.
	StateRoot string
	// Logger receives the host's logs, including handler panics with their
	// stacks. Nil discards them.
	Logger *slog.Logger

	// Store holds sessions, turns, events, approvals, KV entries and file
	// metadata. Nil: an in-memory store (package store/memory), which
	// loses everything when the process ends; serve agents with a durable
	// one (store/sqlite).
	Store store.Store
	// Model answers model turns. Nil: every model turn fails, with
	// ModelError (default model.ErrNotConfigured) as the reason.
	Model      model.Provider
	ModelError error
	// ModelConfig names Model: its provider and name label each call's
	// usage and find its price (its key is not read here).
	ModelConfig model.Config
	// Prices are added to the shipped price table (model.DefaultPrices),
	// replacing entries of the same name: agent.yaml's pricing:.
	Prices model.Prices
	// Limits bound what model turns spend, per turn, session and
	// principal per day (agent.yaml's limits:); zero, no bounds.
	Limits UsageLimits
	// Compaction keeps model turns within the model's context window
	// (agent.yaml's compaction: and model.contextWindow).
	Compaction CompactionOptions
	// MaxMessageBytes bounds a message that starts a turn: a longer one
	// is refused, message_too_large (413). Zero means
	// MaxMessageBytesDefault (1 MiB); negative, no bound.
	MaxMessageBytes int
	// System is the system prompt of model turns.
	System string
	// MaxTokens bounds each model answer; zero means
	// model.MaxTokensDefault.
	MaxTokens int
	// MaxSteps bounds the model calls of one turn; zero means
	// MaxStepsDefault.
	MaxSteps int
	// ToolConcurrency bounds the tool calls one turn runs at once; zero
	// means ToolConcurrencyDefault.
	ToolConcurrency int
	// ModelTimeout bounds each model call, its retries included; zero
	// means ModelTimeoutDefault.
	ModelTimeout time.Duration
	// ModelRetries bounds the retries of a model call that failed in a
	// way worth retrying (a rate limit, an overload, a reset connection),
	// with backoff or after the wait the provider asks for
	// (internal/turnloop). Zero means ModelRetriesDefault; negative, none.
	ModelRetries int
	// MaxResumes bounds how many times a model turn whose host died is
	// resumed by the host that finds its lease expired (see
	// [Host.Start]); a turn whose host dies once more fails with
	// resume_limit. Zero means MaxResumesDefault; negative, never (the
	// turn fails as interrupted).
	MaxResumes int
	// LeaseTTL is how long a turn holds its session without renewing the
	// lease: after a host dies, its turns are resumed (or closed) within
	// about this long. Zero means LeaseTTLDefault.
	LeaseTTL time.Duration
	// ApprovalTimeout is how long a gated call waits for a decision before
	// it expires, unless its tool says otherwise; zero means
	// ApprovalTimeoutDefault.
	ApprovalTimeout time.Duration
	// Namespace separates this agent's KV entries and files from other
	// agents' in a shared store; default "agent".
	Namespace string
	// MaxFileBytes bounds one file of call.Host.Files and artifacts; zero
	// means MaxFileBytesDefault.
	MaxFileBytes int64
	// MaxSessions bounds the sessions one principal may create in an hour
	// (each has a workspace on disk); a create over it is refused with
	// quota_exceeded (429). Zero means MaxSessionsDefault; negative, no
	// bound.
	MaxSessions int
	// MaxPending bounds the calls one principal may have parked at once,
	// waiting for a decision; a call over it is refused (a direct call with
	// quota_exceeded, a model's call with an isError result). Zero means
	// MaxPendingDefault; negative, no bound.
	MaxPending int
	// ChannelUsers maps a channel's users to principals and roles, for
	// the approver policies of tools (tool.Config.Approval): the key is
	// "<channel>:<user>" ("slack:U123", as decisions record it), from
	// agent.yaml's auth.slack. A user it does not name decides as
	// "<channel>:<user>" with no roles.
	ChannelUsers map[string]ChannelUser
	// MCP is call.Host.MCP (see package mcpconn); nil: not configured. If
	// it is an io.Closer, Close closes it.
	MCP tool.MCP
	// TracerProvider and MeterProvider receive the spans of turns, model
	// calls and tool calls (invoke_agent, chat and execute_tool, after the
	// OpenTelemetry GenAI semantic conventions), the GenAI client metrics
	// (gen_ai.client.token.usage, gen_ai.client.operation.duration), the
	// host's own (agent.tool.calls, agent.tool.duration, agent.turns), and
	// the tools' own metrics. Nil: no-op, at no cost.
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	// Telemetry names the agent and its model on those spans and metrics,
	// and says whether the spans carry the content of the conversation.
	Telemetry TelemetryOptions
	// Cloud configures cloud sessions, whose model turns run on runners
	// (see Runners).
	Cloud CloudOptions
	// Channels are the agent's channels (channel.Registered): their
	// onStart hooks run here, their routes are mounted by package serve.
	Channels []*channel.Channel
	// Schedules are the agent's schedules (schedule.Registered). They tick
	// on a store that runs durable jobs, from Start on.
	Schedules []*schedule.Schedule
	// Slack is the Slack client tools reach with platform.Slack(call.Host)
	// (and what call.Host.SlackNudges posts with); nil: not configured.
	Slack *slack.Client
	// GitHub is the GitHub client tools reach with
	// platform.GitHub(call.Host); nil: not configured.
	GitHub *github.Client
	// MaxResultBytes caps a tool's result (its JSON) unless the tool sets
	// its own cap; over it the call is an isError result saying the limit
	// and the size. Zero means tool.MaxResultBytesDefault; negative, none.
	MaxResultBytes int64
	// ModelResultBytes is the most of a result a model is fed: a larger
	// result of a model's call is saved as an artifact of the session
	// (results/<callId>.txt) and the model gets a preview, the size and the
	// artifact's name, and the read_result tool to read or search it.
	// Direct callers still get the whole result. Zero means
	// ModelResultBytesDefault; negative, no budget.
	ModelResultBytes int
	// AuditKey, if set, signs every entry the host appends to the audit
	// log (the entry's hash, ed25519), so that an export can be checked
	// against its public key offline. See [LoadAuditKey].
	AuditKey ed25519.PrivateKey
}

// CloudOptions configure cloud sessions.
type CloudOptions struct {
	// DefaultMode is the mode of a session created without one; "" means
	// api.ModeLocal.
	DefaultMode api.Mode
	// ToolsURL is the MCP endpoint at which runners call the server tools
	// (serve --public-url or --cloud-tools-url). Empty: the host warns at
	// Start, and cloud turns are offered the agent tools only.
	ToolsURL string
	// Model names the model runners use; its credentials are the
	// runners' own (the APIKey is never sent).
	Model model.Config
}

// Defaults of [Options].
const (
	ModelResultBytesDefault = 64 << 10
	MaxSessionsDefault      = 1_000
	MaxPendingDefault       = 1_000
	MaxStepsDefault         = 16
	ToolConcurrencyDefault  = 4
	ModelTimeoutDefault     = 5 * time.Minute
	ModelRetriesDefault     = 3
	MaxResumesDefault       = 2
	LeaseTTLDefault         = 15 * time.Second
	ApprovalTimeoutDefault  = 24 * time.Hour
	MaxFileBytesDefault     = 256 << 20
	NamespaceDefault        = "agent"
)

// withDefaults returns the options with every zero value replaced by its
// default.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Store == nil {
		o.Store = memory.New()
	}
	if o.Telemetry.Provider == "" && o.Telemetry.Model == "" {
		o.Telemetry.Provider, o.Telemetry.Model = o.ModelConfig.Provider, o.ModelConfig.Name
	}
	if o.ModelError == nil {
		o.ModelError = model.ErrNotConfigured
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = model.MaxTokensDefault
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = MaxStepsDefault
	}
	if o.ToolConcurrency == 0 {
		o.ToolConcurrency = ToolConcurrencyDefault
	}
	if o.ModelTimeout == 0 {
		o.ModelTimeout = ModelTimeoutDefault
	}
	switch {
	case o.ModelRetries == 0:
		o.ModelRetries = ModelRetriesDefault
	case o.ModelRetries < 0:
		o.ModelRetries = 0
	}
	switch {
	case o.MaxResumes == 0:
		o.MaxResumes = MaxResumesDefault
	case o.MaxResumes < 0:
		o.MaxResumes = 0
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = LeaseTTLDefault
	}
	if o.ApprovalTimeout == 0 {
		o.ApprovalTimeout = ApprovalTimeoutDefault
	}
	if o.Namespace == "" {
		o.Namespace = NamespaceDefault
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = MaxSessionsDefault
	}
	if o.MaxResultBytes == 0 {
		o.MaxResultBytes = tool.MaxResultBytesDefault
	}
	if o.ModelResultBytes == 0 {
		o.ModelResultBytes = ModelResultBytesDefault
	}
	if o.MaxPending == 0 {
		o.MaxPending = MaxPendingDefault
	}
	if o.MaxFileBytes == 0 {
		o.MaxFileBytes = MaxFileBytesDefault
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = MaxMessageBytesDefault
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.StateRoot == "":
		return errors.New("Options.StateRoot is required")
	case o.MaxTokens < 0 || o.MaxSteps < 0 || o.ToolConcurrency < 0 || o.ModelTimeout < 0 || o.LeaseTTL < 0 || o.ApprovalTimeout < 0 || o.MaxFileBytes < 0:
		return errors.New("MaxTokens, MaxSteps, ToolConcurrency, ModelTimeout, LeaseTTL, ApprovalTimeout and MaxFileBytes cannot be negative")
	}
	return nil
}

// Host runs calls of the tools in a set, sessions and their model turns,
// and approvals. It is safe for concurrent use.
type Host struct {
	harnessTurns  harnessTurns                   // the harness turns running here (harness.go)
	harnessMCP    atomic.Pointer[harnessMCPFunc] // SetHarnessMCP's
	limits        limiter                        // per-tool MaxConcurrent and Exclusive (limits.go)
	builtinReader *tool.Tool                     // read_result for models (budget.go); nil without a budget
	prices        model.Prices                   // the shipped table with Options.Prices over it
	raiser        *tool.Tool                     // the approval that raises a usage limit (spendlimits.go)
	armed         sync.Map                       // reminder ids with a timer here (reminders.go)
	hooks         hooks                          // sessions' hooks set by subsystems (intercept.go)
	channels      map[string]*channel.Channel
	schedules     map[string]*schedule.Schedule
	cloudReady    cloudReady // wakes runners' claims waiting here (cloud.go)
	tools         *tool.Set
	opts          Options // with defaults, StateRoot absolute
	logger        *slog.Logger
	log           *eventLog // the store; every event appended is published
	services      tool.Services
	direct        tool.Services // services of a call outside any session
	telemetry     *telemetry
	leases        *leases
	waiters       waiters

	ctx  context.Context // ends when the host closes
	stop context.CancelCauseFunc
	wg   sync.WaitGroup
	// stopJobs stops the job worker, if Start started one.
	stopJobs func(context.Context) error

	subsMu     sync.Mutex
	started    bool        // Start has begun: no more subsystems
	subsystems []Subsystem // registered before Start (subsystem.go)
}

// New returns a Host for the tools in set.
func New(set *tool.Set, opts *Options) (*Host, error) {
	if set == nil {
		return nil, errors.New("creating host: the tool set is nil")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	o = o.withDefaults()
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("creating host: %w", err)
	}
	root, err := filepath.Abs(o.StateRoot)
	if err != nil {
		return nil, fmt.Errorf("creating host: resolving state root: %w", err)
	}
	o.StateRoot = root
	tel := newTelemetry(o.TracerProvider, o.MeterProvider, o.Telemetry)
	o.Model = tel.model(o.Model) // a chat span per model call
	ctx, stop := context.WithCancelCause(context.Background())
	h := &Host{
		tools: set, opts: o, logger: o.Logger,
		log:       newEventLog(o.Store),
		telemetry: tel,
		leases:    newLeases(o.LeaseTTL, home(root)),
		ctx:       ctx, stop: stop,
	}
	h.services = tool.Services{
		KV:        kvService{store: o.Store, ns: o.Namespace},
		Files:     h.files("files", o.Namespace),
		MCP:       o.MCP,
		Platforms: platforms(o.Slack, o.GitHub),
	}
	if o.Slack != nil {
		h.services.SlackNudges = nudges{h: h, slack: o.Slack}
	}
	h.direct = h.services
	h.direct.Otel = otelService{h: h}
	h.builtinReader = h.readResult()
	h.prices = o.prices()
	h.raiser = newRaiser()
	if err := h.checkLimits(); err != nil {
		return nil, fmt.Errorf("creating host: %w", err)
	}
	if h.channels, err = byName(o.Channels, (*channel.Channel).ID); err != nil {
		return nil, fmt.Errorf("creating host: channels: %w", err)
	}
	if h.schedules, err = byName(o.Schedules, (*schedule.Schedule).Name); err != nil {
		return nil, fmt.Errorf("creating host: schedules: %w", err)
	}
	return h, nil
}

// platforms is call.Host.Platforms: the clients given, under the keys
// package platform reads (nil when neither is).
func platforms(sc *slack.Client, gc *github.Client) map[string]any {
	m := map[string]any{}
	if sc != nil {
		m[tool.PlatformSlack] = sc
	}
	if gc != nil {
		m[tool.PlatformGitHub] = gc
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// byName indexes definitions by name, refusing nil ones and duplicates.
func byName[T comparable](defs []T, name func(T) string) (map[string]T, error) {
	var zero T
	m := make(map[string]T, len(defs))
	for _, d := range defs {
		if d == zero {
			return nil, errors.New("a nil definition")
		}
		if _, dup := m[name(d)]; dup {
			return nil, fmt.Errorf("%q is defined twice", name(d))
		}
		m[name(d)] = d
	}
	return m, nil
}

// home names where this host keeps its sessions' workspaces: the machine
// and the state root. A host restarted in place keeps its home; a session
// whose turn runs on another home has its workspace made afresh there.
func home(root string) string {
	name, err := os.Hostname()
	if err != nil {
		name = "localhost"
	}
	return name + ":" + root
}

// Idempotency returns where the host keeps the first answers to requests
// made with an Idempotency-Key (the agent's store): serve's idempotent
// retries.
func (h *Host) Idempotency() store.Idempotency { return h.log.Store }

// Tools returns the host's tools.
func (h *Host) Tools() *tool.Set { return h.tools }
