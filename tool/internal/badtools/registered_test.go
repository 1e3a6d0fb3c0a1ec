package badtools

import (
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/tool"
)

func TestRegisteredReportsEveryBadDefinition(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Dir(self)
	set, err := tool.Registered()
	if err == nil {
		t.Fatalf("Registered() = %v tools, no error; want errors", set.Names())
	}
	msg := err.Error()
	both := regexp.QuoteMeta(filepath.Join(dir, "both.go"))
	for _, want := range []string{
		"two tools defined in one file: " + both + `:\d+ and ` + both + `:\d+`,
		regexp.QuoteMeta(filepath.Join(dir, "bad.name.go")) + `:\d+: invalid tool name "bad.name"`,
		`mismatch.go:\d+: tool mismatch: NeedsApproval: the predicate takes badtools.other but the handler's input is badtools.input`,
		regexp.QuoteMeta(filepath.Join(dir, "stream.go")) + `:\d+: tool stream: the output type badtools.StreamReport cannot be encoded as JSON: field StreamReport.Parts\[\].Updates is a chan string`,
		regexp.QuoteMeta(filepath.Join(dir, "hook.go")) + `:\d+: tool hook: the input type badtools.Input cannot be decoded from JSON: field Input.Options.Callback is a func\(string\)`,
	} {
		if !regexp.MustCompile(want).MatchString(msg) {
			t.Errorf("error does not match %s:\n%s", want, msg)
		}
	}
	if strings.Count(msg, "both.go:") != 2 {
		t.Errorf("want both positions of both.go named once each:\n%s", msg)
	}
	// The first tool of both.go is defined, the second refused; the files
	// with bad definitions define nothing.
	if First == nil || First.Name() != "both" {
		t.Errorf("First = %v, want the tool named both", First)
	}
	if BadName != nil || Mismatch != nil || Stream != nil || Hook != nil {
		t.Errorf("invalid definitions returned tools: %v, %v, %v, %v", BadName, Mismatch, Stream, Hook)
	}
}
