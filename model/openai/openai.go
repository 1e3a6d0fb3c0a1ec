// Package openai is the OpenAI-compatible chat completions provider for
// model turns, through the official SDK (github.com/openai/openai-go). It
// also talks to Ollama, vLLM and llama.cpp servers: point OPENAI_BASE_URL
// (or model.baseURL) at them. Import it for its side effect of registering
// the provider "openai". The API key defaults to OPENAI_API_KEY.
//
// A stream yields text deltas as they come, then the tool calls, assembled
// from their fragments (their arguments passed on exactly as the model
// wrote them), and last a [model.End] with the model that answered, the
// finish reason and the usage. Requests ask for it (stream_options:
// {include_usage: true}) and the final chunk carries it: InputTokens is
// prompt_tokens less prompt_tokens_details.cached_tokens, which are
// CacheReadTokens; OutputTokens is completion_tokens, of which
// completion_tokens_details.reasoning_tokens are ReasoningTokens. A
// server that ignores include_usage (some local ones) leaves End.Usage
// nil.
//
// Failures are [*model.Error]s: the reason from the HTTP status
// ([model.ReasonForStatus]), or, for an error inside a stream already
// under way, from its type; the error code context_length_exceeded is
// context_length_exceeded. The provider's message is the error body's
// error.message (or the message of a compatible server's own shape), and
// RetryAfter is read from retry-after-ms and Retry-After. A connection
// that broke before the answer was whole (a reset, a stream that ended
// without a finish_reason) is overloaded. The SDK's own retries are off:
// the turn loop retries (internal/turnloop).
//
// Reasoning models — names starting with "o" and a digit (o1, o3-mini,
// o4-mini, …) or with "gpt-5" — are sent max_completion_tokens, which
// they require, instead of max_tokens, which every other name gets so
// that Ollama, vLLM and llama.cpp keep working. [model.Config.ReasoningEffort]
// is sent as reasoning_effort. OpenAI's chat completions stream no
// reasoning text (its reasoning tokens are in the usage); the reasoning a
// compatible server streams beside the content (reasoning_content of vLLM
// and DeepSeek, reasoning of Ollama) is yielded as
// [model.Chunk.ReasoningText], and as one [model.Chunk.Reasoning] block,
// without a signature, once the answer begins. It is never sent back: those
// servers do not take it.
//
// OpenAI caches a prompt's prefix by itself; [model.Request.CacheKey] (the
// session's id) is sent as prompt_cache_key, so that a session's requests
// are routed to the machine that holds its prefix, and the cached part is
// read as [model.Usage.CacheReadTokens]. It is sent to OpenAI only (the
// default base URL, or one on api.openai.com): compatible servers such as
// Groq's and Cerebras's refuse the field.
//
// Tool messages take text only: the images of a tool result
// ([model.ToolResult.Images]) follow the tool messages in one user
// message, each after a line naming the call it belongs to, as data URLs.
// An image the API does not take (a type other than PNG, JPEG, WebP or
// GIF, or over 20 MB) is a text stand-in in the tool message instead.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentsdk/agentsdk/model"
)

func init() { model.Register("openai", New) }

// New returns the provider for cfg.
func New(cfg model.Config) (model.Provider, error) {
	if cfg.Name == "" {
		return nil, errors.New("openai: model.name is required, such as gpt-4o (or the name your server serves)")
	}
	if e := cfg.ReasoningEffort; e != "" && !slices.Contains(model.ReasoningEfforts, e) {
		return nil, fmt.Errorf("openai: model.reasoningEffort %q: want one of %s", e, strings.Join(model.ReasoningEfforts, ", "))
	}
	opts := []option.RequestOption{option.WithMaxRetries(0)} // the turn loop retries
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	} else if os.Getenv("OPENAI_API_KEY") == "" {
		// Local servers (Ollama, llama.cpp) need no key, but the SDK
		// insists on one.
		opts = append(opts, option.WithAPIKey("none"))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	return &provider{client: sdk.NewClient(opts...), cfg: cfg, cacheKey: takesCacheKey(cfg.BaseURL)}, nil
}

// cacheKeyHosts are the hosts sent prompt_cache_key: OpenAI's own. Many
// compatible servers refuse a field they do not know (Groq, Cerebras,
// NVIDIA's: "Unsupported parameter(s): prompt_cache_key"), and the key
// only routes requests within OpenAI.
var cacheKeyHosts = map[string]bool{"api.openai.com": true}

// takesCacheKey reports whether the server at baseURL (else
// OPENAI_BASE_URL, else OpenAI's) is sent prompt_cache_key.
func takesCacheKey(baseURL string) bool {
	if baseURL == "" {
		baseURL = os.Getenv("OPENAI_BASE_URL")
	}
	if baseURL == "" {
		return true
	}
	u, err := url.Parse(baseURL)
	return err == nil && cacheKeyHosts[u.Hostname()]
}

// IsReasoningModel reports whether a model name is one of OpenAI's
// reasoning models, which take max_completion_tokens and not max_tokens:
// a name starting with "o" and a digit, or with "gpt-5".
func IsReasoningModel(name string) bool {
	name = strings.ToLower(name)
	return strings.HasPrefix(name, "gpt-5") || len(name) > 1 && name[0] == 'o' && name[1] >= '0' && name[1] <= '9'
}

type provider struct {
	client   sdk.Client
	cfg      model.Config
	cacheKey bool // the server takes prompt_cache_key
}

// params is the API request for req.
func (p *provider) params(req *model.Request) sdk.ChatCompletionNewParams {
	params := sdk.ChatCompletionNewParams{
		Model:         shared.ChatModel(p.cfg.Name),
		Messages:      messages(req),
		StreamOptions: sdk.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	maxTokens := int64(model.MaxTokensFor(req, p.cfg))
	if IsReasoningModel(p.cfg.Name) {
		params.MaxCompletionTokens = param.NewOpt(maxTokens)
	} else {
		params.MaxTokens = param.NewOpt(maxTokens)
	}
	if p.cfg.ReasoningEffort != "" {
		params.ReasoningEffort = shared.ReasoningEffort(p.cfg.ReasoningEffort)
	}
	if len(req.Tools) > 0 {
		params.Tools = tools(req.Tools)
	}
	if p.cacheKey && req.CacheKey != "" {
		params.PromptCacheKey = param.NewOpt(req.CacheKey)
	}
	return params
}

// Stream sends the request and yields the answer as it streams (see the
// package documentation).
func (p *provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		var failed failure
		stream := p.client.Chat.Completions.NewStreaming(ctx, p.params(req), option.WithMiddleware(failed.record))
		defer stream.Close()
		type pending struct {
			id, name string
			args     []byte
		}
		calls := map[int64]*pending{}
		var end model.End
		finished := false // a choice had its finish_reason
		// A compatible server's reasoning, as one block once the answer
		// begins.
		var reasoning strings.Builder
		endReasoning := func() bool {
			if reasoning.Len() == 0 {
				return true
			}
			r := &model.Reasoning{Text: reasoning.String()}
			reasoning.Reset()
			return yield(model.Chunk{Reasoning: r}, nil)
		}
		for stream.Next() {
			chunk := stream.Current()
			if chunk.Model != "" {
				end.Model = chunk.Model
			}
			if chunk.JSON.Usage.Valid() {
				end.Usage = usage(chunk.Usage)
			}
			for _, choice := range chunk.Choices {
				if choice.FinishReason != "" {
					finished, end.StopReason = true, choice.FinishReason
				}
				if r := reasoningDelta(choice.Delta); r != "" {
					reasoning.WriteString(r)
					if !yield(model.Chunk{ReasoningText: r}, nil) {
						return
					}
				}
				if (choice.Delta.Content != "" || len(choice.Delta.ToolCalls) > 0) && !endReasoning() {
					return
				}
				if choice.Delta.Content != "" && !yield(model.Chunk{Text: choice.Delta.Content}, nil) {
					return
				}
				for _, tc := range choice.Delta.ToolCalls {
					c := calls[tc.Index]
					if c == nil {
						c = &pending{}
						calls[tc.Index] = c
					}
					if tc.ID != "" {
						c.id = tc.ID
					}
					if tc.Function.Name != "" {
						c.name += tc.Function.Name
					}
					c.args = append(c.args, tc.Function.Arguments...)
				}
			}
		}
		if err := stream.Err(); err != nil {
			yield(model.Chunk{}, classify(err, &failed))
			return
		}
		if !finished {
			yield(model.Chunk{}, &model.Error{Reason: model.ReasonOverloaded, Message: "the answer's stream ended without a finish_reason"})
			return
		}
		if !endReasoning() {
			return
		}
		indexes := make([]int64, 0, len(calls))
		for i := range calls {
			indexes = append(indexes, i)
		}
		sort.Slice(indexes, func(a, b int) bool { return indexes[a] < indexes[b] })
		for _, i := range indexes {
			c := calls[i]
			args := c.args
			if len(args) == 0 {
				args = []byte("{}")
			}
			if !yield(model.Chunk{ToolCall: &model.ToolCall{ID: c.id, Name: c.name, Input: args}}, nil) {
				return
			}
		}
		yield(model.Chunk{End: &end}, nil)
	}
}

// reasoningDelta is the reasoning a compatible server streams beside the
// content (OpenAI's own chat completions stream none): vLLM's and
// DeepSeek's reasoning_content, Ollama's and OpenRouter's reasoning.
func reasoningDelta(d sdk.ChatCompletionChunkChoiceDelta) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		if f, ok := d.JSON.ExtraFields[key]; ok {
			var s string
			if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
				return s
			}
		}
	}
	return ""
}

// usage normalises the API's usage (model.Usage).
func usage(u sdk.CompletionUsage) *model.Usage {
	cached := u.PromptTokensDetails.CachedTokens
	return &model.Usage{
		InputTokens:     u.PromptTokens - cached,
		CacheReadTokens: cached,
		OutputTokens:    u.CompletionTokens,
		ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens,
	}
}
