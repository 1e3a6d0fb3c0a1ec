// Package agenttool puts agent tools on disk in a workspace and runs them
// the way an agent would: the script as an executable file, JSON input on
// stdin, the result on stdout.
package agenttool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentsdk/agentsdk/tool"
)

// ToolsDir is where agent tools are materialised, relative to a workspace.
const ToolsDir = ".agent-serve/tools"

// The markers around the generated part of AGENTS.md. Everything outside
// them is the user's and is kept as it is.
const (
	beginMarker = "<!-- BEGIN agent-sdk tools: generated, edits inside are overwritten -->"
	endMarker   = "<!-- END agent-sdk tools -->"
)

// Path returns where the named agent tool lives in a workspace.
func Path(workspace, name string) string {
	return filepath.Join(workspace, ToolsDir, name)
}

// Materialize writes each agent tool of set as an executable file under
// <workspace>/.agent-serve/tools/<name>, removes stale ones, and writes the
// catalog into the generated section of <workspace>/AGENTS.md. A set without
// agent tools leaves the workspace untouched.
func Materialize(workspace string, set *tool.Set) error {
	var agents []*tool.Tool
	for _, t := range set.Tools() {
		if t.Execution() == tool.Agent {
			agents = append(agents, t)
		}
	}
	if len(agents) == 0 {
		return nil
	}
	dir := filepath.Join(workspace, ToolsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("materialising agent tools: %w", err)
	}
	keep := map[string]bool{}
	for _, t := range agents {
		keep[t.Name()] = true
		if err := writeExecutable(filepath.Join(dir, t.Name()), []byte(t.Script())); err != nil {
			return fmt.Errorf("materialising agent tool %s: %w", t.Name(), err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("materialising agent tools: %w", err)
	}
	for _, e := range entries {
		if !keep[e.Name()] && !strings.HasPrefix(e.Name(), ".") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("removing stale agent tool %s: %w", e.Name(), err)
			}
		}
	}
	return writeCatalog(filepath.Join(workspace, "AGENTS.md"), catalog(agents))
}

// writeExecutable replaces path atomically with an executable file.
func writeExecutable(path string, content []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, content) {
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() == 0o755 {
			return nil
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(content); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// catalog renders the generated section of AGENTS.md.
func catalog(agents []*tool.Tool) string {
	var b strings.Builder
	b.WriteString(beginMarker + "\n")
	b.WriteString("## Agent tools\n\n")
	b.WriteString("These tools are executable scripts in `" + ToolsDir + "/`. Run one from this\n")
	b.WriteString("directory with its input as a JSON object on stdin; it prints its result on\n")
	b.WriteString("stdout, and a non-zero exit status means it failed (the reason is on stderr).\n")
	for _, t := range agents {
		var schema bytes.Buffer
		if err := json.Indent(&schema, t.InputSchema(), "", "  "); err != nil {
			schema.Reset()
			schema.Write(t.InputSchema())
		}
		fmt.Fprintf(&b, "\n### %s\n\n%s\n\n", t.Name(), strings.TrimSpace(t.Description()))
		fmt.Fprintf(&b, "Run it:\n\n```sh\necho '%s' | %s/%s\n```\n\n", exampleInput(t.InputSchema()), ToolsDir, t.Name())
		fmt.Fprintf(&b, "Input schema:\n\n```json\n%s\n```\n", schema.String())
	}
	b.WriteString(endMarker + "\n")
	return b.String()
}

// exampleInput sketches an input from a schema's required properties.
func exampleInput(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Required) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(s.Required))
	for _, name := range s.Required {
		var v string
		switch s.Properties[name].Type {
		case "integer", "number":
			v = "1"
		case "boolean":
			v = "true"
		case "array":
			v = "[]"
		case "object":
			v = "{}"
		default:
			v = `"…"`
		}
		key, _ := json.Marshal(name)
		parts = append(parts, string(key)+":"+v)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// writeCatalog puts section into AGENTS.md between the markers, replacing a
// previous section and keeping everything else.
func writeCatalog(path, section string) error {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	text := string(old)
	var out string
	begin := strings.Index(text, beginMarker)
	end := strings.Index(text, endMarker)
	switch {
	case begin < 0 && end < 0:
		out = text
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		if out != "" {
			out += "\n"
		}
		out += section
	case begin >= 0 && end > begin:
		rest := text[end+len(endMarker):]
		rest = strings.TrimPrefix(rest, "\n")
		out = text[:begin] + section + rest
	default:
		return fmt.Errorf("updating %s: its generated section is damaged (one of %q and %q is missing or out of order); fix or remove the markers", path, beginMarker, endMarker)
	}
	if out == text {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(out), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
