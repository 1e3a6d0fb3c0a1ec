package client_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// A direct call, a refused one, and one parked until it is approved, on a
// real host (started by exampleHost).
func Example() {
	url, stop := exampleHost()
	defer stop()
	ctx := context.Background()

	c, err := client.New(url, testToken, nil)
	if err != nil {
		panic(err)
	}
	out, err := c.CallTool(ctx, "greet", map[string]string{"name": "Ada"}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %s\n", out.ToolName, out.Result)

	_, err = c.CallTool(ctx, "gret", nil, nil)
	var apiErr *api.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Code, apiErr.Available)
	}

	_, err = c.CallTool(ctx, "promote", map[string]string{"service": "api", "environment": "production"}, nil)
	var pending *client.PendingError
	if errors.As(err, &pending) {
		fmt.Println(pending.Status)
		if _, err := c.Approve(ctx, pending.CallID, nil); err != nil {
			panic(err)
		}
		done, err := c.WaitCall(ctx, pending.CallID, 0)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s\n", done.Status, done.Result)
	}
	// Output:
	// greet: "Hello, Ada!"
	// unknown_tool [fail greet keep promote]
	// approval_pending
	// approved: {"promoted":"api","to":"production"}
}

// A model turn, followed as it runs.
func ExampleClient_Events() {
	url, stop := exampleHost(fakemodel.Reply{Text: []string{"Hello", " there."}})
	defer stop()
	ctx := context.Background()

	c, err := client.New(url, testToken, nil)
	if err != nil {
		panic(err)
	}
	turn, err := c.CreateSession(ctx, api.CreateSessionRequest{Message: "Say hello"})
	if err != nil {
		panic(err)
	}
	for e, err := range c.Events(ctx, turn.SessionID, 0) {
		if err != nil {
			panic(err)
		}
		switch e.Kind {
		case api.KindMessage:
			m, err := api.Decode[api.Message](e)
			if err != nil {
				panic(err)
			}
			fmt.Printf("%d %s: %s\n", e.Seq, m.Role, m.Text)
		case api.KindTurnCompleted:
			fmt.Println(e.Seq, e.Kind)
		}
		if e.Kind == api.KindTurnCompleted && e.TurnID == turn.TurnID {
			break
		}
	}
	// Output:
	// 3 user: Say hello
	// 6 assistant: Hello there.
	// 8 turn.completed
}
