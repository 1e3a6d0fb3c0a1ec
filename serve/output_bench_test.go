package serve_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

type checksInput struct {
	PRURL string `json:"prUrl" jsonschema:"format=uri"`
}

type checksOutput struct {
	PRURL  string   `json:"prUrl" jsonschema:"format=uri"`
	Checks []string `json:"checks"`
	Ready  bool     `json:"ready"`
}

// BenchmarkOutputCheck measures what checking a typed result against its
// output schema adds to a direct call over the HTTP handler (in process,
// no sockets): the same handler and value, returned as any (no output
// schema) and as its type (checked).
//
//	go test ./serve -run '^$' -bench OutputCheck -count 5
func BenchmarkOutputCheck(b *testing.B) {
	value := checksOutput{PRURL: "https://github.com/acme/checkout/pull/42", Checks: []string{"unit", "lint"}, Ready: true}
	free, _ := tool.New("free", tool.Config{Description: "Returns any."},
		func(ctx context.Context, call *tool.Call, in checksInput) (any, error) { return value, nil })
	typed, _ := tool.New("typed", tool.Config{Description: "Returns its type."},
		func(ctx context.Context, call *tool.Call, in checksInput) (checksOutput, error) { return value, nil })
	set, _ := tool.NewSet(free, typed)
	h, err := host.New(set, &host.Options{StateRoot: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	body := `{"input":{"prUrl":"https://github.com/acme/checkout/pull/42"}}`
	for _, name := range []string{"free", "typed"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest("POST", "/agent/v1/tools/"+name, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+testToken)
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, req)
				if rec.Code != 200 || strings.Contains(rec.Body.String(), `"isError":true`) {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
