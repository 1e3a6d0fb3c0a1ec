package agentmain

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/agentsdk/agentsdk/agentconfig"
	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/evals"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/command"
	"github.com/agentsdk/agentsdk/internal/logwriter"
	"github.com/agentsdk/agentsdk/internal/serveflags"
	"github.com/agentsdk/agentsdk/internal/textlog"
	"github.com/agentsdk/agentsdk/internal/token"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/slackbot"
	"github.com/agentsdk/agentsdk/tool"
)

// stateDefault is the state directory, relative to the agent directory.
const stateDefault = ".agent-sdk"

// dbFile is the SQLite store's file in the state directory.
const dbFile = "agent.db"

func mainServe(ctx context.Context, set *tool.Set, args []string, stdio Stdio, o Options) int {
	// The request log and everything else on stderr is written by a
	// goroutine of its own, in order, off the requests' path: a busy host
	// writes many lines a syscall (bench/load: ~2 µs a request saved).
	// A host allocates a few KiB a request and keeps little: collecting
	// at twice the live heap (not the runtime's 100%) halves the GC's
	// cycles for a few MiB of memory (bench/load: cpu/req 1.8-2.0x the
	// bare handler's → 1.6x at c=32, peak RSS 31 → 35 MiB). GOGC set in
	// the environment wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	errOut := logwriter.New(stdio.Err)
	defer errOut.Close()
	stdio.Err = errOut
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stdio.Err)
	cwd, _ := os.Getwd()
	var f serveflags.Serve
	f.Register(fs, filepath.Base(cwd))
	state := fs.String("state", stateDefault, "state directory")
	configPath := fs.String("config", filepath.Join("agent", "agent.yaml"), "agent configuration file")
	listenFD := fs.Int("listen-fd", 0, "serve on this inherited listening socket (agent-sdk serve --watch)")
	readyFD := fs.Int("ready-fd", 0, "write a line to this inherited pipe once serving (agent-sdk serve --watch)")
	parentFD := fs.Int("parent-fd", 0, "drain and exit when this inherited pipe closes (agent-sdk serve --watch)")
	for _, name := range []string{"listen-fd", "ready-fd", "parent-fd"} {
		fs.MarkHidden(name)
	}
	if err := fs.Parse(args); err != nil {
		return command.ExitRefused
	}
	ho, err := openHandover(*listenFD, *readyFD, *parentFD)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	ctx, stopOrphan := ho.orphaned(ctx)
	defer stopOrphan()
	logger, err := newLogger(f.LogFormat, stdio)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	setMemoryLimit(logger)
	go returnIdleMemory(ctx, logger)
	stateDir, err := filepath.Abs(*state)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	secret, src, err := token.Ensure(f.Token, stateDir)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	if src == token.FromGenerated {
		fmt.Fprintf(stdio.Err, "generated an API token and stored it in %s (mode 0600):\n  %s\nread it again with: cat %s\n", token.File(stateDir), secret, token.File(stateDir))
	}
	st, err := o.openStore(ctx, f.Store, stateDir)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	defer st.Close()
	opts, bot, err := hostOptionsFor(*configPath, f.Model, logger, stdio, o, hostUse{serving: true, replaying: f.Replay != ""})
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	if err := recordReplay(opts, f.Record, f.Replay, stdio.Err); err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	opts.StateRoot, opts.Logger, opts.Store, opts.LeaseTTL, opts.ApprovalTimeout = stateDir, logger, st, f.LeaseTTL, f.ApprovalTimeout
	opts.MaxSessions, opts.MaxPending = f.MaxSessions, f.MaxPending
	opts.MaxResultBytes, opts.ModelResultBytes = f.MaxResultBytes, f.ModelResultBytes
	opts.MaxMessageBytes = f.MaxMessageBytes
	opts.Telemetry.AgentName = f.Slug
	if opts.AuditKey, err = host.LoadAuditKey(host.AuditKeyFile(stateDir)); err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	if opts.Cloud.ToolsURL, err = cloudToolsURL(f.PublicURL, f.CloudToolsURL, f.Slug); err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	stopExport, err := o.export(ctx, f.Slug, opts, stdio)
	if err != nil {
		fmt.Fprintln(stdio.Err, "setting up OpenTelemetry export:", err)
		return command.ExitFailure
	}
	defer stopExport(context.WithoutCancel(ctx))
	h, err := host.New(set, opts)
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	ev, err := evals.New(h, &evals.Options{Logger: logger, MaxRunningBatches: f.MaxEvalBatches})
	if err != nil {
		h.Close()
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	if err := h.Start(ctx); err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	defer h.Close()
	if bot != nil {
		bot.Attach(ctx, h.Handle())
	}
	auth, err := agentconfig.Load(*configPath) // read by hostOptionsFor: it loads
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	if auth.Auth.OIDC != nil && f.PublicURL == "" {
		logger.Warn("auth.oidc without --public-url: the MCP endpoint takes tokens for the API's audience only, and is no OAuth resource server (no protected-resource metadata for MCP clients to sign in with)")
	}
	wait := f.ApprovalWait
	if wait == 0 {
		wait = -1 // answer at once
	}
	srv, err := serve.New(h, &serve.Options{Slug: f.Slug, Token: secret, MaxBodyBytes: f.MaxBodyBytes, Logger: logger, ApprovalWait: wait,
		BodyTimeout: noLimit(f.BodyTimeout), MaxStreams: noLimit(f.MaxStreams), StreamWriteTimeout: noLimit(f.StreamWriteTimeout), MaxOverrun: noLimit(f.MaxOverrun),
		UnauthBodyTimeout: noLimit(f.UnauthBodyTimeout), MaxUnauthBodies: noLimit(f.MaxUnauthBodies), IdempotencyTTL: f.IdempotencyTTL, MCPOrigins: append(splitList(f.MCPOrigins), originOf(f.PublicURL)...),
		Roles: auth.Auth.Permissions(), Evals: ev, OIDC: oidcOptions(auth.Auth.OIDC), PublicURL: f.PublicURL})
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitRefused
	}
	err = serve.ListenAndServe(ctx, f.Addr, srv, &serve.ListenOptions{
		DrainTimeout:  f.DrainTimeout,
		Logger:        logger,
		HeaderTimeout: noLimit(f.HeaderTimeout),
		IdleTimeout:   noLimit(f.IdleTimeout),
		MaxConns:      noLimit(f.MaxConns),
		Listener:      ho.listener,
		OnListen: func(a net.Addr) {
			fmt.Fprintf(stdio.Err, "serving %s at http://%s/%s/v1 (tools: %s; MCP: http://%s/%s/mcp)\n", f.Slug, a, f.Slug, strings.Join(set.Names(), ", "), a, f.Slug)
			ho.serving()
		},
	})
	if err != nil {
		fmt.Fprintln(stdio.Err, err)
		return command.ExitFailure
	}
	if ho.handedOver() {
		finishTurns(h, f.DrainTimeout, logger)
	}
	return command.ExitOK
}

// noLimit turns a limit flag's 0 ("no limit") into the serve package's
// negative; the serve package takes zero as its default.
func noLimit[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// setMemoryLimit sets the Go runtime's soft memory limit from the
// machine (memoryLimit) unless GOMEMLIMIT is set (the runtime reads that
// itself; GOMEMLIMIT=off turns the limit off), and logs it once.
func setMemoryLimit(logger *slog.Logger) {
	if v := os.Getenv("GOMEMLIMIT"); v != "" {
		logger.Info("the Go memory limit is GOMEMLIMIT's", "GOMEMLIMIT", v)
		return
	}
	limit, from := memoryLimit(os.DirFS("/"))
	if limit <= 0 {
		logger.Info("no Go memory limit: neither the cgroup's memory limit nor physical memory could be read; set GOMEMLIMIT")
		return
	}
	debug.SetMemoryLimit(limit)
	logger.Info("set the Go memory limit", "limit", formatBytes(limit), "share", memLimitShare, "of", from, "override", "GOMEMLIMIT")
}

// newLogger returns the request and host logger, writing to stderr in the
// format of --log-format.
func newLogger(format string, stdio Stdio) (*slog.Logger, error) {
	switch format {
	case "text":
		// slog's text format, the request line formatted without slog's
		// general path; stdio.Err is a logwriter.Writer, safe for
		// concurrent whole-line writes.
		return slog.New(textlog.New(stdio.Err)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stdio.Err, nil)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

// hostOptions reads agent.yaml and the --model flag into host options,
// opening the model provider and the MCP connections. A provider that
// cannot be opened is not fatal: the host serves tools, and model turns
// fail saying why.
func hostOptions(configPath, modelFlag string, logger *slog.Logger, stdio Stdio, o Options) (*host.Options, *slackbot.Bot, error) {
	return hostOptionsFor(configPath, modelFlag, logger, stdio, o, hostUse{serving: true})
}

// hostUse is what a host is made for, beyond its options.
type hostUse struct {
	serving   bool // it serves channels (false: a direct call's host, see platformsFor)
	replaying bool // --replay answers its model calls: the provider needs no key
}

// hostOptionsFor is hostOptions for a host made for use.
func hostOptionsFor(configPath, modelFlag string, logger *slog.Logger, stdio Stdio, o Options, use hostUse) (*host.Options, *slackbot.Bot, error) {
	cfg, err := agentconfig.Load(configPath)
	if err != nil {
		return nil, nil, err
	}
	yamlProvider := cfg.Model.Provider
	if modelFlag != "" {
		m, err := model.ParseName(modelFlag)
		if err != nil {
			return nil, nil, err
		}
		cfg.Model.Provider, cfg.Model.Name = m.Provider, m.Name
	}
	opts := &host.Options{
		System: cfg.System, MaxSteps: cfg.MaxSteps, ToolConcurrency: cfg.ToolConcurrency,
		ModelTimeout: time.Duration(cfg.ModelTimeout), MaxTokens: cfg.Model.MaxTokens, ModelRetries: zeroIsNone(cfg.ModelRetries), MaxResumes: zeroIsNone(cfg.MaxResumes),
		Cloud:    host.CloudOptions{DefaultMode: api.Mode(cfg.Mode), Model: cfg.Model},
		Channels: o.channels, Schedules: o.schedules,
		ModelConfig: cfg.Model, Limits: usageLimits(cfg.Limits),
		Telemetry: host.TelemetryOptions{CaptureContent: cfg.Telemetry.ContentCaptured()},
	}
	for id, u := range cfg.Auth.ChannelUsers() {
		if opts.ChannelUsers == nil {
			opts.ChannelUsers = map[string]host.ChannelUser{}
		}
		opts.ChannelUsers[id] = host.ChannelUser{Principal: u.Principal, Roles: u.Roles}
	}
	if opts.Prices, err = cfg.Prices(); err != nil {
		return nil, nil, err
	}
	if opts.Harnesses, err = harnessSpecs(cfg); err != nil {
		return nil, nil, err
	}
	opts.Runtime = cfg.Runtime
	if opts.MCP, err = o.mcp(cfg, configPath, logger); err != nil {
		return nil, nil, err
	}
	bot, err := platformsFor(cfg, configPath, opts, logger, use.serving)
	if err != nil {
		return nil, nil, err
	}
	open := openModel
	if use.replaying {
		open = model.Open
	}
	p, err := open(cfg.Model)
	if err != nil {
		if cfg.Model.Provider != "" {
			fmt.Fprintf(stdio.Err, "model turns will fail: %v\n", err)
		}
		opts.ModelError = err
	} else {
		opts.Model = p
	}
	if opts.Compaction, err = compactionOptions(cfg.Compaction, yamlProvider, cfg.Model, opts.Model != nil, stdio.Err); err != nil {
		return nil, nil, err
	}
	return opts, bot, nil
}

// usageLimits are agent.yaml's limits: as the host takes them.
func usageLimits(l agentconfig.Limits) host.UsageLimits {
	one := func(l agentconfig.Limit) host.UsageLimit {
		return host.UsageLimit{Tokens: l.Tokens, Cost: model.Micros(l.USD)}
	}
	return host.UsageLimits{Turn: one(l.Turn), Session: one(l.Session), PrincipalDaily: one(l.PrincipalDaily), OnExceed: host.OnExceed(l.OnExceed)}
}

// zeroIsNone is a count of agent.yaml's (modelRetries, maxResumes) as
// host.Options takes it: absent, the default (0); 0, none (negative).
func zeroIsNone(n *int) int {
	switch {
	case n == nil:
		return 0
	case *n == 0:
		return -1
	}
	return *n
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// cloudToolsURL is the MCP endpoint runners call the server tools at:
// --cloud-tools-url, else <--public-url>/<slug>/mcp, else none.
func cloudToolsURL(public, tools, slug string) (string, error) {
	for flag, v := range map[string]string{"--public-url": public, "--cloud-tools-url": tools} {
		if v == "" {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("%s %q: want an http(s) URL such as https://agents.example.com", flag, v)
		}
	}
	switch {
	case tools != "":
		return tools, nil
	case public != "":
		return strings.TrimSuffix(public, "/") + "/" + slug + "/mcp", nil
	}
	return "", nil
}

// originOf returns the origin of --public-url (browsers loading pages
// from it may use the MCP endpoint), if set.
func originOf(public string) []string {
	u, err := url.Parse(public)
	if public == "" || err != nil || u.Host == "" {
		return nil
	}
	return []string{u.Scheme + "://" + u.Host}
}

// oidcOptions are serve's options for agent.yaml's auth.oidc; nil
// without it.
func oidcOptions(o *agentconfig.OIDC) *serve.OIDCOptions {
	if o == nil {
		return nil
	}
	return &serve.OIDCOptions{Issuer: o.Issuer, Audience: o.Audience, RolesClaim: o.RolesClaim, ClientID: o.ClientID}
}
