package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentsdk/agentsdk/tool"
)

// JudgeInput is what an eval's scorer is called with: the case and its
// session's events.
type JudgeInput struct {
	Case   map[string]any   `json:"case"`
	Events []map[string]any `json:"events"`
}

// judge scores an eval case: it passes when the session looked up the
// city the case's name names.
var _ = tool.Define(tool.Config{Description: "Score an eval case."}, func(ctx context.Context, call *tool.Call, in JudgeInput) (map[string]any, error) {
	city, _ := in.Case["name"].(string)
	for _, e := range in.Events {
		if e["kind"] == "actions.requested" && strings.Contains(strings.ToLower(fmt.Sprint(e["data"])), strings.ToLower(city)) {
			return map[string]any{"pass": true, "score": 1, "reason": "looked up " + city}, nil
		}
	}
	return map[string]any{"pass": false, "score": 0, "reason": "never looked up " + city}, nil
})
