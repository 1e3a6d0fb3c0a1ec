package host_test

import (
	"context"
	"encoding/json"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/tool"
)

// bigText is 300 KiB of numbered lines, with a marker deep inside.
func bigText() string {
	var b strings.Builder
	for i := 0; b.Len() < 300<<10; i++ {
		if i == 3000 {
			b.WriteString("the needle is here\n")
		}
		b.WriteString(strings.Repeat("line ", 10) + "\n")
	}
	return b.String()
}

type row struct {
	Text string `json:"text"`
}

func budgetHost(t *testing.T, script ...fakemodel.Reply) (*host.Host, *fakemodel.Server) {
	t.Helper()
	text := bigText()
	big, _ := tool.New("big", tool.Config{Description: "A 300 KiB result."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return text, nil })
	huge, _ := tool.New("huge", tool.Config{Description: "A result that encodes to 600 MiB."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			r := &row{Text: strings.Repeat("x", 600)}
			rows := make([]*row, 1<<20)
			for i := range rows {
				rows[i] = r
			}
			return rows, nil
		})
	set, _ := tool.NewSet(big, huge)
	return modelHost(t, set, host.Options{}, script...)
}

// A 300 KiB result in a model turn reaches the model (and the stream) as a
// preview under the budget; it is saved whole as an artifact, which the
// built-in read_result reads by range and searches. A direct call gets it
// whole.
func TestLargeResultForTheModel(t *testing.T) {
	h, fake := budgetHost(t,
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "m1", Name: "big", Input: `{}`}}},
		fakemodel.Reply{Text: []string{"It is big."}},
	)
	ctx := context.Background()
	text := bigText()
	// The artifact's name is the call id, which the host makes: learn it
	// from the first turn, then script the reads with it.
	sess, turn, err := h.Sessions().Create(ctx, host.SessionOptions{Message: "read the big one"})
	if err != nil {
		t.Fatal(err)
	}
	evs := waitTurnEnd(t, h, sess.ID, turn)
	results := find(evs, api.KindActionResult)
	if len(results) == 0 {
		t.Fatalf("no results: %s", kinds(evs))
	}
	var first api.ActionResult
	json.Unmarshal(results[0].Data, &first)
	var preview struct {
		Truncated bool   `json:"truncated"`
		Size      int    `json:"size"`
		Artifact  string `json:"artifact"`
		Preview   string `json:"preview"`
	}
	if err := json.Unmarshal(first.Result, &preview); err != nil || !preview.Truncated || preview.Size != len(text) ||
		preview.Artifact != "results/"+first.CallID+".txt" || !strings.HasPrefix(text, preview.Preview) || len(results[0].Data) > host.ModelResultBytesDefault {
		t.Fatalf("the stream's result (%d bytes): %.300s", len(results[0].Data), first.Result)
	}
	r, info, err := h.Sessions().Artifact(ctx, sess.ID, preview.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := io.ReadAll(r)
	r.Close()
	if string(whole) != text || info.Size != int64(len(text)) {
		t.Errorf("the artifact holds %d bytes, want the whole %d", len(whole), len(text))
	}
	reqs := fake.Requests()
	if len(reqs) < 2 || len(reqs[1]) > 3*host.ModelResultBytesDefault || strings.Contains(string(reqs[1]), text[200000:200100]) {
		t.Errorf("the model's second request is %d bytes", len(reqs[1]))
	}
	// The model reads on with read_result, by range and by search (the
	// artifact's name comes from the call id the host made).
	fake2 := []fakemodel.Reply{
		{Calls: []fakemodel.Call{{ID: "r1", Name: "read_result", Input: `{"artifact":"` + preview.Artifact + `","offset":100000,"length":500}`},
			{ID: "r2", Name: "read_result", Input: `{"artifact":"` + preview.Artifact + `","search":"needle"}`}}},
		{Text: []string{"ok"}},
	}
	for _, r := range fake2 {
		fake.Push(r)
	}
	turn2, err := h.Sessions().Send(ctx, sess.ID, "read on")
	if err != nil {
		t.Fatal(err)
	}
	evs = waitTurnEnd(t, h, sess.ID, turn2)
	var rangeRes, searchRes map[string]any
	for _, e := range evs {
		if e.TurnID != turn2 || e.Kind != api.KindActionResult {
			continue
		}
		var ar api.ActionResult
		json.Unmarshal(e.Data, &ar)
		var m map[string]any
		json.Unmarshal(ar.Result, &m)
		if ar.ModelCallID == "r1" {
			rangeRes = m
		} else {
			searchRes = m
		}
	}
	if rangeRes["text"] != text[100000:100500] {
		t.Errorf("read_result by range: %.200v", rangeRes)
	}
	if searchRes["count"] != float64(1) || !strings.Contains(searchRes["matches"].([]any)[0].(map[string]any)["text"].(string), "needle") {
		t.Errorf("read_result search: %.300v", searchRes)
	}
	// A direct call gets the result whole.
	if out, err := h.CallTool(ctx, "big", nil, nil); err != nil || len(out.Result) < len(text) {
		t.Errorf("a direct call got %d bytes", len(out.Result))
	}
}

// A result that would encode to 600 MiB is refused before it is encoded:
// an isError saying the limit, and the host's memory stays small.
func TestHugeResultRefused(t *testing.T) {
	h, _ := budgetHost(t)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	out, err := h.CallTool(context.Background(), "huge", nil, nil)
	took := time.Since(start)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if err != nil || !out.IsError || !strings.Contains(string(out.Result), "too large") || !strings.Contains(string(out.Result), "16777216") {
		t.Fatalf("%+v %v", out, err)
	}
	grew := int64(after.TotalAlloc - before.TotalAlloc)
	t.Logf("refused in %v; allocated %d MiB in all (the tool's own slice is 8 MiB): %s", took.Round(time.Millisecond), grew>>20, out.Result)
	if grew > 64<<20 {
		t.Errorf("the host allocated %d MiB refusing it", grew>>20)
	}
}

// waitTurnEnd waits for a turn to end and returns the session's events.
func waitTurnEnd(t *testing.T, h *host.Host, sessionID, turnID string) []api.Event {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		evs, _ := h.Sessions().Events(context.Background(), sessionID, 0, 0)
		for _, e := range evs {
			if e.TurnID == turnID && (e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed) {
				return evs
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("turn %s did not end: %s", turnID, kinds(evs))
		}
	}
}
