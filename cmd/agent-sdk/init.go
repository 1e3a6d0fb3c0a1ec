package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentsdk/agentsdk/internal/build"
	"github.com/agentsdk/agentsdk/internal/command"
)

func newInit() *cobra.Command {
	var (
		sdk    string
		module string
	)
	cmd := &cobra.Command{
		Use:   "init [DIR]",
		Short: "Scaffold an agent: go.mod, agent/tools/hello.go, agent/lib/, README",
		Long: `init creates an agent in DIR (default: the current directory): a go.mod that
requires this SDK, a first tool in agent/tools/hello.go, agent/lib/ for shared
code, a README and a .gitignore, then runs go mod tidy.

--sdk points the agent at a local checkout of the SDK with a replace directive
(needed when this agent-sdk was built from source rather than installed at a
released version).`,
		Example: `  agent-sdk init myagent --sdk ~/src/agentsdk
  agent-sdk init . --module example.com/myagent`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return scaffold(dir, module, sdk)
		},
	}
	cmd.Flags().StringVar(&sdk, "sdk", "", "path to a local checkout of the SDK (writes a replace directive)")
	cmd.Flags().StringVar(&module, "module", "", "module path of the new agent (default: the directory's name)")
	return cmd
}

var moduleNameChars = regexp.MustCompile(`[^A-Za-z0-9._~/-]+`)

func scaffold(dir, module, sdk string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(abs, "agent")); err == nil {
		return exitWith(command.ExitRefused, "%s already has an agent directory; not overwriting it", abs)
	}
	if _, err := os.Stat(filepath.Join(abs, "go.mod")); err == nil {
		return exitWith(command.ExitRefused, "%s already has a go.mod; add agent/tools to it by hand, or init a new directory", abs)
	}
	if module == "" {
		module = strings.Trim(moduleNameChars.ReplaceAllString(strings.ToLower(filepath.Base(abs)), "-"), "-./")
		if module == "" {
			module = "agent"
		}
	}
	require := "require " + build.SDKModule + " "
	replace := ""
	if sdk != "" {
		sdkAbs, err := filepath.Abs(sdk)
		if err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(sdkAbs, "tool", "tool.go")); err != nil {
			return exitWith(command.ExitRefused, "--sdk %s does not look like a checkout of %s (no tool/tool.go)", sdk, build.SDKModule)
		}
		require += "v0.0.0-00010101000000-000000000000"
		replace = fmt.Sprintf("\nreplace %s => %s\n", build.SDKModule, sdkAbs)
	} else {
		v := sdkVersionOnly()
		if v == "" {
			return exitWith(command.ExitRefused, "this agent-sdk was built from source, so it has no released SDK version to require: pass --sdk PATH_TO_YOUR_CHECKOUT")
		}
		require += v
	}
	files := map[string]string{
		"go.mod":               fmt.Sprintf("module %s\n\ngo 1.26\n\n%s\n%s", module, require, replace),
		"agent/tools/hello.go": helloTool,
		"agent/lib/lib.go":     libFile,
		"README.md":            fmt.Sprintf(readmeTemplate, filepath.Base(abs)),
		".gitignore":           ".agent-sdk/\n",
	}
	for name, content := range files {
		path := filepath.Join(abs, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "created an agent in %s; running go mod tidy…\n", abs)
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = abs
	if out, err := tidy.CombinedOutput(); err != nil {
		return exitWith(command.ExitFailure, "go mod tidy: %v\n%s", err, out)
	}
	fmt.Fprintf(os.Stderr, "done. Next:\n  agent-sdk call hello --dir %s --input '{\"name\":\"Ada\"}'\n  agent-sdk serve --dir %s\n", dir, dir)
	return nil
}

// sdkVersionOnly is this CLI's released module version, or "" for a build
// from source.
func sdkVersionOnly() string {
	v := sdkVersion()
	if i := strings.IndexByte(v, '+'); i >= 0 {
		v = v[:i]
	}
	if v == "" || v == "(devel)" || v == "unknown" {
		return ""
	}
	return v
}

const helloTool = `package tools

import (
	"context"
	"fmt"

	"github.com/agentsdk/agentsdk/tool"
)

// HelloInput is hello's input; its JSON Schema is inferred from the struct.
type HelloInput struct {
	Name string ` + "`" + `json:"name" jsonschema:"who to greet"` + "`" + `
}

// Hello greets someone. The file's name, hello.go, is the tool's name.
var Hello = tool.Define(tool.Config{
	Description: "Greet someone by name.",
}, func(ctx context.Context, call *tool.Call, in HelloInput) (any, error) {
	return fmt.Sprintf("Hello, %s!", in.Name), nil
})
`

const libFile = `// Package lib holds code shared by the agent's tools. Files in agent/tools
// each define exactly one tool; everything else goes here.
package lib
`

const readmeTemplate = `# %s

An agent built with the Agent SDK for Go. Each file in agent/tools defines one
tool, named after the file; shared code lives in agent/lib.

    agent-sdk tools --dir .                                   # list the tools
    agent-sdk call hello --dir . --input '{"name":"Ada"}'     # call one, no model turn
    agent-sdk serve --dir .                                   # serve the HTTP API
`
