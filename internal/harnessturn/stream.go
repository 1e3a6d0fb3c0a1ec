package harnessturn

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/progress"
	"github.com/agentsdk/agentsdk/tool"
)

// stream is one harness turn's view of what its harness reports:
// session/update notifications mapped onto the session's stream — text
// chunks as message.delta and, whole, message; the harness's own tool
// calls (ACP's kinds, titles, locations, diffs, output) as
// actions.requested and action.result; plans as plan — and the calls its
// permission requests parked.
type stream struct {
	sink Sink
	spec harness.Spec
	ctx  context.Context // the turn's

	mu    sync.Mutex
	text  strings.Builder // the answer since the last call
	steps int             // answers recorded
	calls map[acp.ToolCallId]*harnessCall
	// live is whether the turn's prompt is sent: what a harness reports
	// before it is what it replays of its history (session/load), as are
	// later reports of the calls of earlier turns (earlier).
	live    bool
	earlier map[string]bool
	emitErr error // the first write that failed: the turn fails with it
	// deltas are text and thought deltas not yet written: written together
	// every deltaBatch, or with the next event (one store write per
	// batch, as the native loop's deltas are).
	deltas []api.Payload
	flush  *time.Timer
}

// deltaBatch is how long a harness's text deltas wait to be written
// together.
const deltaBatch = 50 * time.Millisecond

// harnessCall is one of the harness's own tool calls.
type harnessCall struct {
	id        string // ours: tool_<kind>_<random>
	toolID    acp.ToolCallId
	kind      string
	title     string
	input     json.RawMessage
	locations []string
	content   []acp.ToolCallContent
	output    any
	ours      bool // a call of the agent's MCP server: its host records it
	running   bool // ours, and not ended: the harness waits on the host
	announced bool
	done      bool // its result is recorded (or its decision recorded it)
	// record records the result of a call a person approved, with its
	// approval (Decision.Record).
	record  func(tool.Output, time.Duration) error
	started time.Time
	// shown is the call's text content as last seen; written, the bytes
	// of action.output it had (at most maxOutput: capped once it went
	// over).
	shown   string
	written int
	capped  bool
}

// call returns the harness call of id, made on first sight.
func (r *stream) call(id acp.ToolCallId) *harnessCall {
	c := r.calls[id]
	if c == nil {
		c = &harnessCall{toolID: id, kind: string(acp.ToolKindOther), started: time.Now()}
		r.calls[id] = c
	}
	return c
}

// update is a session/update, in the order the harness sent them.
func (r *stream) update(ctx context.Context, u acp.SessionUpdate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.live || r.replayed(u) {
		return
	}
	switch {
	case u.AgentMessageChunk != nil:
		if t := u.AgentMessageChunk.Content.Text; t != nil && t.Text != "" {
			r.text.WriteString(t.Text)
			r.delta(api.MessageDelta{Text: t.Text})
		}
	case u.AgentThoughtChunk != nil:
		if t := u.AgentThoughtChunk.Content.Text; t != nil && t.Text != "" {
			r.delta(api.ReasoningDelta{Text: t.Text})
		}
	case u.ToolCall != nil:
		tc := u.ToolCall
		c := r.call(tc.ToolCallId)
		c.describe(string(tc.Kind), &tc.Title, tc.RawInput, tc.Locations, tc.Content, tc.RawOutput)
		r.progress(c, tc.Status)
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		c := r.call(tu.ToolCallId)
		kind := ""
		if tu.Kind != nil {
			kind = string(*tu.Kind)
		}
		c.describe(kind, tu.Title, tu.RawInput, tu.Locations, tu.Content, tu.RawOutput)
		var status acp.ToolCallStatus
		if tu.Status != nil {
			status = *tu.Status
		}
		r.progress(c, status)
	case u.Plan != nil:
		p := api.Plan{Entries: []api.PlanEntry{}}
		for _, e := range u.Plan.Entries {
			p.Entries = append(p.Entries, api.PlanEntry{Content: e.Content, Priority: string(e.Priority), Status: string(e.Status)})
		}
		r.emit(p)
	}
}

// busy reports whether the harness waits on one of its calls of the
// agent's own tools (which run on the host, outside the connection).
func (r *stream) busy() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		if c.ours && c.running {
			return true
		}
	}
	return false
}

// prompted marks the turn's prompt as sent: what the harness reports from
// now on is the turn's.
func (r *stream) prompted() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.live = true
}

// replayed reports whether u is of a call of an earlier turn, replayed.
func (r *stream) replayed(u acp.SessionUpdate) bool {
	switch {
	case u.ToolCall != nil:
		return r.earlier[string(u.ToolCall.ToolCallId)]
	case u.ToolCallUpdate != nil:
		return r.earlier[string(u.ToolCallUpdate.ToolCallId)]
	}
	return false
}

// describe takes what an update says about a call.
func (c *harnessCall) describe(kind string, title *string, raw any, locs []acp.ToolCallLocation, content []acp.ToolCallContent, output any) {
	if kind != "" {
		c.kind = clip(kind, 64)
	}
	if title != nil && *title != "" {
		c.title = clip(*title, maxTitle)
	}
	if raw != nil {
		if b, err := marshalPlain(raw); err == nil && string(b) != "{}" && string(b) != "null" {
			if len(b) > maxInput {
				b, _ = marshalPlain(map[string]string{"truncated": clip(string(b), maxInput)})
			}
			c.input = b
		}
	}
	if len(locs) > 0 {
		c.locations = c.locations[:0]
		for _, l := range locs {
			c.locations = append(c.locations, l.Path)
		}
	}
	if len(content) > 0 {
		c.content = content
	}
	if output != nil {
		c.output = output
	}
	c.ours = c.ours || isAgentMCPCall(c)
}

// isAgentMCPCall reports whether a harness call is a call of the agent's
// own MCP server, which the host records as it runs it: Claude titles it
// mcp__agent__<tool>, Gemini's id is mcp_agent_<tool>__…, Codex's input
// names the server (server, or server_name in its approval request).
func isAgentMCPCall(c *harnessCall) bool {
	for _, s := range []string{c.title, string(c.toolID)} {
		if strings.HasPrefix(s, "mcp__"+ServerName+"__") || strings.HasPrefix(s, "mcp_"+ServerName+"_") ||
			strings.Contains(s, "("+ServerName+" MCP Server)") {
			return true
		}
	}
	var in struct {
		Server string `json:"server"`
		// Codex's approval of an MCP call (an elicitation, its own id:
		// mcp_tool_call_approval_<call>) names the server so.
		ServerName string `json:"server_name"`
	}
	return len(c.input) > 0 && json.Unmarshal(c.input, &in) == nil && (in.Server == ServerName || in.ServerName == ServerName)
}

// progress announces a call once it says what it does, and records its
// result when it ends.
func (r *stream) progress(c *harnessCall, status acp.ToolCallStatus) {
	ends := status == acp.ToolCallStatusCompleted || status == acp.ToolCallStatusFailed
	if c.ours {
		c.running = !ends
		return
	}
	if !c.announced && (ends || status == acp.ToolCallStatusInProgress || c.input != nil) {
		r.announce(c)
	}
	if ends {
		r.result(c, harnessOutput(c, status == acp.ToolCallStatusFailed))
		return
	}
	r.output(c, c.announced && status == acp.ToolCallStatusInProgress)
}

// output writes as action.output what a running call's text content
// shows that it did not before (a command's output as the harness streams
// it), in the next batch of deltas: the new tail where the content grew,
// the whole where it changed; at most maxOutput bytes a call, the last
// record marked truncated. Not running (before it starts: a
// description), the content is only noted.
func (r *stream) output(c *harnessCall, running bool) {
	if c.capped || c.done {
		return
	}
	var b strings.Builder
	for _, ct := range c.content {
		if ct.Content != nil && ct.Content.Content.Text != nil {
			b.WriteString(ct.Content.Content.Text.Text)
		}
	}
	text := b.String()
	if !running {
		c.shown = text
		return
	}
	next, found := strings.CutPrefix(text, c.shown)
	if !found {
		next = text
	}
	if next == "" {
		return
	}
	if room := maxOutput - c.written; len(next) > room {
		next = strings.ToValidUTF8(next[:room], "")
		c.capped = true
	}
	c.shown, c.written = text, c.written+len(next)
	// Written with the text deltas, in batches.
	r.delta(api.ActionOutput{CallID: c.id, Tool: ToolName(c.kind), Text: next, Truncated: c.capped})
}

// announce records a call on the stream: the answer before it, then
// actions.requested with its kind, title and files.
func (r *stream) announce(c *harnessCall) {
	if c.announced {
		return
	}
	c.announced = true
	if c.id == "" {
		c.id = tool.NewCallID(strings.TrimPrefix(ToolName(c.kind), "harness_")) // a known kind: the id is URL-safe
	}
	r.flushText()
	r.emit(api.ActionsRequested{Actions: []api.Action{{CallID: c.id, ModelCallID: string(c.toolID), Tool: ToolName(c.kind),
		Input: c.inputOrEmpty(), Title: c.title, Kind: c.kind, Locations: c.locations}}})
}

// ToolName is the tool a harness call of kind is recorded as:
// harness_<kind>, harness_other for a kind ACP does not name.
func ToolName(kind string) string {
	if slices.Contains(harness.Kinds, kind) {
		return "harness_" + kind
	}
	return "harness_other"
}

func (c *harnessCall) inputOrEmpty() json.RawMessage {
	if c.input == nil {
		return json.RawMessage(`{}`)
	}
	return c.input
}

// result records a call's result, once: with its approval when a person
// approved it (so that its outcome is the call's), else on the stream.
func (r *stream) result(c *harnessCall, out tool.Output) {
	if c.done {
		return
	}
	c.done = true
	took := time.Since(c.started)
	if c.record != nil {
		if err := c.record(out, took); err != nil && r.emitErr == nil {
			r.emitErr = err
		}
		return
	}
	r.emit(api.ActionResult{CallID: c.id, ModelCallID: string(c.toolID), Tool: ToolName(c.kind), IsError: out.IsError, Result: out.Result,
		DurationMs: took.Milliseconds()})
}

// harnessOutput is what a finished harness call gave: its raw output (a
// command's stdout, stderr and exit code), else its content (text,
// diffs, terminals) as the harness showed it.
func harnessOutput(c *harnessCall, failed bool) tool.Output {
	var v any = c.output
	if v == nil {
		var parts []any
		for _, ct := range c.content {
			switch {
			case ct.Content != nil && ct.Content.Content.Text != nil:
				parts = append(parts, ct.Content.Content.Text.Text)
			case ct.Diff != nil:
				parts = append(parts, map[string]any{"diff": diffJSON(ct.Diff)})
			case ct.Terminal != nil:
				parts = append(parts, map[string]any{"terminal": ct.Terminal.TerminalId})
			}
		}
		switch len(parts) {
		case 0:
			v = "done"
			if failed {
				v = "failed"
			}
		case 1:
			v = parts[0]
		default:
			v = parts
		}
	}
	b, err := marshalPlain(v)
	if err != nil {
		b, _ = marshalPlain(fmt.Sprint(v))
	}
	if len(b) > maxResult {
		// The harness showed its model what it chose to; the stream keeps
		// the head of it.
		b, _ = marshalPlain(fmt.Sprintf("%s… [%d bytes in all; the stream keeps the first %d]", strings.ToValidUTF8(string(b[:maxResult]), ""), len(b), maxResult))
	}
	return tool.Output{Result: b, IsError: failed}
}

// The most a harness call's title, input and result keep on the stream.
const (
	maxTitle  = 4 << 10
	maxInput  = 64 << 10
	maxResult = 256 << 10
	maxOutput = progress.OutputLimit // as a native call's live output
)

// clip is s cut to at most n bytes, at a character's start.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// diffJSON is a diff a harness showed, as the stream and approvers see it.
func diffJSON(d *acp.ToolCallContentDiff) map[string]any {
	v := map[string]any{"path": d.Path, "newText": d.NewText}
	if d.OldText != nil {
		v["oldText"] = *d.OldText
	}
	return v
}

// marshalPlain is v's JSON without HTML escapes: a shell command's > and
// & read as the harness sent them.
func marshalPlain(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// flushText records the answer so far as a message.
func (r *stream) flushText() {
	if r.text.Len() == 0 {
		return
	}
	r.emit(api.Message{Role: api.RoleAssistant, Text: r.text.String()})
	r.text.Reset()
	r.steps++
}

// delta holds a text delta (or a running call's output) for the next
// write (r.mu held).
func (r *stream) delta(p api.Payload) {
	r.deltas = append(r.deltas, p)
	if r.flush == nil {
		r.flush = time.AfterFunc(deltaBatch, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.emit()
		})
	}
}

// emit appends the deltas held and p to the turn's stream, in one write
// (r.mu held); the first failure is kept, and the turn fails with it.
func (r *stream) emit(p ...api.Payload) {
	if r.flush != nil {
		r.flush.Stop()
		r.flush = nil
	}
	if len(r.deltas) > 0 {
		p = append(r.deltas, p...)
		r.deltas = nil
	}
	if r.emitErr != nil || len(p) == 0 {
		return
	}
	if err := r.sink.Emit(context.WithoutCancel(r.ctx), p...); err != nil {
		r.emitErr = err
	}
}

// finish ends the run when the prompt returned (perr: why it failed):
// the answer's last text recorded, and every call the harness announced
// and did not end given a result, so that every call on the stream has
// one.
func (r *stream) finish(perr error) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushText()
	r.emit() // the deltas still held
	for _, c := range r.calls {
		if c.ours || c.done || (!c.announced && c.record == nil) {
			continue
		}
		msg := "the harness ended its turn without saying how this call ended"
		if perr != nil {
			msg = "the harness turn ended (" + firstLine(perr.Error()) + ") before this call did"
		}
		r.result(c, tool.ErrorOutput(msg))
	}
	return max(r.steps, 1), r.emitErr
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
