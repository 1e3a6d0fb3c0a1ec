package openai

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentsdk/agentsdk/model"
)

func messages(req *model.Request) []sdk.ChatCompletionMessageParamUnion {
	var out []sdk.ChatCompletionMessageParamUnion
	if req.System != "" {
		out = append(out, sdk.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		var images []sdk.ChatCompletionContentPartUnionParam
		for _, r := range m.ToolResults {
			content, parts := toolResult(r)
			out = append(out, sdk.ToolMessage(content, r.CallID))
			images = append(images, parts...)
		}
		if len(images) > 0 {
			out = append(out, sdk.UserMessage(images))
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

// maxImageBytes is the most of an image the API takes.
const maxImageBytes = 20 << 20

// toolResult is a tool message's text and the parts of the user message
// that carries the result's images: a line naming the call, then the
// images as data URLs. An image the API would refuse is a stand-in in the
// text instead.
func toolResult(r model.ToolResult) (string, []sdk.ChatCompletionContentPartUnionParam) {
	content := r.Content
	if r.IsError {
		content = "error: " + content
	}
	var parts []sdk.ChatCompletionContentPartUnionParam
	for _, img := range r.Images {
		why := ""
		switch {
		case img.MimeType != "image/png" && img.MimeType != "image/jpeg" && img.MimeType != "image/webp" && img.MimeType != "image/gif":
			why = "the model takes PNG, JPEG, WebP and GIF images only"
		case len(img.Data) > maxImageBytes:
			why = "it is over the 20 MB the model takes"
		}
		if why != "" {
			content += "\n" + img.StandIn(why)
			continue
		}
		if len(parts) == 0 {
			parts = append(parts, sdk.TextContentPart(fmt.Sprintf("The images of the result of tool call %s:", r.CallID)))
		}
		url := "data:" + img.MimeType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
		parts = append(parts, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{URL: url}))
	}
	if n := len(parts) - 1; n > 0 {
		content += fmt.Sprintf("\n[%d image(s) of this result follow in the next user message]", n)
	}
	return content, parts
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
