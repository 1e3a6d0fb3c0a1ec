package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/tool"
)

type countInput struct {
	Upto int `json:"upto" jsonschema:"minimum=1"`
}

type countOutput struct {
	Counted int    `json:"counted"`
	Note    string `json:"note"`
}

// client.Call returns a typed tool's result as its Go type; a tool error
// is a *ToolError; with Progress the call streams its progress first.
func TestTypedCallWithProgress(t *testing.T) {
	count, _ := tool.New("count", tool.Config{Description: "Count, reporting as it goes."},
		func(ctx context.Context, call *tool.Call, in countInput) (countOutput, error) {
			for i := 1; i <= in.Upto; i++ {
				call.Progress(ctx, float64(i), float64(in.Upto), "")
				time.Sleep(time.Millisecond)
			}
			if in.Upto == 13 {
				return countOutput{}, errors.New("unlucky")
			}
			return countOutput{Counted: in.Upto, Note: "done"}, nil
		})
	fake := fakemodel.New()
	defer fake.Close()
	srv, stop, err := startHost(t.TempDir(), fake, count)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c, _ := client.New(srv.URL+"/"+testSlug, testToken, nil)
	ctx := context.Background()

	var seen []float64
	out, outcome, err := client.Call[countOutput](ctx, c, "count", countInput{Upto: 300}, &client.CallOptions{Progress: func(p api.Payload) {
		if pr, ok := p.(api.ActionProgress); ok {
			seen = append(seen, pr.Done)
		}
	}})
	if err != nil || out.Counted != 300 || out.Note != "done" || outcome.CallID == "" {
		t.Fatalf("typed call: %+v %+v %v", out, outcome, err)
	}
	if len(seen) == 0 || seen[len(seen)-1] != 300 {
		t.Errorf("progress seen: %v", seen)
	}
	_, outcome, err = client.Call[countOutput](ctx, c, "count", countInput{Upto: 13}, nil)
	var te *client.ToolError
	if !errors.As(err, &te) || te.Outcome.CallID != outcome.CallID || err.Error() != "tool count failed: unlucky" {
		t.Errorf("a tool error: %v", err)
	}
	if _, _, err := client.Call[countOutput](ctx, c, "count", countInput{}, &client.CallOptions{Progress: func(api.Payload) {}}); !errors.Is(err, &api.Error{Code: api.CodeInvalidInput}) {
		t.Errorf("invalid input, streaming: %v", err)
	}
}
