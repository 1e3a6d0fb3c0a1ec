package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/agentsdk/agentsdk/model"
)

func messages(in []model.Message) []sdk.MessageParam {
	out := make([]sdk.MessageParam, 0, len(in))
	for _, m := range in {
		var blocks []sdk.ContentBlockParamUnion
		if m.Role == model.Assistant && (m.Text != "" || len(m.ToolCalls) > 0) {
			// The reasoning first, as it came: the API checks it. Another
			// provider's seals (Gemini's "gemini:…", a session whose model
			// changed) are not Anthropic's to check, and are left out.
			for _, r := range m.Reasoning {
				switch {
				case strings.HasPrefix(r.Signature, "gemini:"):
				case r.Redacted != "":
					blocks = append(blocks, sdk.NewRedactedThinkingBlock(r.Redacted))
				case r.Signature != "":
					blocks = append(blocks, sdk.NewThinkingBlock(r.Signature, r.Text))
				}
			}
		}
		for _, r := range m.ToolResults {
			blocks = append(blocks, toolResult(r))
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

// maxImageBase64 is the most of an image the API takes, base64-encoded.
const maxImageBase64 = 5 << 20

// toolResult is a tool_result block: the result's text, then its images,
// each as a base64 image block or, if the API would refuse it, a text
// stand-in. An empty text is left out (the API refuses empty text
// blocks).
func toolResult(r model.ToolResult) sdk.ContentBlockParamUnion {
	text := r.Content
	var images []sdk.ToolResultBlockParamContentUnion
	for _, img := range r.Images {
		if why := unsendable(img); why != "" {
			if text != "" {
				text += "\n"
			}
			text += img.StandIn(why)
			continue
		}
		src := sdk.Base64ImageSourceParam{Data: base64.StdEncoding.EncodeToString(img.Data), MediaType: sdk.Base64ImageSourceMediaType(img.MimeType)}
		images = append(images, sdk.ToolResultBlockParamContentUnion{OfImage: &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{OfBase64: &src}}})
	}
	block := sdk.ToolResultBlockParam{ToolUseID: r.CallID, IsError: sdk.Bool(r.IsError)}
	if text != "" {
		block.Content = append(block.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: text}})
	}
	block.Content = append(block.Content, images...)
	return sdk.ContentBlockParamUnion{OfToolResult: &block}
}

// unsendable says why the API would refuse an image, or "".
func unsendable(img model.Image) string {
	switch img.MimeType {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
	default:
		return "the model takes JPEG, PNG, GIF and WebP images only"
	}
	if base64.StdEncoding.EncodedLen(len(img.Data)) > maxImageBase64 {
		return "it is over the 5 MB the model takes"
	}
	return ""
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
