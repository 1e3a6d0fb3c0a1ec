// Package openai is the OpenAI-compatible chat completions provider for
// model turns, through the official SDK (github.com/openai/openai-go). It
// also talks to Ollama, vLLM and llama.cpp servers: point OPENAI_BASE_URL
// (or model.baseURL) at them. Import it for its side effect of registering
// the provider "openai". The API key defaults to OPENAI_API_KEY.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"os"
	"sort"

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
	opts := []option.RequestOption{option.WithMaxRetries(1)}
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
	return &provider{client: sdk.NewClient(opts...), cfg: cfg}, nil
}

type provider struct {
	client sdk.Client
	cfg    model.Config
}

// Stream sends the request and yields text deltas as they come and the tool
// calls, assembled from their fragments, when the stream ends. A tool call's
// arguments are passed on exactly as the model wrote them.
func (p *provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		params := sdk.ChatCompletionNewParams{
			Model:    shared.ChatModel(p.cfg.Name),
			Messages: messages(req),
			// max_tokens, which Ollama, vLLM and llama.cpp understand (OpenAI's
			// o-series models want max_completion_tokens instead).
			MaxTokens: param.NewOpt(int64(model.MaxTokensFor(req, p.cfg))),
		}
		if len(req.Tools) > 0 {
			params.Tools = tools(req.Tools)
		}
		stream := p.client.Chat.Completions.NewStreaming(ctx, params)
		defer stream.Close()
		type pending struct {
			id, name string
			args     []byte
		}
		calls := map[int64]*pending{}
		for stream.Next() {
			chunk := stream.Current()
			for _, choice := range chunk.Choices {
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
			yield(model.Chunk{}, err)
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
	}
}

func messages(req *model.Request) []sdk.ChatCompletionMessageParamUnion {
	var out []sdk.ChatCompletionMessageParamUnion
	if req.System != "" {
		out = append(out, sdk.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		for _, r := range m.ToolResults {
			content := r.Content
			if r.IsError {
				content = "error: " + content
			}
			out = append(out, sdk.ToolMessage(content, r.CallID))
		}
		switch m.Role {
		case model.Assistant:
			a := sdk.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				a.Content.OfString = param.NewOpt(m.Text)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, sdk.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(c.Input)},
					},
				})
			}
			if m.Text != "" || len(a.ToolCalls) > 0 {
				out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
			}
		default:
			if m.Text != "" {
				out = append(out, sdk.UserMessage(m.Text))
			}
		}
	}
	return out
}

func tools(in []model.Tool) []sdk.ChatCompletionToolUnionParam {
	out := make([]sdk.ChatCompletionToolUnionParam, 0, len(in))
	for _, t := range in {
		var schema map[string]any
		_ = json.Unmarshal(t.InputSchema, &schema)
		out = append(out, sdk.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        t.Name,
			Description: param.NewOpt(t.Description),
			Parameters:  shared.FunctionParameters(schema),
		}))
	}
	return out
}
