// Package anthropic is the Anthropic Messages API provider for model turns,
// through the official SDK (github.com/anthropics/anthropic-sdk-go). Import
// it for its side effect of registering the provider "anthropic". The API
// key and base URL default to ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"iter"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/agentsdk/agentsdk/model"
)

func init() { model.Register("anthropic", New) }

// New returns the provider for cfg.
func New(cfg model.Config) (model.Provider, error) {
	if cfg.Name == "" {
		return nil, errors.New("anthropic: model.name is required, such as claude-sonnet-4-5")
	}
	opts := []option.RequestOption{option.WithMaxRetries(1)}
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

// Stream sends the request and yields text deltas as they come and each
// tool call once its input is complete. A tool call's input is passed on
// exactly as the model wrote it, valid JSON or not.
func (p *provider) Stream(ctx context.Context, req *model.Request) iter.Seq2[model.Chunk, error] {
	return func(yield func(model.Chunk, error) bool) {
		params := sdk.MessageNewParams{
			Model:     sdk.Model(p.cfg.Name),
			MaxTokens: int64(model.MaxTokensFor(req, p.cfg)),
			Messages:  messages(req.Messages),
			Tools:     tools(req.Tools),
		}
		if req.System != "" {
			params.System = []sdk.TextBlockParam{{Text: req.System}}
		}
		stream := p.client.Messages.NewStreaming(ctx, params)
		defer stream.Close()
		type pending struct {
			id, name string
			input    []byte
		}
		calls := map[int64]*pending{}
		for stream.Next() {
			ev := stream.Current()
			switch ev.Type {
			case "content_block_start":
				if ev.ContentBlock.Type == "tool_use" {
					calls[ev.Index] = &pending{id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
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
			}
		}
		if err := stream.Err(); err != nil {
			yield(model.Chunk{}, err)
		}
	}
}

func messages(in []model.Message) []sdk.MessageParam {
	out := make([]sdk.MessageParam, 0, len(in))
	for _, m := range in {
		var blocks []sdk.ContentBlockParamUnion
		for _, r := range m.ToolResults {
			blocks = append(blocks, sdk.NewToolResultBlock(r.CallID, r.Content, r.IsError))
		}
		if m.Text != "" {
			blocks = append(blocks, sdk.NewTextBlock(m.Text))
		}
		for _, c := range m.ToolCalls {
			blocks = append(blocks, sdk.NewToolUseBlock(c.ID, objectOrEmpty(c.Input), c.Name))
		}
		if len(blocks) == 0 {
			continue
		}
		if m.Role == model.Assistant {
			out = append(out, sdk.NewAssistantMessage(blocks...))
		} else {
			out = append(out, sdk.NewUserMessage(blocks...))
		}
	}
	return out
}

// objectOrEmpty returns a tool call's input for the history: the API
// insists on an object, and a model's malformed input is not one.
func objectOrEmpty(raw json.RawMessage) any {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return map[string]any{}
	}
	return json.RawMessage(raw)
}

func tools(in []model.Tool) []sdk.ToolUnionParam {
	out := make([]sdk.ToolUnionParam, 0, len(in))
	for _, t := range in {
		var schema map[string]any
		_ = json.Unmarshal(t.InputSchema, &schema)
		param := sdk.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range schema {
			switch k {
			case "type":
			case "properties":
				param.Properties = v
			case "required":
				if list, ok := v.([]any); ok {
					for _, r := range list {
						if s, ok := r.(string); ok {
							param.Required = append(param.Required, s)
						}
					}
				}
			default:
				param.ExtraFields[k] = v
			}
		}
		tp := sdk.ToolParam{Name: t.Name, InputSchema: param}
		tp.Description = sdk.String(t.Description)
		out = append(out, sdk.ToolUnionParam{OfTool: &tp})
	}
	return out
}
