package turnloop

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/tool"
)

// History rebuilds a conversation from a session's stored events: user
// and assistant messages, the model's reasoning blocks (reasoning events,
// which go with the assistant message or tool calls after them), the
// model's tool calls and their results (images included), read through
// the same payload types they were written with. Calls made
// directly are not part of it; a call whose result never came (its host
// died) gets a result saying so, as the APIs require one. It also keeps
// the tags tools put on the session. Add the events in order, then read
// Messages.
type History struct {
	msgs      []model.Message
	tags      map[string]string
	requested map[string]bool // model call ids
	answered  map[string]bool
	started   bool   // the channel's onStart ran (channel.started)
	lastUser  string // the last user message's text
	// reasoning are the blocks recorded since the last assistant message,
	// for the next one (the answer they led to).
	reasoning []model.Reasoning
}

// ChannelStarted reports whether the session's channel's onStart hook has
// run (a channel.started event).
func (h *History) ChannelStarted() bool { return h.started }

// LastUserMessage returns the text of the last user message.
func (h *History) LastUserMessage() string { return h.lastUser }

// NewHistory returns an empty history.
func NewHistory() *History {
	return &History{tags: map[string]string{}, requested: map[string]bool{}, answered: map[string]bool{}}
}

// Messages returns the conversation so far, and the session's tags.
func (h *History) Messages() ([]model.Message, map[string]string) {
	return fillMissingResults(slices.Clone(h.msgs), h.answered), h.tags
}

// Add reads one event into the history.
func (h *History) Add(e api.Event) {
	switch e.Kind {
	case api.KindSessionTagged:
		if tag, err := api.Decode[api.SessionTagged](e); err == nil {
			h.tags[tag.Key] = tag.Value
		}
	case api.KindMessage:
		m, err := api.Decode[api.Message](e)
		if err != nil {
			return
		}
		if m.Role == api.RoleAssistant {
			h.msgs = append(h.msgs, model.Message{Role: model.Assistant, Text: m.Text, Reasoning: h.reasoning})
		} else {
			h.lastUser = m.Text
			h.addUserText(m.Text)
		}
		h.reasoning = nil
	case api.KindReasoning:
		r, err := api.Decode[api.Reasoning](e)
		if err != nil {
			return
		}
		h.reasoning = append(h.reasoning, model.Reasoning{Text: r.Text, Signature: r.Signature, Redacted: r.Redacted})
	case api.KindTurnStarted, api.KindTurnCompleted, api.KindTurnFailed, api.KindTurnResumed:
		h.reasoning = nil // an answer that never came
	case api.KindChannelStarted:
		c, err := api.Decode[api.ChannelStarted](e)
		if err != nil {
			return
		}
		h.started = true
		// What onStart found goes with the first message.
		for _, text := range c.Context {
			h.addUserText(text)
		}

	case api.KindActionsRequested:
		a, err := api.Decode[api.ActionsRequested](e)
		if err != nil {
			return
		}
		if n := len(h.msgs); n == 0 || h.msgs[n-1].Role != model.Assistant {
			h.msgs = append(h.msgs, model.Message{Role: model.Assistant})
		}
		last := len(h.msgs) - 1
		if len(h.reasoning) > 0 {
			h.msgs[last].Reasoning = h.reasoning
			h.reasoning = nil
		}
		for _, act := range a.Actions {
			input := act.Input
			if input == nil {
				input = json.RawMessage(act.InputText)
			}
			h.msgs[last].ToolCalls = append(h.msgs[last].ToolCalls, model.ToolCall{ID: act.ModelCallID, Name: act.Tool, Input: input})
			h.requested[act.ModelCallID] = true
		}
	case api.KindActionResult:
		r, err := api.Decode[api.ActionResult](e)
		if err != nil || r.Direct || r.ModelCallID == "" || !h.requested[r.ModelCallID] || h.answered[r.ModelCallID] {
			return
		}
		h.answered[r.ModelCallID] = true
		text, images := ResultContent(tool.Output{Result: r.Result})
		res := model.ToolResult{CallID: r.ModelCallID, Content: text, Images: images, IsError: r.IsError}
		if n := len(h.msgs); n > 0 && h.msgs[n-1].Role == model.User && h.msgs[n-1].Text == "" {
			h.msgs[n-1].ToolResults = append(h.msgs[n-1].ToolResults, res)
		} else {
			h.msgs = append(h.msgs, model.Message{Role: model.User, ToolResults: []model.ToolResult{res}})
		}
	}
}

// addUserText adds text to the conversation as the user's, joining it to
// a user message just before.
func (h *History) addUserText(text string) {
	if n := len(h.msgs); n > 0 && h.msgs[n-1].Role == model.User {
		h.msgs[n-1].Text = strings.TrimPrefix(h.msgs[n-1].Text+"\n\n"+text, "\n\n")
		return
	}
	h.msgs = append(h.msgs, model.Message{Role: model.User, Text: text})
}

// fillMissingResults gives every tool call without a result one that says
// so, right after its assistant message.
func fillMissingResults(msgs []model.Message, answered map[string]bool) []model.Message {
	var out []model.Message
	for i, m := range msgs {
		out = append(out, m)
		if m.Role != model.Assistant {
			continue
		}
		var missing []model.ToolResult
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				missing = append(missing, model.ToolResult{CallID: c.ID, Content: "no result: the turn ended before this call finished", IsError: true})
			}
		}
		if len(missing) == 0 {
			continue
		}
		if i+1 < len(msgs) && msgs[i+1].Role == model.User {
			msgs[i+1].ToolResults = append(missing, msgs[i+1].ToolResults...)
			continue
		}
		out = append(out, model.Message{Role: model.User, ToolResults: missing})
	}
	return out
}

// ResultText is what a text-only reader gets of a result: a string as it
// is, the text of a Result's content (other content named in brackets),
// or the JSON.
func ResultText(out tool.Output) string {
	text, _ := resultContent(out, false)
	return text
}

// ResultContent is what the model gets of a result: its text, as
// ResultText, and the images of a Result's content apart, decoded and
// named in order ("image 1 of the result"), for the provider to send as
// images (or name in a stand-in). An image whose data is not base64 is
// named in the text instead.
func ResultContent(out tool.Output) (string, []model.Image) {
	return resultContent(out, true)
}

func resultContent(out tool.Output, images bool) (string, []model.Image) {
	var s string
	if json.Unmarshal(out.Result, &s) == nil {
		return s, nil
	}
	var r tool.Result
	if json.Unmarshal(out.Result, &r) == nil && r.Content != nil {
		var parts []string
		var imgs []model.Image
		for _, c := range r.Content {
			switch c.Type {
			case "text":
				parts = append(parts, c.Text)
			case "resource":
				if c.Resource != nil {
					parts = append(parts, c.Resource.Text)
				}
			case "image":
				if images {
					if data, err := base64.StdEncoding.DecodeString(c.Data); err == nil {
						imgs = append(imgs, model.Image{MimeType: c.MimeType, Data: data, Name: fmt.Sprintf("image %d of the result", len(imgs)+1)})
						continue
					}
				}
				fallthrough
			default:
				parts = append(parts, fmt.Sprintf("[%s content, %s]", c.Type, c.MimeType))
			}
		}
		if len(parts) > 0 || len(imgs) > 0 {
			return strings.Join(parts, "\n"), imgs
		}
	}
	return string(out.Result), nil
}
