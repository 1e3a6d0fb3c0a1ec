package modeltest_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/modeltest"
	"github.com/agentsdk/agentsdk/tool"
)

// weatherInput is the weather tool's input.
type weatherInput struct {
	City string `json:"city" jsonschema:"the city"`
}

// A host's model turn against a scripted model: the model calls a tool,
// reads its result and answers; the test then checks what the model was
// sent.
func ExampleNew() {
	weather, err := tool.New("weather", tool.Config{Description: "Weather in a city."},
		func(ctx context.Context, call *tool.Call, in weatherInput) (any, error) {
			return map[string]string{"city": in.City, "sky": "clear"}, nil
		})
	if err != nil {
		log.Fatal(err)
	}
	set, err := tool.NewSet(weather)
	if err != nil {
		log.Fatal(err)
	}

	m := modeltest.New(
		modeltest.Call("weather", map[string]string{"city": "Paris"}),
	).On(modeltest.AfterTool("weather"), modeltest.Text("Clear skies in Paris."))

	state, err := os.MkdirTemp("", "agent-state")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(state)
	h, err := host.New(set, &host.Options{StateRoot: state, Model: m})
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Start(ctx); err != nil {
		log.Fatal(err)
	}
	sess, _, err := h.Sessions().Create(ctx, host.SessionOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := h.Sessions().Send(ctx, sess.ID, "What is the weather in Paris?"); err != nil {
		log.Fatal(err)
	}
	for e, err := range h.Sessions().Follow(ctx, sess.ID, 0) {
		if err != nil {
			log.Fatal(err)
		}
		switch e.Kind {
		case api.KindMessage:
			p, _ := api.Decode[api.Message](e)
			fmt.Printf("%s: %s\n", p.Role, p.Text)
		case api.KindActionResult:
			p, _ := api.Decode[api.ActionResult](e)
			fmt.Printf("%s → %s\n", p.Tool, p.Result)
		}
		if e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed {
			break
		}
	}

	reqs := m.Requests()
	fmt.Println("model calls:", len(reqs))
	last := reqs[len(reqs)-1].Messages
	fmt.Println("the second was sent:", last[len(last)-1].ToolResults[0].Content)
	fmt.Println("answers left:", m.Left())
	// Output:
	// user: What is the weather in Paris?
	// weather → {"city":"Paris","sky":"clear"}
	// assistant: Clear skies in Paris.
	// model calls: 2
	// the second was sent: {"city":"Paris","sky":"clear"}
	// answers left: 0
}

// Record a provider's answers once, then replay them with the provider
// gone; a request that changed fails with a diff naming the change.
func ExampleReplay() {
	dir, err := os.MkdirTemp("", "cassettes")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	req := &model.Request{System: "You are a weather agent.\nBe brief.", Messages: []model.Message{{Role: model.User, Text: "Weather in Paris?"}}}

	// A real provider in a real test (anthropic.New(…)); scripted here.
	provider := modeltest.New(modeltest.Text("Clear skies."))
	rec, err := modeltest.Record(provider, dir)
	if err != nil {
		log.Fatal(err)
	}
	for _, err := range rec.Stream(ctx, req) {
		if err != nil {
			log.Fatal(err)
		}
	}

	replay, err := modeltest.Replay(dir)
	if err != nil {
		log.Fatal(err)
	}
	for c, err := range replay.Stream(ctx, req) {
		if err != nil {
			log.Fatal(err)
		}
		switch {
		case c.Text != "":
			fmt.Printf("text %q\n", c.Text)
		case c.End != nil:
			fmt.Println("end:", c.End.StopReason)
		}
	}

	req.System = "You are a weather agent.\nBe very brief."
	for _, err := range replay.Stream(ctx, req) {
		_, diff, _ := strings.Cut(err.Error(), "\n")
		fmt.Println(diff)
	}
	// Output:
	// text "Clear "
	// text "skies."
	// end: end_turn
	//   system: "You are a weather agent."
	// - system: "Be brief."
	// + system: "Be very brief."
	//   messages[0] user: "Weather in Paris?"
}
