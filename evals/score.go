package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
)

// scorerInput is what a scorer tool is called with.
type scorerInput struct {
	Case   api.EvalCase `json:"case"`
	Events []api.Event  `json:"events"`
}

// scorerVerdict is what a scorer tool answers.
type scorerVerdict struct {
	Pass   *bool    `json:"pass"`
	Score  *float64 `json:"score"`
	Reason string   `json:"reason"`
}

// score calls the case's scorer directly with the case and its session's
// events (without text deltas, progress and live output); its verdict is
// one more check, with the scorer's score and reason as its detail.
func (s *Service) score(ctx context.Context, c api.EvalCase, evs []api.Event) api.EvalCheckResult {
	r := api.EvalCheckResult{Check: api.EvalCheck{Scorer: c.Scorer}}
	in := scorerInput{Case: c, Events: make([]api.Event, 0, len(evs))}
	for _, e := range evs {
		switch e.Kind {
		case api.KindMessageDelta, api.KindActionProgress, api.KindActionOutput:
		default:
			in.Events = append(in.Events, e)
		}
	}
	out, err := s.h.CallTool(ctx, c.Scorer, in, &host.CallOptions{Principal: host.EvalPrincipal})
	switch {
	case err != nil:
		r.Detail = fmt.Sprintf("scorer %s: %v", c.Scorer, err)
		return r
	case out.IsError:
		r.Detail = fmt.Sprintf("scorer %s failed: %s", c.Scorer, preview(resultText(out.Result), 500))
		return r
	}
	var v scorerVerdict
	dec := json.NewDecoder(bytes.NewReader(out.Result))
	if err := dec.Decode(&v); err != nil || v.Pass == nil {
		r.Detail = fmt.Sprintf(`scorer %s: its result is not {"pass": bool, "score": number, "reason": "…"}: %s`, c.Scorer, preview(string(out.Result), 500))
		return r
	}
	r.Pass = *v.Pass
	verdict := "fail"
	if r.Pass {
		verdict = "pass"
	}
	r.Detail = fmt.Sprintf("scorer %s: %s", c.Scorer, verdict)
	if v.Score != nil {
		r.Detail += fmt.Sprintf(" (score %s)", strconv.FormatFloat(*v.Score, 'g', 4, 64))
	}
	if v.Reason != "" {
		r.Detail += ": " + preview(v.Reason, 500)
	}
	return r
}
