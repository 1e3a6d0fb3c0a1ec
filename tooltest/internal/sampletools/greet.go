package sampletools

import (
	"context"
	"fmt"

	"github.com/agentsdk/agentsdk/tool"
)

// GreetInput is greet's input.
type GreetInput struct {
	Name  string `json:"name" jsonschema:"description=who to greet,minLength=1"`
	Times int    `json:"times,omitempty" jsonschema:"minimum=1,maximum=3"`
}

var _ = tool.Define(tool.Config{Description: "Greet someone."},
	func(ctx context.Context, call *tool.Call, in GreetInput) (any, error) {
		call.Progress(ctx, 1, 2, "thinking of a greeting")
		call.Output(ctx, "greeting "+in.Name+"\n")
		call.Progress(ctx, 2, 2, "")
		return fmt.Sprintf("Hello, %s!", in.Name), nil
	})
