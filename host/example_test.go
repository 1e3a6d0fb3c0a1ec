package host_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/agentsdk/agentsdk/api"
	_ "github.com/agentsdk/agentsdk/examples/quickstart/agent/tools"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
)

// Call the quickstart agent's inspect_pr tool directly, with no model turn.
func ExampleHost_CallTool() {
	set, err := tool.Registered()
	if err != nil {
		log.Fatal(err)
	}
	state, err := os.MkdirTemp("", "agent-state")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(state)

	h, err := host.New(set, &host.Options{StateRoot: state})
	if err != nil {
		log.Fatal(err)
	}
	out, err := h.CallTool(context.Background(), "inspect_pr", map[string]any{
		"prUrl": "https://github.com/acme/checkout/pull/42",
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("tool:", out.ToolName)
	fmt.Println("isError:", out.IsError)
	fmt.Println("result:", string(out.Result))
	// Output:
	// tool: inspect_pr
	// isError: false
	// result: {"checks":["unit","lint"],"prUrl":"https://github.com/acme/checkout/pull/42","ready":true}
}

// The tools of a set, described as a model or a person sees them.
func Example_tools() {
	set, err := tool.Registered()
	if err != nil {
		log.Fatal(err)
	}
	for _, info := range set.Infos() {
		fmt.Printf("%s (%s, approval %s): %s\n", info.Name, info.Execution, info.Approval, info.InputSchema)
	}
	// Output:
	// echo (agent, approval never): {"properties":{"message":{"type":"string","description":"the message to echo"}},"additionalProperties":false,"type":"object","required":["message"]}
	// inspect_pr (server, approval never): {"properties":{"prUrl":{"type":"string","format":"uri","description":"the pull request URL"}},"additionalProperties":false,"type":"object","required":["prUrl"]}
	// promote_build (server, approval conditional): {"properties":{"service":{"type":"string","description":"the service to promote"},"buildId":{"type":"string","description":"the verified build"},"environment":{"type":"string","enum":["staging","production"],"description":"where to promote it"}},"additionalProperties":false,"type":"object","required":["service","buildId","environment"]}
	// run_checks (server, approval never): {"properties":{"prUrl":{"type":"string","format":"uri","description":"the pull request URL"}},"additionalProperties":false,"type":"object","required":["prUrl"]}
}

// Follow a session's stream: a direct call in the session is a turn of
// its own, whose events arrive in order as they are stored.
func ExampleSessions_Follow() {
	set, err := tool.Registered()
	if err != nil {
		log.Fatal(err)
	}
	state, err := os.MkdirTemp("", "agent-state")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(state)
	h, err := host.New(set, &host.Options{StateRoot: state})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess, _, err := h.Sessions().Create(ctx, host.SessionOptions{})
	if err != nil {
		log.Fatal(err)
	}
	go h.CallTool(ctx, "inspect_pr", map[string]any{"prUrl": "https://github.com/acme/checkout/pull/42"}, &host.CallOptions{SessionID: sess.ID})
	for e, err := range h.Sessions().Follow(ctx, sess.ID, 0) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Seq, e.Kind)
		if e.Kind == api.KindTurnCompleted {
			break
		}
	}
	// Output:
	// 1 session.created
	// 2 turn.started
	// 3 action.result
	// 4 turn.completed
}
