package define

import (
	"errors"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := New[string]("channel", "")
	file, line := "/agent/channels/github.go", 5
	if !r.Add("github", nil, file, line) {
		t.Fatal("the first definition was not kept")
	}
	if r.Add("github2", nil, file, 9) {
		t.Fatal("a second definition in one file was kept")
	}
	r.Add("", errors.New("bad route"), "/agent/channels/slack.go", 3)
	_, err := r.All()
	for _, want := range []string{"two channels defined in one file: /agent/channels/github.go:5 and /agent/channels/github.go:9", "/agent/channels/slack.go:3: bad route"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("All: %v, want it to say %q", err, want)
		}
	}
	ok := New[string]("schedule", "")
	ok.Add("a", nil, "/x/a.go", 1)
	if items, err := ok.All(); err != nil || len(items) != 1 || NameFromFile("/x/nightly.go") != "nightly" {
		t.Fatalf("All = %v, %v", items, err)
	}
}
