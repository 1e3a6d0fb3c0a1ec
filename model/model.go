// Package model is the provider-neutral core of model turns: messages, tool
// calls, a streaming Provider interface, and a registry of providers. Each
// provider lives in its own package (model/anthropic, model/openai,
// model/gemini) and
// registers itself when imported, so a program carries only the providers
// it uses.
package model

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"sort"
	"strings"
	"sync"
)

// Role says who wrote a message.
type Role string

// The roles of a conversation.
const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// Message is one message of a conversation: text, and for the assistant the
// tool calls it made, and for the user the results of those calls.
type Message struct {
	Role Role
	Text string
	// Reasoning is the assistant's reasoning before its text and calls,
	// sent back as it came (a provider that requires it, Anthropic's
	// extended thinking, refuses an altered block).
	Reasoning   []Reasoning
	ToolCalls   []ToolCall   // assistant messages
	ToolResults []ToolResult // user messages answering the previous calls
}

// Reasoning is one complete block of a model's reasoning. Text is what the
// model showed of it; Signature is the provider's seal over it (Anthropic
// thinking blocks; Gemini's thought signatures, which start with "gemini:",
// see model/gemini, so that another provider can leave them out); Redacted
// is the opaque data of a block the provider encrypted (Anthropic
// redacted_thinking), with no text.
type Reasoning struct {
	Text      string
	Signature string
	Redacted  string
}

// ToolCall is a model's request to run a tool. Input is the model's
// arguments as it sent them, which may not even be valid JSON.
type ToolCall struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// ToolResult answers a ToolCall.
type ToolResult struct {
	CallID  string
	Content string // text the model reads
	// Images are image contents of the result (tool.Image), for models
	// that take them; a provider that cannot send them sends a text
	// stand-in naming each.
	Images  []Image
	IsError bool
}

// Image is an image a tool returned.
type Image struct {
	MimeType string // image/png, image/jpeg, image/gif, image/webp
	Data     []byte
	// Name says what it is, for a text stand-in ("image 1 of the result").
	Name string
}

// Tool describes a tool to the model.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// Request is one model call.
type Request struct {
	System   string
	Messages []Message
	Tools    []Tool
	// MaxTokens caps the answer's length; 0 means the provider's
	// Config.MaxTokens, and failing that MaxTokensDefault.
	MaxTokens int
	// CacheKey groups requests that share a prefix, for providers whose
	// prompt cache routes by a key (OpenAI's prompt_cache_key): the
	// session's id. Providers that cache by content alone ignore it.
	CacheKey string
}

// Chunk is one piece of a streamed answer: a text delta, a reasoning delta,
// a complete reasoning block, a complete tool call, or the answer's [End]
// (its usage). The stream ends after the last chunk; a failure is an
// error, an [*Error] where the provider could classify it.
type Chunk struct {
	Text string
	// ReasoningText is a delta of the model's reasoning as it streams;
	// Reasoning the complete block, once it is (its deltas came before).
	ReasoningText string
	Reasoning     *Reasoning
	ToolCall      *ToolCall
	End           *End
}

// Provider streams a model's answer to a request.
type Provider interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error]
}

// Config chooses and configures a provider.
type Config struct {
	Provider  string `yaml:"provider" json:"provider"`   // "anthropic", "openai", "gemini"
	Name      string `yaml:"name" json:"name"`           // the model's name
	BaseURL   string `yaml:"baseURL" json:"baseURL"`     // default: the provider's, or its usual environment variable
	APIKey    string `yaml:"apiKey" json:"-"`            // default: the provider's usual environment variable
	MaxTokens int    `yaml:"maxTokens" json:"maxTokens"` // default MaxTokensDefault; a Request's own MaxTokens wins
	// Thinking turns on Anthropic's extended thinking (and Gemini's
	// thinking budget) with this many tokens of reasoning per call.
	Thinking *Thinking `yaml:"thinking" json:"thinking,omitempty"`
	// ReasoningEffort is OpenAI's reasoning_effort for reasoning models:
	// minimal, low, medium or high.
	ReasoningEffort string `yaml:"reasoningEffort" json:"reasoningEffort,omitempty"`
	// ContextWindow is the model's context window in tokens; 0: the
	// shipped table's ([DefaultWindows]), and none for a model it lacks.
	ContextWindow int64 `yaml:"contextWindow" json:"contextWindow,omitempty"`
}

// Thinking configures a model's reasoning budget.
type Thinking struct {
	BudgetTokens int `yaml:"budgetTokens" json:"budgetTokens"`
}

// MaxTokensDefault caps an answer's length when neither the [Request] nor
// the provider's [Config] says otherwise.
const MaxTokensDefault = 4096

// MaxTokensFor is the cap on an answer that a provider sends: the
// request's, else its configuration's, else [MaxTokensDefault].
func MaxTokensFor(req *Request, cfg Config) int {
	switch {
	case req.MaxTokens > 0:
		return req.MaxTokens
	case cfg.MaxTokens > 0:
		return cfg.MaxTokens
	}
	return MaxTokensDefault
}

// Opener makes a provider from its configuration.
type Opener func(Config) (Provider, error)

var (
	mu        sync.Mutex
	providers = map[string]Opener{}
)

// Register makes a provider available by name; provider packages call it
// from init.
func Register(name string, open Opener) {
	mu.Lock()
	defer mu.Unlock()
	providers[name] = open
}

// Registered lists the providers this program carries.
func Registered() []string {
	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, len(providers))
	for n := range providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ErrNotConfigured explains how to configure a model.
var ErrNotConfigured = fmt.Errorf("no model is configured: set model.provider (anthropic, openai or gemini) and model.name in agent/agent.yaml, " +
	"or pass --model provider/name to agent-sdk serve, and set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY (OPENAI_BASE_URL for Ollama, vLLM or llama.cpp)")

// Open returns the configured provider.
func Open(cfg Config) (Provider, error) {
	if cfg.Provider == "" {
		return nil, ErrNotConfigured
	}
	mu.Lock()
	open, ok := providers[cfg.Provider]
	mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("model provider %q is not built into this agent (built in: %s); agent-sdk includes the one named in agent.yaml or --model",
			cfg.Provider, strings.Join(Registered(), ", "))
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = MaxTokensDefault
	}
	return open(cfg)
}

// ParseName splits "provider/model" (as --model takes it).
func ParseName(s string) (Config, error) {
	p, name, ok := strings.Cut(s, "/")
	if !ok || p == "" || name == "" {
		return Config{}, fmt.Errorf("model %q: want provider/name, such as anthropic/claude-sonnet-4-5, openai/gpt-4o or gemini/gemini-2.5-flash", s)
	}
	return Config{Provider: p, Name: name}, nil
}
