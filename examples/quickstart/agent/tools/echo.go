package tools

import "github.com/agentsdk/agentsdk/tool"

// EchoInput is echo's input.
type EchoInput struct {
	Message string `json:"message" jsonschema:"the message to echo"`
}

// Echo echoes a message from the agent workspace. It is an agent tool: a
// script that reads its JSON input on stdin and prints its result.
var Echo = tool.DefineScript(tool.Config{
	Description: "Echo a message from the agent workspace.",
	InputSchema: tool.SchemaOf[EchoInput](),
}, `#!/usr/bin/env bash
set -euo pipefail
message=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["message"])')
printf '%s\n' "$message"
`)
