package npmtest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// fakeNPM is an npm that "installs" the package its working directory's
// package.json names at that version, counting its runs in count.
const fakeNPM = `#!/bin/sh
echo run >> "$COUNT"
name=$(sed -n 's/.*"dependencies":{"\([^"]*\)":"\([^"]*\)".*/\1/p' package.json)
version=$(sed -n 's/.*"dependencies":{"\([^"]*\)":"\([^"]*\)".*/\2/p' package.json)
mkdir -p "node_modules/$name"
printf '{"name":"%s","version":"%s"}' "$name" "$version" > "node_modules/$name/package.json"
`

// Concurrent installs of one package all get it, complete, in one
// directory; an install already there does not run npm again.
func TestInstallDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the fake npm is a shell script")
	}
	dir := t.TempDir()
	npm := filepath.Join(dir, "npm")
	if err := os.WriteFile(npm, []byte(fakeNPM), 0o755); err != nil {
		t.Fatal(err)
	}
	count := filepath.Join(dir, "count")
	t.Setenv("COUNT", count)
	cache := filepath.Join(dir, "cache")

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			pkg, err := InstallDir(context.Background(), npm, cache, "@scope/tool", "1.2.3")
			if err != nil {
				t.Error(err)
				return
			}
			if want := filepath.Join(cache, "@scope+tool@1.2.3"); pkg.Root != want || pkg.Dir() != filepath.Join(want, "node_modules", "@scope", "tool") {
				t.Errorf("installed in %s (package in %s), want %s", pkg.Root, pkg.Dir(), want)
			}
		})
	}
	wg.Wait()
	entries, _ := os.ReadDir(cache)
	if len(entries) != 1 {
		t.Errorf("the cache holds %d entries, want just the package (no temporary directories left)", len(entries))
	}

	runs, _ := os.ReadFile(count)
	before := strings.Count(string(runs), "run")
	if _, err := InstallDir(context.Background(), filepath.Join(dir, "no-npm"), cache, "@scope/tool", "1.2.3"); err != nil {
		t.Errorf("installing again: %v", err)
	}
	if runs, _ := os.ReadFile(count); strings.Count(string(runs), "run") != before {
		t.Error("installing a package already in the cache ran npm")
	}
	// Another version is another directory, and a failing npm leaves nothing.
	if _, err := InstallDir(context.Background(), filepath.Join(dir, "no-npm"), cache, "@scope/tool", "1.2.4"); err == nil {
		t.Error("installing without npm succeeded")
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 1 {
		t.Errorf("a failed install left %d entries in the cache", len(entries))
	}
}

func TestInstallDirRefusesSpecs(t *testing.T) {
	for _, tt := range []struct{ name, pkg, version string }{
		{"a range", "tool", "^1.2.3"},
		{"a tag", "tool", "latest"},
		{"a short version", "tool", "1.2"},
		{"a path", "../tool", "1.2.3"},
		{"an unscoped slash", "a/b", "1.2.3"},
		{"a URL", "git+https://example.com/tool", "1.2.3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := InstallDir(context.Background(), "npm", t.TempDir(), tt.pkg, tt.version); err == nil {
				t.Errorf("InstallDir(%q, %q) succeeded", tt.pkg, tt.version)
			}
		})
	}
}
