// Package agentconfig reads an agent's agent/agent.yaml: the model, the
// system prompt, the limits of model turns, the MCP servers its tools
// reach and what telemetry export to build in. The agent binary (package
// agentmain) and the agent-sdk CLI read it; package mcpconn connects to
// the servers it names.
package agentconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentsdk/agentsdk/model"
)

// Config is agent/agent.yaml.
//
//	model:
//	  provider: anthropic          # or openai (also Ollama, vLLM, llama.cpp via baseURL / OPENAI_BASE_URL), or gemini
//	  name: claude-sonnet-4-5
//	  maxTokens: 4096
//	  thinking: {budgetTokens: 8000} # Anthropic extended thinking (1024 or more)
//	  reasoningEffort: medium        # OpenAI reasoning models: minimal, low, medium or high
//	  contextWindow: 200000          # tokens; default: the shipped table's (model.DefaultWindows)
//	system: You review pull requests.
//	maxSteps: 16
//	toolConcurrency: 4
//	modelTimeout: 5m   # each model call, its retries included
//	modelRetries: 3    # retries of a rate-limited or overloaded model call (0 to 10)
//	maxResumes: 2      # resumptions of a turn whose host died (0 to 10; 0: never)
//	pricing:                       # dollars per million tokens, over the shipped table
//	  my-model: {input: 3, output: 15}
//	limits:                        # per turn, session, principal per day
//	  session: {usd: 5}
//	  onExceed: approve            # or fail
//	compaction:                    # past 0.8 of the window, old turns are summarised
//	  threshold: 0.8
//	  model: claude-haiku-4-5      # the summaries' model (default: the agent's)
//	runtime: claude-code           # new sessions' turns run by a harness (default: native)
//	harnesses:                     # how to run each (see Harness)
//	  claude-code: {permissions: {allow: [read, search]}}
type Config struct {
	Model           model.Config         `yaml:"model"`
	MCP             map[string]MCPServer `yaml:"mcp"`
	Telemetry       Telemetry            `yaml:"telemetry"`
	System          string               `yaml:"system"`
	MaxSteps        int                  `yaml:"maxSteps"`
	ToolConcurrency int                  `yaml:"toolConcurrency"`
	ModelTimeout    Duration             `yaml:"modelTimeout"`
	// ModelRetries bounds the retries of a model call that was rate
	// limited or met an overloaded provider; nil: the host's default (3).
	ModelRetries *int `yaml:"modelRetries"`
	// MaxResumes bounds how many times a model turn whose host died is
	// resumed by another (or the restarted) host; nil: the host's default
	// (2), 0: never (it fails as interrupted).
	MaxResumes *int `yaml:"maxResumes"`
	// Mode is where a new session's turns run unless it says: local (in
	// the host, the default) or cloud (on a runner, agent-sdk runner).
	Mode string `yaml:"mode"`
	// Slack enables the built-in slack channel and a tool's
	// platform.Slack(call.Host).
	Slack *Slack `yaml:"slack"`
	// GitHub configures a tool's platform.GitHub(call.Host).
	GitHub *GitHub `yaml:"github"`
	// Pricing adds to and overrides the shipped price table
	// (model.DefaultPrices), by model name.
	Pricing map[string]Price `yaml:"pricing"`
	// Limits bound what model turns spend.
	Limits Limits `yaml:"limits"`
	// Compaction keeps model turns within the model's context window.
	Compaction Compaction `yaml:"compaction"`
	// Auth configures who may do what on the host: its roles.
	Auth Auth `yaml:"auth"`
	// Runtime is what runs a new session's turns unless it says: native
	// (the host's model loop, the default), claude-code, codex, gemini, or
	// a name under Harnesses.
	Runtime string `yaml:"runtime"`
	// Harnesses configure the coding-agent harnesses sessions may run on,
	// by runtime name: the built-in claude-code, codex and gemini, and any
	// other ACP agent (with a command).
	Harnesses map[string]Harness `yaml:"harnesses"`
}

// Harness is how to run one harness (see README, Harness turns).
//
//	harnesses:
//	  claude-code:
//	    model: claude-sonnet-4-6
//	    permissions: {allow: [read, search], ask: [edit, execute], deny: ["execute:rm -rf*"]}
//	  my-agent: {command: /usr/local/bin/my-agent, args: [--acp], env: {MODE: ci}}
type Harness struct {
	// Command and Args start it; for claude-code, codex and gemini an
	// empty command is the npm package's program on PATH.
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	// Env is added to its environment.
	Env map[string]string `yaml:"env"`
	// Model is its model, "" for its default.
	Model string `yaml:"model"`
	// Permissions answer its permission requests without a person: ACP
	// tool kinds (read, edit, delete, move, search, execute, think, fetch,
	// switch_mode, other) or kind:glob over what it shows (the command,
	// the file). Deny first, then allow; the rest is asked.
	Permissions HarnessPermissions `yaml:"permissions"`
	// HangTimeout is how long a prompted harness may send nothing (time it
	// waits for a person or for the agent's own tools aside) before its
	// turn fails as hung: "" for 30m, a negative duration never.
	HangTimeout Duration `yaml:"hangTimeout"`
}

// HarnessPermissions is a harness's permissions policy.
type HarnessPermissions struct {
	Allow []string `yaml:"allow"`
	Ask   []string `yaml:"ask"`
	Deny  []string `yaml:"deny"`
	// Always names what, once allowed (by allow or by a person), is
	// answered "allow always" where the harness offers it, so it does not
	// ask again in its session; everything else is allowed once.
	Always []string `yaml:"always"`
}

// BuiltinHarnesses are the harnesses the SDK runs without a command.
var BuiltinHarnesses = []string{"claude-code", "codex", "gemini"}

// validateRuntime checks runtime: and harnesses:.
func (c Config) validateRuntime() error {
	for name, h := range c.Harnesses {
		if name == "native" || name == "" || strings.ContainsAny(name, " /\\") {
			return fmt.Errorf("harnesses.%s: not a name a runtime can have", name)
		}
		if h.Command == "" && !slices.Contains(BuiltinHarnesses, name) {
			return fmt.Errorf("harnesses.%s: command is required (the program that speaks ACP on stdio); claude-code, codex and gemini need none", name)
		}
	}
	if c.Runtime == "" || c.Runtime == "native" || slices.Contains(BuiltinHarnesses, c.Runtime) {
		return nil
	}
	if _, ok := c.Harnesses[c.Runtime]; !ok {
		names := append([]string{"native"}, BuiltinHarnesses...)
		for n := range c.Harnesses {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
		return fmt.Errorf("runtime %q: want one of %s", c.Runtime, strings.Join(names, ", "))
	}
	return nil
}

// Slack configures the built-in slack channel (Events API and
// interactivity at /<slug>/channels/slack/…), platform.Slack(call.Host)
// and call.Host.SlackNudges. Secrets come from the environment, never from
// the file: the variables are named here.
//
//	slack:
//	  botTokenEnv: SLACK_BOT_TOKEN          # the default
//	  signingSecretEnv: SLACK_SIGNING_SECRET # the default
//	  apiURL: https://slack.com/api/         # the default; a proxy or a test server
//	  approvals:
//	    channel: C0123456789   # also post a card here for every parked call (optional)
//	    allow: [U012AB3CD, S0614TZR7] # who may decide: users or user groups (optional: anyone)
type Slack struct {
	BotTokenEnv      string         `yaml:"botTokenEnv"`
	SigningSecretEnv string         `yaml:"signingSecretEnv"`
	APIURL           string         `yaml:"apiURL"`
	Approvals        SlackApprovals `yaml:"approvals"`
}

// SlackApprovals configures approval cards.
type SlackApprovals struct {
	Channel string   `yaml:"channel"`
	Allow   []string `yaml:"allow"`
}

// GitHub configures platform.GitHub(call.Host): a token, or a GitHub App
// installation (whose installation tokens are made from the app's key and
// refreshed before they expire).
//
//	github:
//	  tokenEnv: GITHUB_TOKEN     # the default, when app: is not given
//	  app: {id: 123456, installationId: 7890123, privateKeyEnv: GITHUB_APP_PRIVATE_KEY}
//	  baseURL: https://github.example.com/api/v3/   # GitHub Enterprise Server (optional)
type GitHub struct {
	TokenEnv string     `yaml:"tokenEnv"`
	App      *GitHubApp `yaml:"app"`
	BaseURL  string     `yaml:"baseURL"`
}

// GitHubApp is a GitHub App installation.
type GitHubApp struct {
	ID             int64  `yaml:"id"`
	InstallationID int64  `yaml:"installationId"`
	PrivateKeyEnv  string `yaml:"privateKeyEnv"`
}

// Telemetry chooses what is built in for OpenTelemetry export, and what
// the spans carry.
//
//	telemetry: {otlp: true, captureContent: true}
type Telemetry struct {
	// OTLP builds in the OTLP/HTTP exporter, used when the standard
	// OTEL_EXPORTER_OTLP_* variables are set at run time.
	OTLP bool `yaml:"otlp"`
	// CaptureContent records prompts, answers, tool inputs and results on
	// the GenAI spans (host.TelemetryOptions.CaptureContent); so does
	// OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true at run time.
	CaptureContent bool `yaml:"captureContent"`
}

// CaptureContentEnvVar is the variable OpenTelemetry's GenAI
// instrumentations read to record message content.
const CaptureContentEnvVar = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

// ContentCaptured reports whether the spans record message content:
// agent.yaml says captureContent: true, or $OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT
// is true (or, as the newer instrumentations spell it, SPAN_ONLY or
// SPAN_AND_EVENT: the host records content on spans only), in any case.
func (t Telemetry) ContentCaptured() bool {
	if t.CaptureContent {
		return true
	}
	switch strings.ToLower(strings.TrimSpace(os.Getenv(CaptureContentEnvVar))) {
	case "true", "span_only", "span_and_event":
		return true
	}
	return false
}

// MCPServer is an MCP server the agent's tools reach through
// call.Host.MCP: a command started over stdio, or a streamable-HTTP URL.
//
//	mcp:
//	  github: {command: github-mcp-server, args: [stdio], env: {GITHUB_TOKEN: …}}
//	  docs: {url: https://docs.example.com/mcp, bearerToken: …}
type MCPServer struct {
	Command     string            `yaml:"command"`
	Args        []string          `yaml:"args"`
	Env         map[string]string `yaml:"env"`
	URL         string            `yaml:"url"`
	Headers     map[string]string `yaml:"headers"`
	BearerToken string            `yaml:"bearerToken"`
}

// Validate checks that a server is one kind or the other.
func (s MCPServer) Validate() error {
	switch {
	case s.Command != "" && s.URL != "":
		return errors.New("give either command or url, not both")
	case s.Command == "" && s.URL == "":
		return errors.New("give a command (stdio server) or a url (streamable HTTP server)")
	}
	return nil
}

// Duration is a time.Duration written as "90s" or "5m".
type Duration time.Duration

// UnmarshalYAML parses a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration such as 90s or 5m", n.Line, n.Value)
	}
	*d = Duration(v)
	return nil
}

// Providers are the model providers agent-sdk knows how to build in.
var Providers = []string{"anthropic", "openai", "gemini"}

// Path returns where an agent directory keeps its configuration.
func Path(agentDir string) string { return filepath.Join(agentDir, "agent", "agent.yaml") }

// Load reads the configuration; a missing file is an empty configuration.
func Load(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := checkKeys(b, reflect.TypeFor[Config]()); err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) { // io.EOF: an empty file
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	// A bare "slack:" or "github:" (YAML null) turns the part on with its
	// defaults, as "slack: {}" does.
	var present map[string]any
	if yaml.Unmarshal(b, &present) == nil {
		if _, ok := present["slack"]; ok && c.Slack == nil {
			c.Slack = &Slack{}
		}
		if _, ok := present["github"]; ok && c.GitHub == nil {
			c.GitHub = &GitHub{}
		}
	}
	if c.Model.Provider != "" && !known(c.Model.Provider) {
		return c, fmt.Errorf("reading %s: model.provider %q is not one of %v", path, c.Model.Provider, Providers)
	}
	if c.Mode != "" && c.Mode != "local" && c.Mode != "cloud" {
		return c, fmt.Errorf("reading %s: mode %q: want local or cloud", path, c.Mode)
	}
	if err := c.validateRuntime(); err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	if c.MaxSteps < 0 || c.ToolConcurrency < 0 || c.Model.MaxTokens < 0 {
		return c, fmt.Errorf("reading %s: maxSteps, toolConcurrency and model.maxTokens cannot be negative", path)
	}
	if err := c.Limits.validate(); err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := c.checkPricing(); err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := c.validateModel(); err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := c.validateWindow(); err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := c.Compaction.validate(); err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := c.Auth.validate(); err != nil {
		return c, fmt.Errorf("reading %s: %w", path, err)
	}
	return c, nil
}

// ModelRetriesMax bounds modelRetries.
const ModelRetriesMax = 10

// MaxResumesMax bounds maxResumes.
const MaxResumesMax = 10

// anthropicThinkingMin is the least thinking budget Anthropic takes
// (model/anthropic.ThinkingBudgetMin, not imported: the CLI reads this
// file and links no provider).
const anthropicThinkingMin = 1024

// validateModel checks the settings of model calls.
func (c Config) validateModel() error {
	if r := c.ModelRetries; r != nil && (*r < 0 || *r > ModelRetriesMax) {
		return fmt.Errorf("modelRetries is %d: want 0 to %d", *r, ModelRetriesMax)
	}
	if r := c.MaxResumes; r != nil && (*r < 0 || *r > MaxResumesMax) {
		return fmt.Errorf("maxResumes is %d: want 0 to %d", *r, MaxResumesMax)
	}
	if t := c.Model.Thinking; t != nil {
		switch {
		case t.BudgetTokens <= 0:
			return fmt.Errorf("model.thinking.budgetTokens is %d: want a number of tokens, such as 8000", t.BudgetTokens)
		case c.Model.Provider == "anthropic" && t.BudgetTokens < anthropicThinkingMin:
			return fmt.Errorf("model.thinking.budgetTokens is %d: Anthropic's extended thinking takes %d or more", t.BudgetTokens, anthropicThinkingMin)
		}
	}
	if e := c.Model.ReasoningEffort; e != "" && !slices.Contains(model.ReasoningEfforts, e) {
		return fmt.Errorf("model.reasoningEffort is %q: want one of %s", e, strings.Join(model.ReasoningEfforts, ", "))
	}
	return nil
}

func known(p string) bool {
	for _, k := range Providers {
		if k == p {
			return true
		}
	}
	return false
}

// StoreEnvVar names the variable that chooses where an agent keeps its
// state, as --store does.
const StoreEnvVar = "AGENT_SDK_STORE"

// Store returns where an agent keeps its state: the --store flag's value,
// else $AGENT_SDK_STORE, else "" (SQLite under the state directory).
func Store(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(StoreEnvVar)
}

// IsPostgresURL reports whether a store location is a PostgreSQL URL.
func IsPostgresURL(store string) bool {
	return strings.HasPrefix(store, "postgres://") || strings.HasPrefix(store, "postgresql://")
}

// Extras returns the optional packages to build into an agent, by path in
// the SDK module: the MCP client ("mcpconn") when agent.yaml has mcp:
// servers, the OTLP exporter ("agentmain/otlp") when it asks for it or an
// OTLP endpoint variable is set now, and the PostgreSQL store
// ("store/postgres") when the store (storeFlag, else $AGENT_SDK_STORE) is a
// postgres:// URL.
func Extras(agentDir, storeFlag string) ([]string, error) {
	c, err := Load(Path(agentDir))
	if err != nil {
		return nil, err
	}
	var pkgs []string
	if len(c.MCP) > 0 {
		pkgs = append(pkgs, "mcpconn")
	}
	if c.Telemetry.OTLP || OTLPEndpointSet() {
		pkgs = append(pkgs, "agentmain/otlp")
	}
	if IsPostgresURL(Store(storeFlag)) {
		pkgs = append(pkgs, "store/postgres")
	}
	return pkgs, nil
}

// OTLPEndpointSet reports whether a standard OTEL_EXPORTER_OTLP_*ENDPOINT
// variable asks for telemetry export.
func OTLPEndpointSet() bool {
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OTEL_EXPORTER_OTLP_") && strings.Contains(kv, "ENDPOINT=") {
			return true
		}
	}
	return false
}

// Provider returns the provider to build in: the --model flag's if given,
// else agent.yaml's; "" for none.
func Provider(agentDir, modelFlag string) (string, error) {
	if modelFlag != "" {
		cfg, err := model.ParseName(modelFlag)
		if err != nil {
			return "", err
		}
		if !known(cfg.Provider) {
			return "", fmt.Errorf("--model: provider %q is not one of %v", cfg.Provider, Providers)
		}
		return cfg.Provider, nil
	}
	c, err := Load(Path(agentDir))
	return c.Model.Provider, err
}
