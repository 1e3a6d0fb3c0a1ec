package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Services are the host's shared services, reached from a handler as
// call.Host. Every interface field is always set: a service the agent has
// not configured answers each call with an error (wrapping
// ErrNotConfigured) that says how to configure it. The platform clients
// (Slack, GitHub) are in Platforms, reached through package platform's
// typed accessors, which keep the same promise.
type Services struct {
	// KV is durable key-value storage shared by every session of the agent.
	KV KV
	// Files is durable blob storage shared by every session of the agent.
	Files Files
	// MCP reaches the MCP servers authored in agent.yaml.
	MCP MCP
	// Otel adds the tool's own metrics and session tags to the host's
	// OpenTelemetry.
	Otel Otel
	// Reminders wake the call's session later with a message.
	Reminders Reminders
	// Platforms holds the host's clients of third-party platforms by
	// name, typed by the package that owns the integration, so that this
	// package links no platform's SDK. The keys are [PlatformSlack] (a
	// *slack.Client of slack-go, with the bot token of agent.yaml's
	// slack:) and [PlatformGitHub] (a *github.Client of go-github, with a
	// token or as a GitHub App installation, per agent.yaml's github:). A
	// handler reads them with platform.Slack(call.Host) and
	// platform.GitHub(call.Host), which return a client whose every call
	// fails saying how to configure it when the key is absent. Nil means
	// none; the host never changes the map once a call can see it.
	Platforms map[string]any
	// SlackNudges asks a person a question at most once per key within a
	// window.
	SlackNudges SlackNudges
	// Evals runs the agent's evals (batches of cases, each a session on
	// the channel "eval" whose trajectory is checked) and reads their
	// results (package evals sets it on the host it runs on). Without
	// durable jobs (the in-memory store), or without package evals, every
	// call fails saying how to configure them.
	Evals Evals
}

// MCPTool describes a tool of an MCP server.
type MCPTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
}

// MCP is the host's connections to MCP servers, by the names agent.yaml
// gives them. Connections start on first use, are reused, restart after a
// crash, and close when the host stops.
type MCP interface {
	// Names lists the configured servers.
	Names() []string
	// ListTools lists a server's tools.
	ListTools(ctx context.Context, server string) ([]MCPTool, error)
	// CallTool calls a server's tool. A failure of the tool is a Result
	// with IsError; a failure to reach the server is an error.
	CallTool(ctx context.Context, server, tool string, args any) (Result, error)
}

type unconfiguredMCP struct{}

var errMCPNotConfigured = fmt.Errorf("mcp: %w: no MCP servers in agent/agent.yaml; add them under mcp: (name: {command: …, args: […]} or {url: …})", ErrNotConfigured)

func (unconfiguredMCP) Names() []string { return nil }

func (unconfiguredMCP) ListTools(context.Context, string) ([]MCPTool, error) {
	return nil, errMCPNotConfigured
}

func (unconfiguredMCP) CallTool(context.Context, string, string, any) (Result, error) {
	return Result{}, errMCPNotConfigured
}

// ErrNotConfigured is wrapped by the errors of services the agent has not
// configured.
var ErrNotConfigured = errors.New("service not configured")

// Errors of KV, checked with errors.Is.
var (
	// ErrKeyNotFound: no live entry has that key.
	ErrKeyNotFound = errors.New("key not found")
	// ErrVersionConflict: CompareAndSet found another version.
	ErrVersionConflict = errors.New("version conflict")
)

// KVEntry is a key's value and version. The version counts the key's
// writes from 1; CompareAndSet takes it.
type KVEntry struct {
	Key       string     `json:"key"`
	Value     []byte     `json:"value"`
	Version   int64      `json:"version"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	UpdatedAt time.Time  `json:"updatedAt"`
}

// KVSetOptions modify a write. Nil means defaults.
type KVSetOptions struct {
	// TTL, if positive, makes the entry disappear after it.
	TTL time.Duration
}

// KVListOptions page a listing. Nil means defaults.
type KVListOptions struct {
	Limit  int    // at most this many (default 100, at most 1000)
	Cursor string // from the previous page
}

// KV is durable key-value storage, namespaced per agent.
type KV interface {
	// Get returns a key's live entry, or ErrKeyNotFound.
	Get(ctx context.Context, key string) (KVEntry, error)
	// Set writes a value, whatever the key holds.
	Set(ctx context.Context, key string, value []byte, opts *KVSetOptions) (KVEntry, error)
	// CompareAndSet writes a value only if the key is at version (0: only
	// if the key does not exist); otherwise ErrVersionConflict. Read,
	// change, CompareAndSet, and retry on conflict: no update is lost.
	CompareAndSet(ctx context.Context, key string, version int64, value []byte, opts *KVSetOptions) (KVEntry, error)
	// Delete removes a key; an absent key is no error.
	Delete(ctx context.Context, key string) error
	// List returns the live entries whose keys start with prefix, in key
	// order, and the cursor of the next page ("" after the last).
	List(ctx context.Context, prefix string, opts *KVListOptions) ([]KVEntry, string, error)
}

// Limits of KV keys and values.
const (
	MaxKeyBytes   = 512
	MaxValueBytes = 1 << 20
)

// CheckKey reports whether key can name a KV entry: 1 to MaxKeyBytes bytes
// of UTF-8 without NUL.
func CheckKey(key string) error {
	switch {
	case key == "":
		return errors.New("kv: the key is empty")
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("kv: the key is %d bytes long; the limit is %d", len(key), MaxKeyBytes)
	case !utf8.ValidString(key):
		return errors.New("kv: the key is not valid UTF-8")
	}
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			return errors.New("kv: the key contains NUL")
		}
	}
	return nil
}

// unconfiguredKV answers every call with how to configure KV.
type unconfiguredKV struct{}

var errKVNotConfigured = fmt.Errorf("kv: %w: the host has no store; serve the agent with agent-sdk serve (SQLite under the state directory), or give host.Options.Store", ErrNotConfigured)

func (unconfiguredKV) Get(context.Context, string) (KVEntry, error) {
	return KVEntry{}, errKVNotConfigured
}

func (unconfiguredKV) Set(context.Context, string, []byte, *KVSetOptions) (KVEntry, error) {
	return KVEntry{}, errKVNotConfigured
}

func (unconfiguredKV) CompareAndSet(context.Context, string, int64, []byte, *KVSetOptions) (KVEntry, error) {
	return KVEntry{}, errKVNotConfigured
}

func (unconfiguredKV) Delete(context.Context, string) error { return errKVNotConfigured }

func (unconfiguredKV) List(context.Context, string, *KVListOptions) ([]KVEntry, string, error) {
	return nil, "", errKVNotConfigured
}

// withDefaults fills the services an agent has not configured.
func (s Services) withDefaults() Services {
	if s.KV == nil {
		s.KV = unconfiguredKV{}
	}
	if s.Files == nil {
		s.Files = unconfiguredFiles{}
	}
	if s.MCP == nil {
		s.MCP = unconfiguredMCP{}
	}
	if s.Otel == nil {
		s.Otel = noOtel{}
	}
	if s.Reminders == nil {
		s.Reminders = remindersOutsideSession
	}
	if s.SlackNudges == nil {
		s.SlackNudges = unconfiguredNudges{}
	}
	if s.Evals == nil {
		s.Evals = unconfiguredEvals
	}
	return s
}
