package turnloop

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/model"
)

// ContextConfig keeps a turn's requests within the model's context
// window. Before each model call the loop counts the request (History's
// Count: the previous call's reported input tokens plus what is new, at
// the session's own bytes per token); past Threshold of Window it first
// clears old tool results (context.cleared), then, if that is not
// enough, compacts (context.compacted): the conversation before the last
// KeepTurns turns is summarised by a model call and the model sees the
// summary in its place. A request that would not fit the window even so
// fails the turn, context_length_exceeded, before the model is called.
type ContextConfig struct {
	// Window is the model's context window in tokens; 0: unknown — no
	// count, no compaction.
	Window int64
	// Threshold is the share of Window past which a request is made
	// smaller; 0: DefaultThreshold.
	Threshold float64
	// KeepTurns is how many of the last turns are kept verbatim (the
	// running one among them); 0: DefaultKeepTurns.
	KeepTurns int
	// ClearBytes: results older than the kept turns and larger than this
	// are cleared first; 0: DefaultClearBytes, -1: none are.
	ClearBytes int
	// Summarizer writes the summaries; nil: the turn's model. Provider
	// and ModelName label its calls' usage (the turn's when empty).
	Summarizer          model.Provider
	Provider, ModelName string
	// Prompt is the summariser's system prompt; "": DefaultCompactionPrompt.
	Prompt string
	// SummaryTokens caps a summary; 0: DefaultSummaryTokens.
	SummaryTokens int
	// ResultReader names the tool a cleared result's stand-in offers to
	// read it again ("" offers none).
	ResultReader string
}

// The context engine's defaults.
const (
	DefaultThreshold     = 0.8
	DefaultKeepTurns     = 2
	DefaultClearBytes    = 2048
	DefaultSummaryTokens = 2048
)

// DefaultCompactionPrompt is the summariser's system prompt unless
// agent.yaml's compaction.prompt says another.
const DefaultCompactionPrompt = `You compact a conversation between a user and an AI agent that uses tools, so that the agent can go on with less context. ` +
	`Summarise the conversation you are given, keeping everything the agent needs to continue: the user's goals and requests, ` +
	`decisions made, facts learned, the tool calls made and what their results established (names, ids, numbers, paths, errors), ` +
	`what is done and what is still open. Keep an earlier summary's content. Be concise and factual; invent nothing; do not address the user. ` +
	`Answer with the summary only.`

// summaryHead and summaryTail frame a summary where the model reads it.
const (
	summaryHead = "[The earlier part of this conversation was summarised to fit the context window:]\n"
	summaryTail = "\n[End of the summary. The conversation goes on from here.]"
)

func (c ContextConfig) threshold() float64 {
	if c.Threshold <= 0 || c.Threshold > 1 {
		return DefaultThreshold
	}
	return c.Threshold
}

func (c ContextConfig) keepTurns() int { return cmp0(c.KeepTurns, DefaultKeepTurns) }

func (c ContextConfig) clearBytes() int { return cmp0(c.ClearBytes, DefaultClearBytes) }

func cmp0(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// calibrate records a model call's reported input tokens and the size of
// its request.
func (h *History) calibrate(tokens, bytes int64) {
	if tokens > 0 && bytes > 0 {
		h.lastTokens, h.lastBytes = tokens, bytes
	}
}

// Count is the tokens a request of bytes bytes will take: the previous
// call's reported input tokens plus what is new, at the bytes per token
// of that call (a token per four bytes before any call reported).
func (h *History) Count(bytes int64) int64 {
	if h.lastTokens <= 0 || h.lastBytes <= 0 {
		return (bytes + 3) / 4
	}
	if bytes >= h.lastBytes {
		return h.lastTokens + (bytes-h.lastBytes)*h.lastTokens/h.lastBytes
	}
	return bytes * h.lastTokens / h.lastBytes
}

// compact replaces every message up to through by the summary: the
// messages whose first event came later stay, the summary before them.
func (h *History) compact(through int64, summary string) {
	keep := 0
	for keep < len(h.msgs) && h.meta[keep].seq != 0 && h.meta[keep].seq <= through {
		keep++
	}
	h.msgs, h.meta = slices.Clone(h.msgs[keep:]), slices.Clone(h.meta[keep:])
	shift := -keep
	text := summaryHead + summary + summaryTail
	if len(h.msgs) > 0 && h.msgs[0].Role == model.User && len(h.msgs[0].ToolResults) == 0 {
		h.msgs[0].Text = text + "\n\n" + h.msgs[0].Text
	} else {
		h.msgs = slices.Insert(h.msgs, 0, model.Message{Role: model.User, Text: text})
		h.meta = slices.Insert(h.meta, 0, msgMeta{seq: through})
		shift++
	}
	var turns []cut
	for _, t := range h.turns {
		if t.msg >= keep {
			turns = append(turns, cut{msg: t.msg + shift, seq: t.seq})
		}
	}
	h.turns = turns
	var results []resultRef
	for _, r := range h.results {
		if r.msg >= keep {
			r.msg += shift
			results = append(results, r)
		}
	}
	h.results = results
}

// clear shows the results up to through larger than min as stand-ins.
func (h *History) clear(through int64, min int) {
	h.clearedThrough, h.clearMin = through, min
	for i, r := range h.results {
		if h.clearable(r, through, min) {
			h.standIn(i)
		}
	}
}

// clearable says whether a result is cleared by a clearing up to through
// of results larger than min.
func (h *History) clearable(r resultRef, through int64, min int) bool {
	if r.cleared || r.seq == 0 || r.seq > through {
		return false
	}
	res := h.msgs[r.msg].ToolResults[r.idx]
	return resultBytes(res) > min
}

func resultBytes(r model.ToolResult) int {
	n := len(r.Content)
	for _, img := range r.Images {
		n += len(img.Data)
	}
	return n
}

// standIn replaces result i by its stand-in.
func (h *History) standIn(i int) {
	r := &h.results[i]
	m := &h.msgs[r.msg]
	results := slices.Clone(m.ToolResults)
	res := results[r.idx]
	text := fmt.Sprintf("[The %d-byte result of %s was cleared from the context to make room.", resultBytes(res), r.tool)
	if h.ResultReader != "" && r.callID != "" {
		text += fmt.Sprintf(` Call %s with {"call": %q} to read it again.`, h.ResultReader, r.callID)
	}
	res.Content, res.Images = text+"]", nil
	results[r.idx] = res
	m.ToolResults = results
	r.cleared = true
}

// keptFrom is where a compaction keeping the last keep turns cuts: a
// turn's beginning after the first message; false when there is none
// (the conversation is one turn, or fewer than keep... then fewer are
// kept, down to the running turn alone).
func (h *History) keptFrom(keep int) (cut, bool) {
	for k := keep; k >= 1; k-- {
		if i := len(h.turns) - k; i >= 0 && h.turns[i].msg > 0 {
			return h.turns[i], true
		}
	}
	return cut{}, false
}

// clearing is what a clearing before the kept turns would clear: up to
// which seq, and how many results.
func (h *History) clearing(keep, min int) (int64, int) {
	c, ok := h.keptFrom(keep)
	if !ok || min < 0 {
		return 0, 0
	}
	n := 0
	for _, r := range h.results {
		if h.clearable(r, c.seq, min) {
			n++
		}
	}
	return c.seq, n
}

// fitContext makes the request fit the model's window (ContextConfig):
// it clears old results, then compacts, recording each, and fails with a
// context-length *model.Error when even so it would not fit. bytes is the
// request's size (RequestBytes); it returns the request to send and its
// size.
func fitContext(ctx context.Context, cfg Config, env Env, hist *History, req *model.Request, bytes int64) (*model.Request, int64, error) {
	c := cfg.Context
	if c.Window <= 0 {
		return req, bytes, nil
	}
	room := int64(answerRoom(cfg))
	limit := int64(c.threshold() * float64(c.Window))
	n := hist.Count(bytes)
	fits := func() bool { return n <= limit && n+room <= c.Window }
	if fits() {
		return req, bytes, nil
	}
	// Once past the threshold, go well below it (to three quarters of
	// it), so that the conversation is changed seldom: each change costs
	// the prompt cache what follows it.
	limit = limit * 3 / 4
	remake := func() {
		req = rebuild(cfg, hist)
		bytes = RequestBytes(req)
		n = hist.Count(bytes)
	}
	if through, k := hist.clearing(c.keepTurns(), c.clearBytes()); k > 0 {
		before := n
		hist.clear(through, c.clearBytes())
		remake()
		if err := env.Emit(ctx, api.ContextCleared{MinBytes: c.clearBytes(), Results: k, ThroughSeq: through, TokensBefore: before, TokensAfter: n}); err != nil {
			return nil, 0, err
		}
		if fits() {
			return req, bytes, nil
		}
	}
	if done, _, err := Compact(ctx, cfg, env, hist, "auto"); err != nil {
		return nil, 0, err
	} else if done != nil {
		remake()
	}
	if n+room > c.Window {
		return nil, 0, &model.Error{Reason: model.ReasonContextLength, Message: fmt.Sprintf(
			"the request would be about %d tokens, with %d more for the answer, over the model's context window of %d tokens, even compacted: its largest part is %s",
			n, room, c.Window, largestPart(req))}
	}
	return req, bytes, nil
}

// answerRoom is the tokens a call's answer may take.
func answerRoom(cfg Config) int {
	if cfg.MaxTokens > 0 {
		return cfg.MaxTokens
	}
	return model.MaxTokensDefault
}

// rebuild is the request of the conversation as it now is.
func rebuild(cfg Config, hist *History) *model.Request {
	msgs, _ := hist.Messages()
	return &model.Request{System: cfg.System, Messages: msgs, Tools: cfg.Tools, MaxTokens: cfg.MaxTokens, CacheKey: cfg.CacheKey}
}

// largestPart names the largest part of a request, for an error saying
// what does not fit.
func largestPart(req *model.Request) string {
	what, size := "the system prompt", len(req.System)
	tools := 0
	for _, t := range req.Tools {
		tools += len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	if tools > size {
		what, size = fmt.Sprintf("the %d tools' definitions", len(req.Tools)), tools
	}
	for i, m := range req.Messages {
		if len(m.Text) > size {
			what, size = fmt.Sprintf("message %d (%s text)", i+1, m.Role), len(m.Text)
		}
		for _, c := range m.ToolCalls {
			if len(c.Input) > size {
				what, size = fmt.Sprintf("the input of a call of %s in message %d", c.Name, i+1), len(c.Input)
			}
		}
		for _, r := range m.ToolResults {
			if b := resultBytes(r); b > size {
				what, size = fmt.Sprintf("the result of call %s in message %d", r.CallID, i+1), b
			}
		}
	}
	return fmt.Sprintf("%s, %d bytes", what, size)
}

// Compact summarises the conversation before its last turns
// (ContextConfig.KeepTurns) with a model call, records the call's usage
// and context.compacted (trigger: "auto" or "manual") in one write, and
// applies it to hist. It returns nil and why when there is nothing to
// summarise: the conversation is its last turns.
func Compact(ctx context.Context, cfg Config, env Env, hist *History, trigger string) (*api.ContextCompacted, string, error) {
	c := cfg.Context
	at, ok := hist.keptFrom(c.keepTurns())
	if !ok {
		return nil, "there is nothing to summarise: the conversation is its last turn", nil
	}
	before := hist.Count(RequestBytes(rebuild(cfg, hist)))
	scfg := cfg
	if c.Summarizer != nil {
		scfg.Model = c.Summarizer
	}
	if c.Provider != "" {
		scfg.Provider = c.Provider
	}
	if c.ModelName != "" {
		scfg.ModelName = c.ModelName
	}
	text := transcript(hist.before(at.msg), summaryBytes(c, hist))
	prompt := c.Prompt
	if prompt == "" {
		prompt = DefaultCompactionPrompt
	}
	sreq := &model.Request{System: prompt, MaxTokens: cmp0(c.SummaryTokens, DefaultSummaryTokens),
		Messages: []model.Message{{Role: model.User, Text: "The conversation to summarise:\n\n" + text + "\n\nWrite the summary now."}}}
	done, err := env.Admit(ctx, sreq)
	if err != nil {
		return nil, "", err
	}
	start := time.Now()
	ans, err := callModel(ctx, scfg, quiet{env}, sreq)
	if err != nil {
		done()
		return nil, "", fmt.Errorf("compacting the conversation: %w", err)
	}
	summary := strings.TrimSpace(ans.text)
	if summary == "" {
		done()
		return nil, "", &model.Error{Reason: model.ReasonProvider, Message: "compacting the conversation: the model answered no summary"}
	}
	usage := UsageOf(scfg, ans.end, time.Since(start))
	usage.Purpose = "compaction"
	tags := maps.Clone(hist.Tags())
	hist.compact(at.seq, summary)
	rec := api.ContextCompacted{Summary: summary, Tags: tags, ThroughSeq: at.seq, TokensBefore: before,
		TokensAfter: hist.Count(RequestBytes(rebuild(cfg, hist))), Trigger: trigger}
	err = env.Emit(ctx, usage, rec)
	done()
	if err != nil {
		return nil, "", err
	}
	return &rec, "", nil
}

// summaryBytes bounds the transcript a summary is written from: what
// fits 70% of the window at the session's bytes per token.
func summaryBytes(c ContextConfig, hist *History) int {
	perToken := int64(4)
	if hist.lastTokens > 0 && hist.lastBytes > hist.lastTokens {
		perToken = hist.lastBytes / hist.lastTokens
	}
	return int(c.Window * 7 / 10 * perToken)
}

// quiet is an Env that records no text deltas: a summary's text is not
// the turn's answer.
type quiet struct{ Env }

func (q quiet) Emit(ctx context.Context, payloads ...api.Payload) error {
	kept := slices.DeleteFunc(slices.Clone(payloads), func(p api.Payload) bool {
		switch p.(type) {
		case api.MessageDelta, api.ReasoningDelta, api.Reasoning:
			return true
		}
		return false
	})
	if len(kept) == 0 {
		return nil
	}
	return q.Env.Emit(ctx, kept...)
}

// Transcript limits: a call's input and a result are cut to these many
// bytes in what the summariser reads.
const (
	transcriptInput  = 1000
	transcriptResult = 4000
)

// transcript writes messages as text for the summariser, at most limit
// bytes: the start and the end kept when it is longer.
func transcript(msgs []model.Message, limit int) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Text != "" {
			fmt.Fprintf(&b, "%s: %s\n\n", roleName(m.Role), m.Text)
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "Assistant called %s (call %s) with %s\n\n", c.Name, c.ID, cutText(string(c.Input), transcriptInput))
		}
		for _, r := range m.ToolResults {
			kind := "Result"
			if r.IsError {
				kind = "Error result"
			}
			fmt.Fprintf(&b, "%s of call %s: %s\n\n", kind, r.CallID, cutText(r.Content, transcriptResult))
		}
	}
	s := b.String()
	if limit <= 0 || len(s) <= limit {
		return s
	}
	head := limit / 5
	tail := limit - head
	return strings.ToValidUTF8(s[:head], "") + fmt.Sprintf("\n[… %d bytes left out …]\n", len(s)-limit) + strings.ToValidUTF8(s[len(s)-tail:], "")
}

func roleName(r model.Role) string {
	if r == model.Assistant {
		return "Assistant"
	}
	return "User"
}

// cutText cuts s to n bytes, saying how much was left out.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + fmt.Sprintf("… [%d more bytes]", len(s)-n)
}
