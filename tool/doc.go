// Package tool defines the typed tools an agent's model (or a person, or a
// program) can call, validates their input and normalises their results.
//
// One file in an agent's agent/tools directory defines one tool, and the
// file's base name is the tool's name:
//
//	// agent/tools/inspect_pr.go
//	package tools
//
//	type InspectPRInput struct {
//		PRURL string `json:"prUrl" jsonschema:"description=the pull request URL,format=uri"`
//	}
//
//	var InspectPR = tool.Define(tool.Config{
//		Description: "Inspect a pull request before approval.",
//	}, func(ctx context.Context, call *tool.Call, in InspectPRInput) (any, error) {
//		return map[string]any{"prUrl": in.PRURL, "ready": true}, nil
//	})
//
// [Define] infers the input schema from the handler's input type, and every
// call is validated against it before the handler runs. [DefineScript]
// declares an agent tool: a script that runs where the agent runs, with its
// JSON input on stdin. [Registered] returns the tools defined this way as a
// [Set]; [New] and [NewScript] build tools with explicit names for programs
// that assemble their own set.
//
// Running a call: [Tool.Validate] checks raw JSON input and decodes it into
// an [Input]; [Tool.Run] runs the handler with a timeout, recovering panics,
// and normalises what it returned into an [Output]. The host package wraps
// both into direct calls with call ids and scratch workspaces.
//
// Decoding and encoding give exactly what encoding/json gives. The usual
// input — a struct of strings, booleans and numbers, sent with its JSON
// names — is decoded without reflection, and so is the usual free-form
// result encoded (maps, slices, strings, booleans, numbers); everything
// else goes through json.Unmarshal and json.Marshal.
//
// # Goroutines
//
// A handler that does work concurrently starts its goroutines with
// [Call.Go], never with a bare go statement. Run recovers a panic in the
// handler's own goroutine, but Go cannot recover a panic in any other
// goroutine: a panic in a goroutine started with go ends the host's
// process, with every call and turn it runs. call.Go recovers it, logs it
// with the call id, and makes the call's result an error; and the call
// waits for its goroutines (up to its timeout) before its result is
// recorded, so that they do not outlive its workspace:
//
//	for _, url := range in.URLs {
//		call.Go(func(ctx context.Context) {
//			results <- fetch(ctx, url)
//		})
//	}
package tool
