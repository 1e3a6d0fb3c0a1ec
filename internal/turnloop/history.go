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
// died) gets a result saying so, as the APIs require one. A result is
// paired with the latest call of its id still without one, so servers
// that number calls per answer (call_0 in every turn) pair right.
//
// It also keeps what the context engine needs (context.go): where each
// turn begins (a place the conversation may be cut without separating a
// call from its result), the seq of each message's first event, the last
// call's reported input tokens with the size of its request (to count the
// next), and it applies context.compacted (the summary in place of all up
// to its throughSeq) and context.cleared (old results replaced by a
// stand-in). So a history read from a compaction's throughSeq on is the
// history read from event 1.
//
// It keeps the tags tools put on the session too. Add the events in
// order, then read Messages.
type History struct {
	msgs []model.Message
	meta []msgMeta // one per message
	tags map[string]string
	// turns are the places a turn began: a message index and the seq
	// before its turn.started.
	turns []cut
	// turnBegins says the next message begins a turn, whose turn.started
	// is after turnSeq.
	turnBegins bool
	turnSeq    int64
	started    bool   // the channel's onStart ran (channel.started)
	lastUser   string // the last user message's text
	// reasoning are the blocks recorded since the last assistant message,
	// for the next one (the answer they led to).
	reasoning []model.Reasoning
	// results are the tool results, where they are in msgs.
	results []resultRef
	// cleared: results up to clearedThrough larger than clearMin are
	// shown as a stand-in (context.cleared).
	clearedThrough int64
	clearMin       int
	// calibration: the last model call's reported input tokens and the
	// size of what it sent.
	lastTokens, lastBytes int64
	// ResultReader is the tool a cleared result's stand-in names for
	// reading it again ("" names none).
	ResultReader string
}

// msgMeta is what History knows of a message: the seq of its first event
// (0: added by Push, after every stored event) and, for an assistant's,
// the calls answered.
type msgMeta struct {
	seq      int64
	answered map[string]bool
}

// cut is a place a conversation may be cut: before message msg, with
// everything up to seq before it.
type cut struct {
	msg int
	seq int64
}

// resultRef is where a tool result is: message and index, the seq of its
// action.result, the call's id and tool, and whether it is cleared.
type resultRef struct {
	msg, idx int
	seq      int64
	callID   string
	tool     string
	cleared  bool
}

// ChannelStarted reports whether the session's channel's onStart hook has
// run (a channel.started event, or a compaction, which follows a turn).
func (h *History) ChannelStarted() bool { return h.started }

// LastUserMessage returns the text of the last user message.
func (h *History) LastUserMessage() string { return h.lastUser }

// NewHistory returns an empty history.
func NewHistory() *History {
	return &History{tags: map[string]string{}}
}

// Messages returns the conversation so far, and the session's tags.
func (h *History) Messages() ([]model.Message, map[string]string) {
	return fillMissingResults(slices.Clone(h.msgs), h.meta), h.tags
}

// Tags returns the session's tags (not a copy).
func (h *History) Tags() map[string]string { return h.tags }

// before is the conversation before message i (a place keptFrom gives),
// as Messages gives it: i counts the history's own messages, not the
// results Messages adds for calls without one.
func (h *History) before(i int) []model.Message {
	return fillMissingResults(slices.Clone(h.msgs[:i]), h.meta[:i])
}

// Len is the number of messages.
func (h *History) Len() int { return len(h.msgs) }

// Push adds a message the turn's loop made (not read from the store).
func (h *History) Push(m model.Message) {
	if m.Role == model.User && len(m.ToolResults) > 0 {
		for _, r := range m.ToolResults {
			h.markAnswered(r.CallID)
		}
	}
	h.msgs = append(h.msgs, m)
	h.meta = append(h.meta, msgMeta{})
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
			h.append(e.Seq, model.Message{Role: model.Assistant, Text: m.Text, Reasoning: h.reasoning})
		} else {
			h.lastUser = m.Text
			h.addUserText(e.Seq, m.Text)
		}
		h.reasoning = nil
	case api.KindReasoning:
		r, err := api.Decode[api.Reasoning](e)
		if err != nil {
			return
		}
		h.reasoning = append(h.reasoning, model.Reasoning{Text: r.Text, Signature: r.Signature, Redacted: r.Redacted})
	case api.KindTurnStarted:
		h.reasoning = nil
		h.turnBegins, h.turnSeq = true, e.Seq-1
	case api.KindTurnCompleted, api.KindTurnFailed, api.KindTurnResumed:
		h.reasoning = nil // an answer that never came
	case api.KindChannelStarted:
		c, err := api.Decode[api.ChannelStarted](e)
		if err != nil {
			return
		}
		h.started = true
		// What onStart found goes with the first message.
		for _, text := range c.Context {
			h.addUserText(e.Seq, text)
		}
	case api.KindModelUsage:
		u, err := api.Decode[api.ModelUsage](e)
		if err == nil && u.Reported && u.Purpose == "" && u.RequestBytes > 0 {
			h.calibrate(u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, u.RequestBytes)
		}
	case api.KindContextCompacted:
		c, err := api.Decode[api.ContextCompacted](e)
		if err != nil {
			return
		}
		for k, v := range c.Tags {
			h.tags[k] = v
		}
		h.started = true
		h.compact(c.ThroughSeq, c.Summary)
	case api.KindContextCleared:
		c, err := api.Decode[api.ContextCleared](e)
		if err == nil {
			h.clear(c.ThroughSeq, c.MinBytes)
		}
	case api.KindActionsRequested:
		a, err := api.Decode[api.ActionsRequested](e)
		if err != nil {
			return
		}
		if n := len(h.msgs); n == 0 || h.msgs[n-1].Role != model.Assistant {
			h.append(e.Seq, model.Message{Role: model.Assistant})
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
		}
	case api.KindActionResult:
		r, err := api.Decode[api.ActionResult](e)
		if err != nil || r.Direct || r.ModelCallID == "" || !h.markAnswered(r.ModelCallID) {
			return
		}
		text, images := ResultContent(tool.Output{Result: r.Result})
		res := model.ToolResult{CallID: r.ModelCallID, Content: text, Images: images, IsError: r.IsError}
		if n := len(h.msgs); n == 0 || h.msgs[n-1].Role != model.User || h.msgs[n-1].Text != "" {
			h.append(e.Seq, model.Message{Role: model.User})
		}
		last := len(h.msgs) - 1
		h.msgs[last].ToolResults = append(h.msgs[last].ToolResults, res)
		ref := resultRef{msg: last, idx: len(h.msgs[last].ToolResults) - 1, seq: e.Seq, callID: r.CallID, tool: r.Tool}
		h.results = append(h.results, ref)
		if h.clearable(ref, h.clearedThrough, h.clearMin) {
			h.standIn(len(h.results) - 1)
		}
	}
}

// markAnswered pairs a result with the latest assistant message that
// called id without an answer yet; false if there is none (a result of
// no call of the model's, or a second one).
func (h *History) markAnswered(id string) bool {
	for i := len(h.msgs) - 1; i >= 0; i-- {
		m := h.msgs[i]
		if m.Role != model.Assistant || h.meta[i].answered[id] {
			continue
		}
		if slices.ContainsFunc(m.ToolCalls, func(c model.ToolCall) bool { return c.ID == id }) {
			if h.meta[i].answered == nil {
				h.meta[i].answered = map[string]bool{}
			}
			h.meta[i].answered[id] = true
			return true
		}
	}
	return false
}

// append adds a message whose first event is seq; the first message after
// a turn.started marks the turn's beginning.
func (h *History) append(seq int64, m model.Message) {
	if h.turnBegins {
		h.turns = append(h.turns, cut{msg: len(h.msgs), seq: h.turnSeq})
	}
	h.turnBegins = false
	h.msgs = append(h.msgs, m)
	h.meta = append(h.meta, msgMeta{seq: seq})
}

// addUserText adds text to the conversation as the user's, joining it to
// a user message just before (which then begins no turn of its own).
func (h *History) addUserText(seq int64, text string) {
	if n := len(h.msgs); n > 0 && h.msgs[n-1].Role == model.User {
		h.msgs[n-1].Text = strings.TrimPrefix(h.msgs[n-1].Text+"\n\n"+text, "\n\n")
		h.turnBegins = false
		return
	}
	h.append(seq, model.Message{Role: model.User, Text: text})
}

// fillMissingResults gives every tool call without a result one that says
// so, right after its assistant message.
func fillMissingResults(msgs []model.Message, meta []msgMeta) []model.Message {
	var out []model.Message
	for i, m := range msgs {
		out = append(out, m)
		if m.Role != model.Assistant {
			continue
		}
		var missing []model.ToolResult
		for _, c := range m.ToolCalls {
			if !meta[i].answered[c.ID] {
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
