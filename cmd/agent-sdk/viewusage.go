package main

import (
	"fmt"
	"unicode/utf8"

	"github.com/agentsdk/agentsdk/api"
)

// What the view shows of a turn's cost and of the model's own doings:
// a session's usage before its stream (header), each turn's tokens and
// cost after its end (turnUsage), the failure code of a failed turn, a
// model call tried again (retry), and the model's reasoning folded to one
// line (thinking… (N chars)) — never mistaken for the answer.

// fold is the model's reasoning as the view folds it: the characters
// streamed (reasoning.delta) and not shown yet, and whether a line was
// shown for the block still open (its reasoning event then adds none).
type fold struct {
	chars int
	shown bool
}

// line is the folded reasoning's line (its characters streamed so far).
func (f fold) line() []seg { return thinkingLine(f.chars, false) }

// thinkingLine is one block of reasoning, folded: ∴ thinking… (N chars).
func thinkingLine(chars int, redacted bool) []seg {
	what := fmt.Sprintf("(%s chars)", count(int64(chars)))
	if chars == 1 {
		what = "(1 char)"
	}
	if redacted {
		what = "(redacted)"
	}
	return []seg{{styleDim, "∴ thinking… " + what}}
}

// header shows, before a session's stream, what its model calls have
// consumed so far (s as GET /v1/session/{id} answers it).
func (v *view) header(s api.Session) {
	if s.Usage == nil {
		return
	}
	v.line(seg{styleDim, "Σ session " + clean(s.ID) + ": " + usageText(*s.Usage)})
	v.flush()
}

// reasoningDelta counts streamed reasoning: on a terminal the live region
// shows how much; elsewhere a line does once it is over.
func (v *view) reasoningDelta(p *api.ReasoningDelta) {
	v.fold.chars += utf8.RuneCountInString(p.Text)
	v.dirty = true
}

// reasoning shows a complete block of reasoning as one line, unless its
// deltas already had theirs.
func (v *view) reasoning(p *api.Reasoning) {
	if !v.fold.shown && (p.Text != "" || p.Redacted != "") {
		v.line(thinkingLine(utf8.RuneCountInString(p.Text), p.Text == "")...)
	}
	v.fold, v.dirty = fold{}, true
}

// foldReasoning shows the reasoning streamed so far as its line, before
// what follows it (the answer's text, a call).
func (v *view) foldReasoning() {
	if v.fold.chars == 0 {
		return
	}
	v.line(v.fold.line()...)
	v.fold, v.dirty = fold{shown: true}, true
}

// retry shows a model call that failed and is tried again: ↻ model call
// retry 1 in 2.0s (overloaded, HTTP 529: Overloaded).
func (v *view) retry(p *api.ModelRetry) {
	why := clean(string(p.Code))
	if p.Status != 0 {
		why += fmt.Sprintf(", HTTP %d", p.Status)
	}
	if m := clean(p.Message); m != "" {
		why += ": " + fit(m, resultPreview)
	}
	v.line(seg{styleYellow, "↻ "}, seg{"", fmt.Sprintf("model call retry %d in %s", p.Attempt, duration(p.WaitMs))}, seg{styleDim, " (" + why + ")"})
}

// turnUsage shows, under a turn's end, what its model calls consumed and,
// for a failed turn, its failure code. A direct call's turn has neither.
func (v *view) turnUsage(u *api.Usage, code api.FailureCode) {
	var segs []seg
	if code != "" {
		segs = append(segs, seg{styleRed, "  code " + clean(string(code))})
	}
	if u != nil {
		text := usageText(*u)
		if code != "" {
			text = " · " + text
		} else {
			text = "  " + text
		}
		segs = append(segs, seg{styleDim, text})
	}
	if len(segs) > 0 {
		v.line(segs...)
	}
}

// sessionHeader starts the human view of a session's events with what
// the session has consumed; JSON lines get no header.
func sessionHeader(out eventPrinter, s api.Session) {
	if v, ok := out.(*view); ok {
		v.header(s)
	}
}
