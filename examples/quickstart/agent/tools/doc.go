// Package tools is the quickstart agent's tools, one per file: the reference
// page's examples in Go.
//
//   - inspect_pr: a server tool with a uri input.
//   - echo: an agent tool, a bash script run where the agent runs.
//   - promote_build: a server tool that needs a person's approval when it
//     promotes to production.
package tools
