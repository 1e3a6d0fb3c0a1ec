package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
)

// inspect_pr through a host, as the channel calls it: its input is
// validated against the schema inferred from InspectPRInput, and its
// result against InspectPROutput's.
func TestInspectPR(t *testing.T) {
	set, err := tool.Registered()
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	call := func(input string) (InspectPROutput, error) {
		out, err := h.CallTool(context.Background(), "inspect_pr", json.RawMessage(input), nil)
		if err != nil {
			return InspectPROutput{}, err
		}
		if out.IsError {
			t.Fatalf("inspect_pr failed: %s", out.Result)
		}
		var res InspectPROutput
		if err := json.Unmarshal(out.Result, &res); err != nil {
			t.Fatal(err)
		}
		return res, nil
	}

	small, err := call(`{"repo":"octo-org/widgets","number":7,"title":"Fix a typo","headSha":"e5bd3914e2e596debea16f433f57875b5b90bcd6",
		"changedFiles":1,"author":"octocat","additions":1,"deletions":1,"baseRef":"main","headRef":"typo","body":"A typo."}`)
	if err != nil {
		t.Fatal(err)
	}
	if small.PR != "octo-org/widgets#7" || small.URL != "https://github.com/octo-org/widgets/pull/7" || small.Size != "XS" || len(small.Concerns) != 0 ||
		small.Summary != `octo-org/widgets#7 by @octocat at e5bd391: "Fix a typo", XS (1 file, +1 −1, typo → main)` {
		t.Errorf("a small pull request: %+v", small)
	}

	big, err := call(`{"repo":"octo-org/widgets","number":8,"title":"WIP: rewrite the scheduler","headSha":"abcdef0",
		"changedFiles":60,"author":"hubot","additions":3000,"deletions":2500,"baseRef":"release-1.2"}`)
	if err != nil {
		t.Fatal(err)
	}
	concerns := strings.Join(big.Concerns, "\n")
	for _, want := range []string{"work in progress", "no description", "very large (60 files)", "merges into release-1.2"} {
		if !strings.Contains(concerns, want) {
			t.Errorf("concerns lack %q:\n%s", want, concerns)
		}
	}
	if big.Size != "XL" || !strings.Contains(strings.Join(big.Checklist, "\n"), "Each commit builds") {
		t.Errorf("a large pull request: %+v", big)
	}

	// What the webhook could carry but a review cannot use is refused
	// before the handler runs.
	for _, input := range []string{
		`{"repo":"widgets","number":1,"title":"t","headSha":"abcdef0","changedFiles":1,"author":"a"}`,
		`{"repo":"o/r","number":0,"title":"t","headSha":"abcdef0","changedFiles":1,"author":"a"}`,
		`{"repo":"o/r","number":1,"title":"t","headSha":"not-hex","changedFiles":1,"author":"a"}`,
		`{"repo":"o/r","number":1,"title":"","headSha":"abcdef0","changedFiles":1,"author":"a"}`,
		`{"repo":"o/r","number":1,"title":"t","headSha":"abcdef0","author":"a"}`,
	} {
		if _, err := call(input); err == nil || api.AsError(err).Code != api.CodeInvalidInput {
			t.Errorf("%s: %v, want invalid_input", input, err)
		}
	}
}

func TestSizeClass(t *testing.T) {
	for _, tt := range []struct {
		files, lines int
		want         string
	}{
		{0, 0, "XS"}, {1, 10, "XS"}, {2, 10, "S"}, {1, 11, "S"}, {15, 500, "M"}, {16, 0, "L"}, {3, 1000, "L"}, {41, 0, "XL"}, {1, 1001, "XL"},
	} {
		if got := sizeClass(tt.files, tt.lines); got != tt.want {
			t.Errorf("sizeClass(%d, %d) = %s, want %s", tt.files, tt.lines, got, tt.want)
		}
	}
}
