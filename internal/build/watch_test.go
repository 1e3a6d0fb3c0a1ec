package build

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A watcher reports the files of the build and under agent/ that changed,
// and none of what the host writes or the build ignores.
func TestWatcherScan(t *testing.T) {
	a := writeAgent(t, map[string]string{"hello.go": oneTool})
	state := filepath.Join(a.Dir, "state") // a --state that is not hidden
	recs := filepath.Join(a.Dir, "cassettes")
	w := a.NewWatcher(state, recs)
	if got, err := w.Scan(); err != nil || got != nil {
		t.Fatalf("first scan: %v, %v", got, err)
	}
	step := 0
	write := func(rel, content string) {
		t.Helper()
		step++
		p := filepath.Join(a.Dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		// Modification times can be coarse: make each write's its own.
		mt := time.Now().Add(time.Duration(step) * time.Second)
		os.Chtimes(p, mt, mt)
	}
	for _, c := range []struct {
		what  string
		do    func()
		want  []string
		rtime bool // a file the host reads as it runs
	}{
		{"a tool", func() { write("agent/tools/hello.go", oneTool+"// edited\n") }, []string{"agent/tools/hello.go"}, false},
		{"agent.yaml", func() { write("agent/agent.yaml", "system: hi\n") }, []string{"agent/agent.yaml"}, true},
		{"a tool's test", func() { write("agent/tools/hello_test.go", "package tools\n") }, []string{"agent/tools/hello_test.go"}, false},
		{"go.mod", func() { write("go.mod", "module example.com/a\n\ngo 1.26\n") }, []string{"go.mod"}, false},
		{"a package outside agent/", func() { write("lib/l.go", "package lib\n") }, []string{"lib/l.go"}, false},
		{"a README", func() { write("README.md", "# a\n") }, nil, false},
		{"a test outside agent/", func() { write("lib/l_test.go", "package lib\n") }, nil, false},
		{"the state directory", func() { write("state/agent.db", "x") }, nil, false},
		{"a recording", func() { write("cassettes/x.json", "{}") }, nil, false},
		{"a hidden directory", func() { write(".cache/x.go", "package x\n") }, nil, false},
		{"a package that embeds", func() {
			write("lib/l.go", "package lib\n\nimport _ \"embed\"\n\n//go:embed msg.txt\nvar msg string\n")
			write("lib/msg.txt", "first")
		}, []string{"lib/l.go", "lib/msg.txt"}, false},
		{"an embedded file", func() { write("lib/msg.txt", "second") }, []string{"lib/msg.txt"}, false},
		{"a removed tool", func() { os.Remove(filepath.Join(a.ToolsDir(), "hello_test.go")) }, []string{"agent/tools/hello_test.go"}, false},
	} {
		c.do()
		got, err := w.Scan()
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: Scan() = %q, %v; want %q", c.what, got, err, c.want)
		}
		for _, f := range got {
			if RuntimeFile(f) != c.rtime {
				t.Errorf("%s: RuntimeFile(%q) = %v", c.what, f, !c.rtime)
			}
		}
		if again, _ := w.Scan(); again != nil {
			t.Errorf("%s: a second scan = %q", c.what, again)
		}
	}
}
