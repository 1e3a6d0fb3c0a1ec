package tooltest_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentsdk/agentsdk/tool"
	"github.com/agentsdk/agentsdk/tooltest"
)

// GreetInput is the example tool's input.
type GreetInput struct {
	Name string `json:"name" jsonschema:"description=who to greet"`
}

// greetTool is a tool as agent/tools/greet.go would define it (there:
// tool.Define, found by tool.Registered; here tool.New, given in
// Options.Tools).
func greetTool() *tool.Set {
	greet, err := tool.New("greet", tool.Config{Description: "Greet someone."},
		func(ctx context.Context, call *tool.Call, in GreetInput) (any, error) {
			if _, err := call.Host.KV.Set(ctx, "greeted/"+strings.ToLower(in.Name), []byte("yes"), nil); err != nil {
				return nil, err
			}
			if _, _, err := call.Send(ctx, "audit", "greeted "+in.Name, nil); err != nil {
				return nil, err
			}
			return "Hello, " + in.Name + "!", nil
		})
	if err != nil {
		panic(err)
	}
	set, err := tool.NewSet(greet)
	if err != nil {
		panic(err)
	}
	return set
}

// A tool's test: call it as a direct call would, then look at its result
// and at what it did to the host's services. In a test, pass t where the
// example passes nil: tooltest.New(t, …), or tooltest.Call(t, "greet", …)
// for the tools the package defines.
func Example() {
	kit := tooltest.New(nil, &tooltest.Options{Tools: greetTool()})

	out := kit.Call("greet", `{"name":"Ada"}`)
	fmt.Println(out.Text())
	fmt.Println(kit.KV.Keys())
	fmt.Println(kit.Sent()[0].Channel, kit.Sent()[0].Text)

	out = kit.Call("greet", `{"nmae":"Ada"}`)
	fmt.Println(out.Err)
	// Output:
	// Hello, Ada!
	// [greeted/ada]
	// audit greeted Ada
	// invalid input for tool greet: input.name: is required; input.nmae: unknown property, did you mean name?
}

// A call whose tool needs approval for its input does not run: the
// outcome says a host would park it. CallApproved runs it as approved.
func ExampleKit_CallApproved() {
	deploy, err := tool.New("deploy", tool.Config{
		Description:   "Deploy; prod needs a person's approval.",
		NeedsApproval: tool.When(func(in struct{ Env string }) bool { return in.Env == "prod" }),
	}, func(ctx context.Context, call *tool.Call, in struct{ Env string }) (any, error) {
		return "deployed to " + in.Env, nil
	})
	if err != nil {
		panic(err)
	}
	set, _ := tool.NewSet(deploy)
	kit := tooltest.New(nil, &tooltest.Options{Tools: set})

	out := kit.Call("deploy", `{"Env":"prod"}`)
	fmt.Println(out.Parked, out.Result == nil)
	out = kit.CallApproved("deploy", `{"Env":"prod"}`)
	fmt.Println(out.Parked, out.Text())
	out = kit.Call("deploy", `{"Env":"staging"}`)
	fmt.Println(out.Parked, out.Text())
	// Output:
	// true true
	// true deployed to prod
	// false deployed to staging
}
