// Package command holds what the agent-sdk CLI and the agent binaries it
// builds share: exit codes, reading --input, and printing tools and call
// outcomes.
package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentsdk/agentsdk/tool"
)

// Exit codes of `agent-sdk call` and the agent binary's call command.
const (
	ExitOK        = 0 // the call ran and succeeded
	ExitToolError = 1 // the call ran and its result has isError
	ExitRefused   = 2 // usage error, unknown tool, invalid input or a refused call
	ExitFailure   = 3 // the call could not be made: build failed, host unreachable, …
)

// MaxInputBytes bounds --input read from a file or stdin.
const MaxInputBytes = 64 << 20

// ReadInput resolves an --input value: JSON text, @FILE for a file's
// content, or - for standard input. Empty means {}.
func ReadInput(spec string, stdin io.Reader) (json.RawMessage, error) {
	var data []byte
	switch {
	case spec == "":
		return json.RawMessage("{}"), nil
	case spec == "-":
		b, err := io.ReadAll(io.LimitReader(stdin, MaxInputBytes+1))
		if err != nil {
			return nil, fmt.Errorf("reading input from stdin: %w", err)
		}
		data = b
	case strings.HasPrefix(spec, "@"):
		f, err := os.Open(spec[1:])
		if err != nil {
			return nil, fmt.Errorf("reading input: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxInputBytes+1))
		if err != nil {
			return nil, fmt.Errorf("reading input from %s: %w", spec[1:], err)
		}
		data = b
	default:
		data = []byte(spec)
	}
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("input is larger than %d bytes", MaxInputBytes)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(data) {
		return nil, fmt.Errorf("--input is not valid JSON: %s", preview(data))
	}
	return data, nil
}

func preview(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// PrintJSON writes v as indented JSON.
func PrintJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// PrintTools writes a listing of tools for people.
func PrintTools(w io.Writer, infos []tool.Info) {
	if len(infos) == 0 {
		fmt.Fprintln(w, "no tools defined")
		return
	}
	for i, t := range infos {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s  (%s tool, approval: %s)\n", t.Name, t.Execution, t.Approval)
		for _, line := range strings.Split(strings.TrimSpace(t.Description), "\n") {
			fmt.Fprintf(w, "    %s\n", line)
		}
		var schema bytes.Buffer
		if json.Indent(&schema, t.InputSchema, "      ", "  ") == nil {
			fmt.Fprintf(w, "    input schema:\n      %s\n", schema.String())
		}
		schema.Reset()
		if t.OutputSchema != nil && json.Indent(&schema, t.OutputSchema, "      ", "  ") == nil {
			fmt.Fprintf(w, "    output schema:\n      %s\n", schema.String())
		}
	}
}

// PrintParked writes what agent-sdk call prints when a call parks for
// approval: the call, then the commands that approve and deny it against
// the host at url. Both the CLI's --url call and the agent binary's local
// call print it, so the two read alike (and as README.md shows them).
func PrintParked(w io.Writer, callID, url string) {
	fmt.Fprintf(w, "call %s is waiting for approval:\n  agent-sdk approve %s --url %s\n  agent-sdk deny %s --reason \"…\" --url %s\n",
		callID, callID, url, callID, url)
}
