package host_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model/modeltest"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/tool"
)

// A session's hooks answer its model calls instead of the host's model,
// and the valid tool calls they take instead of the tools (a gated one
// not parked), marked stubbed; the calls they decline run. Released, the
// session's next turn has the host's model again.
func TestHookSession(t *testing.T) {
	var gatedRan, freeRan atomic.Int32
	gated, _ := tool.New("gated", tool.Config{Description: "Gated.", NeedsApproval: tool.Always}, func(ctx context.Context, call *tool.Call, in struct{}) (string, error) {
		gatedRan.Add(1)
		return "ran", nil
	})
	free, _ := tool.New("free", tool.Config{Description: "Free."}, func(ctx context.Context, call *tool.Call, in struct {
		N int `json:"n"`
	}) (string, error) {
		freeRan.Add(1)
		return "ran free", nil
	})
	set, err := tool.NewSet(gated, free)
	if err != nil {
		t.Fatal(err)
	}
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	h := startHost(t, memory.New(), set, fake.AnthropicURL(), host.Options{})
	ctx := context.Background()

	// The turn's calls run at once, so the hook is asked concurrently.
	var mu sync.Mutex
	asked := map[string]host.HookedCall{}
	scripted := modeltest.New(
		modeltest.Call("gated", map[string]any{}).Call("free", map[string]any{"n": 1}).Call("free", map[string]any{"n": "not a number"}),
		modeltest.Text("done"))
	id := host.NewSessionID()
	release := h.HookSession(id, host.SessionHooks{Model: scripted, Call: func(ctx context.Context, c host.HookedCall) (tool.Output, bool) {
		mu.Lock()
		asked[c.Tool.Name()] = c
		mu.Unlock()
		if c.Tool.Name() != "gated" {
			return tool.Output{}, false
		}
		return tool.Output{Result: json.RawMessage(`"stubbed!"`)}, true
	}})
	_, turn, err := h.Sessions().Create(ctx, host.SessionOptions{ID: id, Message: "go"})
	if err != nil {
		t.Fatal(err)
	}
	evs := waitTurnEnd(t, h, id, turn)
	if n := len(fake.Requests()); n != 0 || scripted.Left() != 0 {
		t.Errorf("the host's model got %d requests, the hooks' has %d answers left", n, scripted.Left())
	}
	if gatedRan.Load() != 0 || freeRan.Load() != 1 || len(find(evs, api.KindApprovalRequested)) != 0 {
		t.Errorf("gated ran %d times, free %d; events %s", gatedRan.Load(), freeRan.Load(), kinds(evs))
	}
	// The invalid call is refused before the hook is asked.
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 || asked["gated"].Tool == nil || string(asked["free"].Input) != `{"n":1}` || asked["free"].SessionID != id || asked["free"].TurnID != turn {
		t.Errorf("the hook was asked about %+v", asked)
	}
	var stubbed, results int
	for _, e := range find(evs, api.KindActionResult) {
		r, _ := api.Decode[api.ActionResult](e)
		results++
		if r.Stubbed {
			stubbed++
			if r.Tool != "gated" || string(r.Result) != `"stubbed!"` {
				t.Errorf("stubbed: %+v", r)
			}
		}
	}
	if results != 3 || stubbed != 1 {
		t.Errorf("%d results, %d stubbed: %s", results, stubbed, kinds(evs))
	}

	release()
	release() // twice is fine
	fake.Push(fakemodel.Reply{Text: []string{"the host's model"}})
	turn, err = h.Sessions().Send(ctx, id, "again")
	if err != nil {
		t.Fatal(err)
	}
	waitTurnEnd(t, h, id, turn)
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("after release, the host's model got %d requests, want 1", n)
	}
}
