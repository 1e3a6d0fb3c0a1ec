package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/sys/unix"
	"golang.org/x/text/width"

	"github.com/agentsdk/agentsdk/api"
)

// Limits of what the view shows of a call, in columns or lines.
const (
	inputPreview  = 60  // a call's input, on its ▸ line
	resultPreview = 100 // a call's result, on its ✓/✗ line
	outputColumns = 120 // a line of a call's live output
	outputLines   = 5   // the lines shown of one batch of live output (not a terminal)
	outputTail    = 3   // the latest lines of live output shown under a running call (a terminal)
	partialLimit  = 4 << 10
)

// ANSI select-graphic-rendition parameters of the view's styles.
const (
	styleBold   = "1"
	styleDim    = "2"
	styleRed    = "31"
	styleGreen  = "32"
	styleYellow = "33"
	styleCyan   = "36"
)

// ANSI control sequences the view writes on a terminal.
const (
	eraseLine = "\x1b[2K" // erase the line the cursor is on
	cursorUp  = "\x1b[1A" // one line up, same column
)

// view renders a session's event stream as a conversation, for people:
// the assistant's text inline as it streams, each tool call as one compact
// line that fills in with its outcome, progress and live output, a parked
// call with the commands that decide it, turns as short separators.
//
// On a terminal (tty) the calls still running form a live region at the
// bottom, rewritten in place (\r, erase-line) as their progress, output and
// outcomes come; a call's outcome then becomes a line of its own above it.
// Elsewhere the view is append-only: each change is a line of its own.
// Colour is a separate choice (see [colorWanted]). All text from the
// stream is cleaned of control characters before it is written.
//
// Call event for each event in order, then end once.
type view struct {
	w     io.Writer
	color bool       // ANSI colours and styles
	tty   bool       // a terminal: the live region is rewritten in place
	width func() int // the terminal's width in columns (tty); nil: 80
	url   string     // the host's --url, added to the approve/deny commands; "" leaves them as the host wrote them
	loc   *time.Location

	buf      bytes.Buffer         // what the current event writes, written at once
	calls    map[string]*viewCall // the calls not yet done, by call id
	order    []string             // their ids, in request order
	drawn    int                  // the rows the live region takes on screen; the cursor ends its last one
	rows     []string             // those rows, as drawn
	dirty    bool                 // the live region changed (or was erased) since it was drawn
	midLine  bool                 // the cursor follows streamed text, not at the start of a line
	streamed string               // the assistant's text streamed since its last message
	fold     fold                 // the model's reasoning, shown folded (viewusage.go)
}

// viewCall is a call the view shows as running.
type viewCall struct {
	id, tool string
	input    string   // its input, one line
	parked   bool     // waiting for a decision
	progress string   // its latest progress, as shown; "" before any
	tail     []string // its latest output lines (tty)
	partial  string   // output after its last newline
}

// newView returns the view of a stream written to f: on a terminal, live
// and (unless NO_COLOR) in colour; elsewhere append-only and plain. url is
// the host's --url, for the commands that decide a parked call.
func newView(f *os.File, url string) *view {
	_, term := terminalWidth(f)
	term = term && os.Getenv("TERM") != "dumb"
	v := &view{w: f, tty: term, color: colorWanted(term), url: url}
	if term {
		v.width = func() int {
			n, _ := terminalWidth(f)
			return n
		}
	}
	return v
}

// terminalWidth returns the width of the terminal f writes to, and
// whether it is one (an ioctl only a terminal answers). The width is 80
// when the terminal does not say.
func terminalWidth(f *os.File) (int, bool) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, false
	}
	if ws.Col == 0 {
		return 80, true
	}
	return int(ws.Col), true
}

// colorWanted says whether to write colour to a terminal (or not, term
// false): not when NO_COLOR is set to anything (https://no-color.org), nor
// to a dumb terminal.
func colorWanted(term bool) bool {
	return term && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// event renders one event.
func (v *view) event(e api.Event) {
	defer v.flush()
	p := api.PayloadOf(e.Kind)
	if p == nil || json.Unmarshal(e.Data, p) != nil {
		v.line(seg{styleDim, "· " + clean(string(e.Kind))})
		return
	}
	if e.Kind != api.KindReasoningDelta && e.Kind != api.KindReasoning {
		v.foldReasoning()
	}
	if e.Kind != api.KindMessageDelta && e.Kind != api.KindMessage {
		v.endText()
	}
	switch p := p.(type) {
	case *api.SessionCreated:
		v.line(seg{styleDim, fmt.Sprintf("● session %s opened by %s (%s, %s)", clean(e.SessionID), clean(p.Principal), clean(p.Channel), clean(string(p.Mode)))})
	case *api.SessionTagged:
		v.line(seg{styleDim, "# tagged " + clean(p.Key) + "=" + clean(p.Value)})
	case *api.WorkspaceMoved:
		v.line(seg{styleDim, "⇢ workspace moved from " + clean(p.From) + " to " + clean(p.To)})
	case *api.TurnStarted:
		v.streamed, v.fold = "", fold{}
		text := "── turn " + clean(e.TurnID)
		switch p.Kind {
		case api.TurnCall:
			text += ": call " + clean(p.Tool)
		case api.TurnCompact:
			text += ": compact"
		}
		v.line(seg{styleDim, text + " ──"})
	case *api.MessageDelta:
		v.streamed += p.Text
		v.text(cleanText(p.Text))
	case *api.Message:
		v.message(p)
	case *api.ActionsRequested:
		for _, a := range p.Actions {
			in := jsonPreview(a.Input)
			if a.InputText != "" {
				in = a.InputText
			}
			c := v.call(a.CallID, a.Tool)
			c.input = clean(in)
			if a.Title != "" {
				// A harness's own call: what it does, as the harness says.
				c.input = clean(a.Title)
			}
			if !v.tty {
				v.line(c.requested()...)
			}
		}
	case *api.ApprovalRequested:
		v.approvalRequested(e, p)
	case *api.ApprovalResolved:
		v.approvalResolved(e, p)
	case *api.ApprovalVoted:
		v.line(seg{styleGreen, "✓ "}, seg{styleBold, clean(p.Tool)}, seg{styleGreen, fmt.Sprintf(" approved %d of %d by %s", p.Approvals, p.Quorum, clean(p.By))},
			seg{styleDim, " at " + v.clock(p.At, e.Time)}, seg{"", changesText(p.Changes)})
	case *api.ActionProgress:
		c := v.call(p.CallID, p.Tool)
		text := progressText(*p)
		if text == c.progress {
			break
		}
		c.progress, v.dirty = text, true
		if !v.tty {
			v.line(c.running()...)
		}
	case *api.ActionOutput:
		v.output(p)
	case *api.ActionResult:
		v.result(p)
	case *api.ArtifactCreated:
		v.line(seg{styleCyan, "◆ "}, seg{"", "artifact " + clean(p.Name)},
			seg{styleDim, fmt.Sprintf(" (%s, %s)", clean(p.ContentType), byteSize(p.Size))})
	case *api.TurnCompleted:
		v.turnEnded()
		v.line(seg{styleDim, "── turn completed" + steps(p.Steps) + " ──"})
		v.turnUsage(p.Usage, "")
	case *api.TurnFailed:
		v.turnEnded()
		reason := strings.ReplaceAll(cleanText(p.Reason), "\n", "\n  ")
		v.line(seg{styleRed + ";" + styleBold, "✗ turn failed" + steps(p.Steps) + ": "}, seg{styleRed, reason})
		v.turnUsage(p.Usage, p.Code)
	case *api.ChannelStarted:
		text := "▸ channel " + clean(p.Channel) + " started"
		if n := len(p.Context); n > 0 {
			text += fmt.Sprintf(" (%d context note(s) for the model)", n)
		}
		v.line(seg{styleDim, text})
	case *api.ReminderSet:
		v.line(seg{styleDim, fmt.Sprintf("⏰ reminder %s set for %s: %s", clean(p.Key), v.clock(p.At, e.Time), fit(clean(p.Message), 80))})
	case *api.ReminderFired:
		v.line(seg{styleCyan, "⏰ "}, seg{"", "reminder " + clean(p.Key) + " fired"})
	case *api.ReasoningDelta:
		v.reasoningDelta(p)
	case *api.Reasoning:
		v.reasoning(p)
	case *api.ModelRetry:
		v.retry(p)
	case *api.ModelUsage:
		v.fold = fold{} // the model call is over
	case *api.ContextCleared:
		v.line(seg{styleDim, fmt.Sprintf("⇤ context: %d old result(s) cleared, %s → %s tokens", p.Results, count(p.TokensBefore), count(p.TokensAfter))})
	case *api.ContextCompacted:
		v.line(seg{styleCyan, "⇤ "}, seg{"", fmt.Sprintf("context compacted (%s): %s → %s tokens, through event %d", clean(p.Trigger),
			count(p.TokensBefore), count(p.TokensAfter), p.ThroughSeq)}, seg{styleDim, " · " + fit(clean(p.Summary), resultPreview)})
	case *api.Plan:
		v.line(seg{styleCyan, "☰ "}, seg{"", "plan"})
		for _, e := range p.Entries {
			mark := "○ "
			switch e.Status {
			case "completed":
				mark = "● "
			case "in_progress":
				mark = "◐ "
			}
			v.line(seg{"", "    " + mark}, seg{"", fit(clean(e.Content), 100)})
		}
	case *api.HarnessSession:
		how := "new session"
		switch {
		case p.Loaded:
			how = "continued session"
		case p.FromHistory:
			how = "new session, from the history"
		}
		v.line(seg{styleDim, fmt.Sprintf("▸ %s (%s): %s %s", clean(p.Runtime), clean(p.Agent), how, clean(p.SessionID))})
	case *api.TurnResumed:
		from := ""
		if p.From != "" {
			from = " (it ran on " + clean(p.From) + ")"
		}
		v.line(seg{styleYellow, "↻ "}, seg{"", fmt.Sprintf("turn resumed after its host died, attempt %d", p.Attempt)}, seg{styleDim, from})
	}
}

// end finishes the view: the line being written ends, and the live
// region stays on screen as it was last drawn.
func (v *view) end() {
	for _, id := range v.order {
		if c := v.calls[id]; c.partial != "" && !v.tty {
			v.outputLines(c, []string{c.partial}, 0)
			c.partial = ""
		}
	}
	if v.midLine || v.drawn > 0 {
		v.buf.WriteString("\n")
	}
	v.midLine, v.drawn, v.dirty = false, 0, false
	v.w.Write(v.buf.Bytes())
	v.buf.Reset()
}

// message renders a whole message: a user's, marked; the assistant's
// unless its deltas already showed it.
func (v *view) message(p *api.Message) {
	if p.Role == api.RoleAssistant && v.streamed != "" {
		if rest, ok := strings.CutPrefix(p.Text, v.streamed); ok {
			v.text(cleanText(rest))
		}
		v.streamed = ""
		v.endText()
		return
	}
	v.endText()
	text := cleanText(p.Text)
	switch p.Role {
	case api.RoleAssistant:
		if strings.TrimSpace(text) != "" {
			v.text(text)
			v.endText()
		}
	case api.RoleUser:
		v.line(seg{styleBold, "› " + strings.ReplaceAll(text, "\n", "\n  ")})
	default:
		v.line(seg{styleDim, clean(p.Role) + ": "}, seg{"", strings.ReplaceAll(text, "\n", "\n  ")})
	}
}

// approvalRequested shows a parked call, with the commands that decide it.
func (v *view) approvalRequested(e api.Event, p *api.ApprovalRequested) {
	c := v.call(p.CallID, p.Tool)
	c.parked = true
	if c.input == "" {
		c.input = clean(jsonPreview(p.Input))
	}
	v.dirty = true
	who := ""
	if p.RequestedBy != "" {
		who = "requested by " + clean(p.RequestedBy) + ", "
	}
	v.line(seg{styleYellow, "⏸ "}, seg{styleBold, clean(p.Tool)}, seg{styleYellow, " needs approval"},
		seg{styleDim, " (" + who + "expires " + v.clock(p.ExpiresAt, e.Time) + ")"})
	for _, cmd := range v.howToAnswer(p) {
		v.line(seg{"", "    "}, seg{styleCyan, cmd})
	}
}

// howToAnswer returns the commands that decide a parked call, as the host
// wrote them, with the --url the view follows.
func (v *view) howToAnswer(p *api.ApprovalRequested) []string {
	var cmds []string
	for cmd := range strings.SplitSeq(p.HowToAnswer.CLI, "|") {
		if cmd = strings.TrimSpace(clean(cmd)); cmd != "" {
			cmds = append(cmds, cmd)
		}
	}
	if len(cmds) == 0 {
		id := clean(p.CallID)
		cmds = []string{"agent-sdk approve " + id, "agent-sdk deny " + id + " --reason …"}
	}
	if v.url != "" {
		for i := range cmds {
			cmds[i] += " --url " + clean(v.url)
		}
	}
	return cmds
}

// approvalResolved shows a decision on a parked call: who, when, why.
func (v *view) approvalResolved(e api.Event, p *api.ApprovalResolved) {
	if c := v.calls[p.CallID]; c != nil {
		c.parked = false
		v.dirty = true
	}
	icon, style, what := "✓ ", styleGreen, " approved"
	switch p.Status {
	case api.ApprovalDenied:
		icon, style, what = "✗ ", styleRed, " denied"
	case api.ApprovalExpired:
		icon, style, what = "✗ ", styleRed, " expired with no decision"
	case api.ApprovalCancelled:
		icon, style, what = "✗ ", styleRed, " cancelled with its turn"
	case api.ApprovalApproved:
	default:
		what = " " + clean(string(p.Status))
	}
	by := ""
	if p.By != "" && p.Status != api.ApprovalExpired {
		by = " by " + clean(p.By)
	}
	reason := ""
	if p.Reason != "" && p.Status != api.ApprovalCancelled {
		reason = ": " + clean(p.Reason)
	}
	if p.Quorum > 0 {
		by += fmt.Sprintf(" (%d of %d)", p.Approvals, p.Quorum)
	}
	v.line(seg{style, icon}, seg{styleBold, clean(p.Tool)}, seg{style, what + by},
		seg{styleDim, " at " + v.clock(p.At, e.Time)}, seg{"", reason + changesText(p.Changes)})
}

// changesText shows an approver's edit: "; edited input.version "v42" →
// "v41"".
func changesText(changes []api.InputChange) string {
	if len(changes) == 0 {
		return ""
	}
	parts := make([]string, 0, len(changes))
	for _, c := range changes {
		from, to := string(c.From), string(c.To)
		if from == "" {
			from = "(absent)"
		}
		if to == "" {
			to = "(absent)"
		}
		parts = append(parts, clean(c.Path+" "+from+" → "+to))
	}
	return "; edited " + strings.Join(parts, ", ")
}

// output shows a call's live output: on a terminal its latest lines under
// the call's line, elsewhere each batch's last lines.
func (v *view) output(p *api.ActionOutput) {
	c := v.call(p.CallID, p.Tool)
	lines := strings.Split(c.partial+p.Text, "\n")
	c.partial = lines[len(lines)-1]
	lines = lines[:len(lines)-1]
	if len(c.partial) > partialLimit {
		lines, c.partial = append(lines, c.partial), ""
	}
	for i, l := range lines {
		lines[i] = outputLine(l)
	}
	if p.Truncated {
		lines = append(lines, "… output truncated")
	}
	if v.tty {
		c.tail = append(c.tail, lines...)
		if len(c.tail) > outputTail {
			c.tail = c.tail[len(c.tail)-outputTail:]
		}
		v.dirty = true
		return
	}
	v.outputLines(c, lines, outputLines)
}

// outputLines prints lines of a call's output, at most the last max of
// them (0: all).
func (v *view) outputLines(c *viewCall, lines []string, max int) {
	prefix := "  │ "
	if len(v.order) > 1 {
		prefix = "  " + clean(c.tool) + " │ "
	}
	if max > 0 && len(lines) > max {
		v.line(seg{styleDim, fmt.Sprintf("%s… %d more lines", prefix, len(lines)-max)})
		lines = lines[len(lines)-max:]
	}
	for _, l := range lines {
		v.line(seg{styleDim, prefix + fit(outputLine(l), outputColumns)})
	}
}

// result shows a call's outcome, and forgets the call.
func (v *view) result(p *api.ActionResult) {
	c := v.calls[p.CallID]
	if c != nil && c.partial != "" && !v.tty {
		v.outputLines(c, []string{c.partial}, 0)
	}
	v.forget(p.CallID)
	icon, style, previewStyle := "✓ ", styleGreen, ""
	if p.IsError {
		icon, style, previewStyle = "✗ ", styleRed, styleRed
	}
	segs := []seg{{style, icon}, {styleBold, clean(p.Tool)}, {styleDim, " " + duration(p.DurationMs)}}
	if p.Stubbed {
		segs = append(segs, seg{styleDim, " (stubbed)"}) // an eval's stub answered: the tool did not run
	}
	if preview := clean(jsonPreview(p.Result)); preview != "" {
		segs = append(segs, seg{previewStyle, " " + fit(preview, resultPreview)})
	}
	v.line(segs...)
}

// turnEnded forgets the calls of a turn that ended; on a terminal, those
// still shown as running stay as they were last drawn.
func (v *view) turnEnded() {
	v.streamed = ""
	if v.tty {
		for _, id := range v.order {
			v.line(v.calls[id].status()...)
		}
	}
	v.calls, v.order = nil, nil
	v.dirty = true
}

// call returns the running call id, known from now on if it was not.
func (v *view) call(id, tool string) *viewCall {
	if c := v.calls[id]; c != nil {
		return c
	}
	if v.calls == nil {
		v.calls = map[string]*viewCall{}
	}
	c := &viewCall{id: id, tool: tool}
	v.calls[id] = c
	v.order = append(v.order, id)
	v.dirty = true
	return c
}

// forget drops a call that is done.
func (v *view) forget(id string) {
	if v.calls[id] == nil {
		return
	}
	delete(v.calls, id)
	for i, o := range v.order {
		if o == id {
			v.order = append(v.order[:i], v.order[i+1:]...)
			break
		}
	}
	v.dirty = true
}

// requested is a call's line as it was asked for: ▸ tool(input).
func (c *viewCall) requested() []seg {
	in := ""
	if c.input != "" {
		in = fit(c.input, inputPreview)
	}
	return []seg{{styleCyan, "▸ "}, {styleBold, clean(c.tool)}, {styleDim, "(" + in + ")"}}
}

// running is a call's line with its progress: ⠿ tool 42/100 message.
func (c *viewCall) running() []seg {
	return []seg{{styleCyan, "⠿ "}, {styleBold, clean(c.tool)}, {"", " " + c.progress}}
}

// status is a running call's line in the live region.
func (c *viewCall) status() []seg {
	switch {
	case c.parked:
		return append(c.requested(), seg{styleYellow, " waiting for approval"})
	case c.progress != "":
		return c.running()
	}
	return c.requested()
}

// text writes streamed text, which need not end a line.
func (v *view) text(s string) {
	if s == "" {
		return
	}
	v.erase()
	v.buf.WriteString(s)
	v.midLine = !strings.HasSuffix(s, "\n")
}

// endText ends the line of streamed text, if one is being written.
func (v *view) endText() {
	if v.midLine {
		v.buf.WriteString("\n")
		v.midLine = false
	}
}

// line writes a line of styled segments.
func (v *view) line(segs ...seg) {
	v.endText()
	v.erase()
	v.buf.WriteString(joinSegs(v.color, 0, segs...))
	v.buf.WriteString("\n")
}

// erase takes the live region off the screen, leaving the cursor where it
// began, to write above it; flush draws it again.
func (v *view) erase() {
	if v.drawn == 0 {
		return
	}
	v.buf.WriteString("\r" + eraseLine)
	for range v.drawn - 1 {
		v.buf.WriteString(cursorUp + eraseLine)
	}
	v.drawn, v.dirty = 0, true
}

// flush draws the live region again if it changed (on a terminal, unless
// streamed text is being written) and writes what the event made.
func (v *view) flush() {
	if v.tty && v.dirty && !v.midLine {
		cols := 80
		if v.width != nil {
			cols = v.width()
		}
		var rows []string
		if v.fold.chars > 0 {
			rows = append(rows, joinSegs(v.color, cols-1, v.fold.line()...))
		}
		for _, id := range v.order {
			c := v.calls[id]
			rows = append(rows, joinSegs(v.color, cols-1, c.status()...))
			for _, l := range c.tail {
				rows = append(rows, joinSegs(v.color, cols-1, seg{styleDim, "  │ " + l}))
			}
			if c.partial != "" {
				rows = append(rows, joinSegs(v.color, cols-1, seg{styleDim, "  │ " + outputLine(c.partial)}))
			}
		}
		if v.drawn == 0 || !slices.Equal(rows, v.rows) {
			v.erase()
			v.buf.WriteString(strings.Join(rows, "\n"))
			v.drawn, v.rows = len(rows), rows
		}
		v.dirty = false
	}
	if v.buf.Len() > 0 {
		v.w.Write(v.buf.Bytes())
		v.buf.Reset()
	}
}

// clock says when t was, in the view's time zone: the time of day, with
// the date too when it is not that of ref.
func (v *view) clock(t, ref time.Time) string {
	loc := v.loc
	if loc == nil {
		loc = time.Local
	}
	t, ref = t.In(loc), ref.In(loc)
	if t.YearDay() == ref.YearDay() && t.Year() == ref.Year() {
		return t.Format("15:04:05")
	}
	return t.Format("Jan 2 15:04:05")
}

// callProgress shows a direct call's progress and live output on one line
// of a terminal, rewritten in place: ⠿ tool 42/100 message.
type callProgress struct {
	w        io.Writer
	color    bool
	width    func() int // nil: 80 columns
	tool     string
	progress string // the latest progress, as shown
	output   string // the latest line of output
	shown    bool
}

// update shows a payload of the call: an api.ActionProgress or an
// api.ActionOutput (others are ignored). It is a client.CallOptions.Progress.
func (p *callProgress) update(pl api.Payload) {
	switch pl := pl.(type) {
	case api.ActionProgress:
		p.progressed(pl)
	case *api.ActionProgress:
		p.progressed(*pl)
	case api.ActionOutput:
		p.printed(pl)
	case *api.ActionOutput:
		p.printed(*pl)
	default:
		return
	}
	cols := 80
	if p.width != nil {
		cols = p.width()
	}
	segs := []seg{{styleCyan, "⠿ "}, {styleBold, clean(p.tool)}}
	if p.progress != "" {
		segs = append(segs, seg{"", " " + p.progress})
	}
	if p.output != "" {
		segs = append(segs, seg{styleDim, " │ " + p.output})
	}
	io.WriteString(p.w, "\r"+eraseLine+joinSegs(p.color, cols-1, segs...))
	p.shown = true
}

func (p *callProgress) progressed(pl api.ActionProgress) {
	p.progress = progressText(pl)
	if pl.Tool != "" {
		p.tool = pl.Tool
	}
}

func (p *callProgress) printed(pl api.ActionOutput) {
	lines := strings.Split(strings.TrimRight(pl.Text, "\n"), "\n")
	if last := outputLine(lines[len(lines)-1]); strings.TrimSpace(last) != "" {
		p.output = last
	}
	if pl.Tool != "" {
		p.tool = pl.Tool
	}
}

// clear takes the line off the screen, if it is shown; p may be nil.
func (p *callProgress) clear() {
	if p != nil && p.shown {
		io.WriteString(p.w, "\r"+eraseLine)
		p.shown = false
	}
}

// seg is a piece of a line in one style (SGR parameters; "" for none).
type seg struct{ style, text string }

// joinSegs returns a line of segments, styled if color, cut to max
// columns (0: no limit) with an ellipsis.
func joinSegs(color bool, max int, segs ...seg) string {
	var b strings.Builder
	used := 0
	for _, s := range segs {
		t := s.text
		cut := false
		if max > 0 {
			if w := textWidth(t); used+w > max {
				t, cut = fit(t, max-used), true
			} else {
				used += w
			}
		}
		if t != "" {
			if color && s.style != "" {
				t = "\x1b[" + s.style + "m" + t + "\x1b[0m"
			}
			b.WriteString(t)
		}
		if cut {
			break
		}
	}
	return b.String()
}

// progressText is how progress reads: 42/100 message, or 42 message when
// the total is unknown (just the message when nothing is done either).
func progressText(p api.ActionProgress) string {
	var parts []string
	switch {
	case p.Total > 0:
		parts = append(parts, strconv.FormatFloat(p.Done, 'f', -1, 64)+"/"+strconv.FormatFloat(p.Total, 'f', -1, 64))
	case p.Done != 0:
		parts = append(parts, strconv.FormatFloat(p.Done, 'f', -1, 64))
	}
	if m := strings.TrimSpace(clean(p.Message)); m != "" {
		parts = append(parts, m)
	}
	if len(parts) == 0 {
		return "running"
	}
	return fit(strings.Join(parts, " "), resultPreview)
}

// jsonPreview returns a tool's JSON (an input, a result) for a line of
// text: a string as it is, anything else compact, with <, > and & as they
// are (not \u003c…). Invalid JSON comes back as it is.
func jsonPreview(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// outputLine returns a line of a tool's output as a terminal would have
// left it (what follows its last carriage return), on one line.
func outputLine(s string) string {
	s = strings.TrimRight(s, "\r")
	if i := strings.LastIndexByte(s, '\r'); i >= 0 {
		s = s[i+1:]
	}
	return clean(s)
}

// clean returns s on one line, safe to write to a terminal: tabs and line
// breaks become spaces; other control characters (escape sequences with
// them), bidirectional overrides and invalid UTF-8 are dropped.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return ' '
		case unsafeRune(r):
			return -1
		}
		return r
	}, s)
}

// cleanText is clean for text of many lines: it keeps line breaks (and
// tabs); a carriage return, which would overwrite the line, is dropped.
func cleanText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n':
			return r
		case unsafeRune(r):
			return -1
		}
		return r
	}, s)
}

// unsafeRune says whether r must not reach a terminal: a control character
// (C0, DEL, C1), a bidirectional override or isolate, or invalid UTF-8.
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || r == unicode.ReplacementChar ||
		(r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069)
}

// fit returns s cut to max columns, ending with … when cut.
func fit(s string, max int) string {
	if max <= 0 {
		return ""
	}
	if textWidth(s) <= max {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		w := runeWidth(r)
		if used+w > max-1 {
			break
		}
		b.WriteRune(r)
		used += w
	}
	return b.String() + "…"
}

// textWidth is how many columns s takes on a terminal.
func textWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// runeWidth is how many columns r takes: 2 for wide (East Asian, most
// emoji), 0 for combining marks, else 1.
func runeWidth(r rune) int {
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// duration says how long a call took: 120ms, 1.2s, 2m5s.
func duration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// steps says how many model calls a turn made, if it says.
func steps(n *int) string {
	switch {
	case n == nil:
		return ""
	case *n == 1:
		return " after 1 step"
	}
	return fmt.Sprintf(" after %d steps", *n)
}

// byteSize says how big a file is: 512 B, 1.2 KB, 3.4 MB.
func byteSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, suffix := float64(n)/unit, "KB"
	for _, s := range []string{"MB", "GB", "TB"} {
		if f < unit {
			break
		}
		f, suffix = f/unit, s
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + suffix
}
