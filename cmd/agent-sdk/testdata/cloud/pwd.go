package tools

import "github.com/agentsdk/agentsdk/tool"

// PwdInput is pwd's input: how long to sleep first.
type PwdInput struct {
	Sleep int `json:"sleep,omitempty"`
}

// pwd is an agent tool: it prints the directory it runs in (a workspace),
// after saying so on stderr (live output) and sleeping for sleep seconds.
var _ = tool.DefineScript(tool.Config{
	Description: "Print the workspace directory.",
	InputSchema: tool.SchemaOf[PwdInput](),
}, `#!/bin/sh
input=$(cat)
echo "looking around" >&2
case "$input" in *'"sleep":'[1-9]*) sleep 30 ;; esac
printf '{"dir":"%s"}\n' "$(pwd)"
`)
