package command

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/tool"
)

// agent-sdk tools shows a typed tool's output schema, and none for others.
func TestPrintToolsShowsOutputSchema(t *testing.T) {
	type in struct {
		Q string `json:"q"`
	}
	type out struct {
		Hits int `json:"hits"`
	}
	typed, _ := tool.New("typed", tool.Config{Description: "Typed."}, func(ctx context.Context, call *tool.Call, i in) (out, error) { return out{}, nil })
	free, _ := tool.New("free", tool.Config{Description: "Free."}, func(ctx context.Context, call *tool.Call, i in) (any, error) { return nil, nil })
	var b bytes.Buffer
	PrintTools(&b, []tool.Info{free.Info(), typed.Info()})
	got := b.String()
	parts := strings.SplitN(got, "typed  (", 2)
	if len(parts) != 2 || strings.Contains(parts[0], "output schema") || !strings.Contains(parts[1], "output schema:") || !strings.Contains(parts[1], `"hits"`) {
		t.Errorf("listing:\n%s", got)
	}
}
