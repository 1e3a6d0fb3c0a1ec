// Package anthropic is the Anthropic Messages API provider for model turns,
// through the official SDK (github.com/anthropics/anthropic-sdk-go). Import
// it for its side effect of registering the provider "anthropic". The API
// key and base URL default to ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL.
//
// A stream yields text deltas as they come, each tool call once its input
// is complete (passed on exactly as the model wrote it, valid JSON or not),
// and last a [model.End] with the model that answered, the stop reason and
// the usage: message_start's input, cache-read and cache-write figures,
// overridden by message_delta's cumulative ones where it gives them, and
// message_delta's output tokens, thinking tokens included (the API's
// output_tokens_details.thinking_tokens is [model.Usage.ReasoningTokens]).
//
// Failures are [*model.Error]s: the reason from the HTTP status
// ([model.ReasonForStatus]), or from the error's type when it came as an
// error event inside a stream that began 200 OK (overloaded_error, …);
// an invalid_request_error saying "prompt is too long" is
// context_length_exceeded. The provider's message is the error body's
// error.message, and RetryAfter is read from retry-after-ms and
// Retry-After. A connection that broke before the answer was whole (a
// reset, a stream that ended before message_stop) is overloaded. The
// SDK's own retries are off: the turn loop retries (internal/turnloop).
//
// With [model.Config.Thinking] set, requests turn on extended thinking
// (thinking: {type: enabled, budget_tokens: N}; N must be at least 1024).
// The API wants max_tokens above the budget: when the answer's cap is not,
// max_tokens is the budget plus the cap. Thinking streams as
// [model.Chunk.ReasoningText] and each complete block as
// [model.Chunk.Reasoning] with its signature (a redacted_thinking block
// as Reasoning.Redacted); an assistant message's reasoning is sent back
// first in its content, byte for byte, as the API requires across tool
// calls.
//
// Requests mark their prompt-cache breakpoints (cache_control: ephemeral),
// within the API's four: the last tool, the system prompt, the last
// message's last block, and the last block of the message before the last
// assistant message (where the previous request marked its last), never a
// thinking block. So each model call of a session reads from the cache
// what the one before wrote, and pays full price only for what is new
// since ([model.Usage.CacheReadTokens], CacheWriteTokens). Tools are sent
// in the order given: keep it stable (the host lists them by name).
//
// Images of tool results ([model.ToolResult.Images]) go in the tool_result
// block as base64 image blocks; one the API does not take (a type other
// than JPEG, PNG, GIF or WebP, or over 5 MB encoded) is replaced by a text
// stand-in naming it.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentsdk/agentsdk/model"
)

func init() { model.Register("anthropic", New) }

// ThinkingBudgetMin is the least thinking budget the API takes.
const ThinkingBudgetMin = 1024

// New returns the provider for cfg.
func New(cfg model.Config) (model.Provider, error) {
	if cfg.Name == "" {
		return nil, errors.New("anthropic: model.name is required, such as claude-sonnet-4-5")
	}
	if cfg.Thinking != nil && cfg.Thinking.BudgetTokens < ThinkingBudgetMin {
		return nil, fmt.Errorf("anthropic: model.thinking.budgetTokens is %d; extended thinking takes %d or more", cfg.Thinking.BudgetTokens, ThinkingBudgetMin)
	}
	opts := []option.RequestOption{option.WithMaxRetries(0)} // the turn loop retries
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	return &provider{client: sdk.NewClient(opts...), cfg: cfg}, nil
}

type provider struct {
	client sdk.Client
	cfg    model.Config
}

// params is the API request for req.
func (p *provider) params(req *model.Request) sdk.MessageNewParams {
	maxTokens := model.MaxTokensFor(req, p.cfg)
	params := sdk.MessageNewParams{
		Model:    sdk.Model(p.cfg.Name),
		Messages: messages(req.Messages),
		Tools:    tools(req.Tools),
	}
	if t := p.cfg.Thinking; t != nil {
		if maxTokens <= t.BudgetTokens {
			maxTokens += t.BudgetTokens
		}
		params.Thinking = sdk.ThinkingConfigParamOfEnabled(int64(t.BudgetTokens))
	}
	params.MaxTokens = int64(maxTokens)
	if req.System != "" {
		params.System = []sdk.TextBlockParam{{Text: req.System}}
	}
	markCache(&params)
	return params
}

// Stream sends the request and yields the answer as it streams (see the
// package documentation).
func (p *provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		stream := p.client.Messages.NewStreaming(ctx, p.params(req))
		defer stream.Close()
		type pending struct {
			id, name string
			input    []byte
		}
		calls := map[int64]*pending{}
		thinking := map[int64]*model.Reasoning{}
		var (
			end      model.End
			usage    model.Usage
			reported bool // message_start had usage
			stopped  bool // message_stop came
		)
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "message_start":
				end.Model = string(ev.Message.Model)
				u := ev.Message.Usage
				reported = u.JSON.InputTokens.Valid() || u.JSON.OutputTokens.Valid()
				usage = model.Usage{
					InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadInputTokens,
					CacheWriteTokens: u.CacheCreationInputTokens, ReasoningTokens: u.OutputTokensDetails.ThinkingTokens,
				}
			case "content_block_start":
				b := ev.ContentBlock
				switch b.Type {
				case "tool_use":
					calls[ev.Index] = &pending{id: b.ID, name: b.Name}
				case "thinking":
					thinking[ev.Index] = &model.Reasoning{Text: b.Thinking, Signature: b.Signature}
					if b.Thinking != "" && !yield(model.Chunk{ReasoningText: b.Thinking}, nil) {
						return
					}
				case "redacted_thinking":
					thinking[ev.Index] = &model.Reasoning{Redacted: b.Data}
				}
			case "content_block_delta":
				switch ev.Delta.Type {
				case "text_delta":
					if ev.Delta.Text != "" && !yield(model.Chunk{Text: ev.Delta.Text}, nil) {
						return
					}
				case "input_json_delta":
					if c := calls[ev.Index]; c != nil {
						c.input = append(c.input, ev.Delta.PartialJSON...)
					}
				case "thinking_delta":
					if r := thinking[ev.Index]; r != nil && ev.Delta.Thinking != "" {
						r.Text += ev.Delta.Thinking
						if !yield(model.Chunk{ReasoningText: ev.Delta.Thinking}, nil) {
							return
						}
					}
				case "signature_delta":
					if r := thinking[ev.Index]; r != nil {
						r.Signature += ev.Delta.Signature
					}
				}
			case "content_block_stop":
				if c := calls[ev.Index]; c != nil {
					delete(calls, ev.Index)
					input := c.input
					if len(input) == 0 {
						input = []byte("{}")
					}
					if !yield(model.Chunk{ToolCall: &model.ToolCall{ID: c.id, Name: c.name, Input: input}}, nil) {
						return
					}
				}
				if r := thinking[ev.Index]; r != nil {
					delete(thinking, ev.Index)
					if !yield(model.Chunk{Reasoning: r}, nil) {
						return
					}
				}
			case "message_delta":
				end.StopReason = string(ev.Delta.StopReason)
				u := ev.Usage
				if u.JSON.OutputTokens.Valid() {
					reported = true
					usage.OutputTokens = u.OutputTokens
				}
				// Newer answers give the input figures again, cumulative.
				if u.JSON.InputTokens.Valid() {
					usage.InputTokens = u.InputTokens
				}
				if u.JSON.CacheReadInputTokens.Valid() {
					usage.CacheReadTokens = u.CacheReadInputTokens
				}
				if u.JSON.CacheCreationInputTokens.Valid() {
					usage.CacheWriteTokens = u.CacheCreationInputTokens
				}
				if u.OutputTokensDetails.JSON.ThinkingTokens.Valid() {
					usage.ReasoningTokens = u.OutputTokensDetails.ThinkingTokens
				}
			case "message_stop":
				stopped = true
			}
		}
		if err := stream.Err(); err != nil {
			yield(model.Chunk{}, classify(err))
			return
		}
		if !stopped {
			yield(model.Chunk{}, &model.Error{Reason: model.ReasonOverloaded, Message: "the answer's stream ended before message_stop"})
			return
		}
		if reported {
			end.Usage = &usage
		}
		yield(model.Chunk{End: &end}, nil)
	}
}
