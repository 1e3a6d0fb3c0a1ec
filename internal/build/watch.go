package build

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A Watcher finds the files of an agent that changed between two scans:
// the build's inputs (what [Agent.Build] hashes: the Go sources, go.mod,
// go.sum and go.work of the agent's module and of its local replacements,
// and the files their packages embed) and every file under DIR/agent,
// which the host reads as it runs (agent.yaml, scripts, evals). It
// compares sizes and modification times, so a scan reads only the Go
// files that changed (to see whether they embed files). It is not safe
// for concurrent use.
type Watcher struct {
	agent  *Agent
	skip   []string
	stamps map[string]stamp
	embeds map[string]bool // Go file → it has a //go:embed line
}

// stamp is what a Watcher compares of a file.
type stamp struct {
	size int64
	mod  time.Time
}

// NewWatcher returns a watcher of the agent's files, leaving out the
// files under the skip directories (the state directory, a recording
// directory: what the host writes must not look like an edit). Its first
// scan reports no change.
func (a *Agent) NewWatcher(skip ...string) *Watcher {
	w := &Watcher{agent: a, embeds: map[string]bool{}}
	for _, s := range skip {
		if abs, err := filepath.Abs(s); err == nil {
			w.skip = append(w.skip, abs)
		}
	}
	return w
}

// Scan looks at the files again and returns those added, changed or
// removed since the last scan, sorted, relative to the agent directory
// where they are below it. The first scan only takes note of them.
func (w *Watcher) Scan() ([]string, error) {
	now := map[string]stamp{}
	embedDirs := map[string]bool{}
	add := func(path string, fi fs.FileInfo) {
		now[path] = stamp{size: fi.Size(), mod: fi.ModTime()}
	}
	roots := append([]string{w.agent.ModuleRoot}, w.agent.localReplaces()...)
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == root && os.IsNotExist(err) {
					return filepath.SkipDir // go build says so
				}
				return nil // a file removed while walking, an unreadable directory: not an input
			}
			if w.skipped(path) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if skipDir(root, path, d.Name()) && !w.inAgentDir(path) {
					return filepath.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() || !(isBuildInput(d.Name()) || w.inAgentDir(path)) {
				return nil
			}
			fi, err := d.Info()
			if err != nil {
				return nil
			}
			add(path, fi)
			if strings.HasSuffix(path, ".go") {
				w.embeds[path] = w.embedsFiles(path, fi)
			}
			if w.embeds[path] {
				embedDirs[filepath.Dir(path)] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("watching %s: %w", root, err)
		}
	}
	for dir := range embedDirs {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || w.skipped(path) {
				return nil
			}
			if d.IsDir() && path != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if fi, err := d.Info(); err == nil && d.Type().IsRegular() && !strings.HasSuffix(path, ".go") {
				add(path, fi)
			}
			return nil
		})
	}
	for path := range w.embeds {
		if _, ok := now[path]; !ok {
			delete(w.embeds, path)
		}
	}
	first := w.stamps == nil
	var changed []string
	for path, st := range now {
		if old, ok := w.stamps[path]; !ok || old != st {
			changed = append(changed, path)
		}
	}
	for path := range w.stamps {
		if _, ok := now[path]; !ok {
			changed = append(changed, path)
		}
	}
	w.stamps = now
	if first {
		return nil, nil
	}
	for i, path := range changed {
		if rel, err := filepath.Rel(w.agent.Dir, path); err == nil && !strings.HasPrefix(rel, "..") {
			changed[i] = rel
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// embedsFiles reports whether the Go file at path embeds files, reading
// it only when it changed since the last scan.
func (w *Watcher) embedsFiles(path string, fi fs.FileInfo) bool {
	if old, ok := w.stamps[path]; ok && old == (stamp{size: fi.Size(), mod: fi.ModTime()}) {
		return w.embeds[path]
	}
	data, err := os.ReadFile(path)
	return err == nil && bytes.Contains(data, []byte("//go:embed"))
}

// inAgentDir reports whether path is DIR/agent or below it.
func (w *Watcher) inAgentDir(path string) bool {
	return within(path, filepath.Join(w.agent.Dir, "agent"))
}

// skipped reports whether path is under one of the skip directories.
func (w *Watcher) skipped(path string) bool {
	for _, s := range w.skip {
		if within(path, s) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// RuntimeFile reports whether a path Scan returned is one the host reads
// as it runs: a file under DIR/agent other than Go sources (agent.yaml,
// scripts, evals). A change to one needs a new host even when the binary
// stays the same; a Go file changes the host only through its binary.
func RuntimeFile(rel string) bool {
	return within(rel, "agent") && !strings.HasSuffix(rel, ".go")
}
