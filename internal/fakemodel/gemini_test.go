package fakemodel_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// Every streamed Gemini answer's content has parts that are a list or
// none at all: Gemini CLI fails a turn on `"parts": null` ("Cannot read
// properties of null (reading 'length')"), which the fake once sent in
// its last answer, the one with the finish reason.
func TestGeminiStreamPartsNeverNull(t *testing.T) {
	fake := fakemodel.New(fakemodel.Reply{Text: []string{"hello ", "there"}},
		fakemodel.Reply{Calls: []fakemodel.Call{{Name: "run_shell_command", Input: `{"command":"true"}`}}})
	defer fake.Close()
	for i := range 2 {
		req, err := http.NewRequest("POST", fake.GeminiURL()+"/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse",
			strings.NewReader(`{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("x-goog-api-key", "k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("streaming step %d: %v", i, err)
		}
		events, finished := 0, false
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			events++
			var ev struct {
				Candidates []struct {
					Content      map[string]json.RawMessage `json:"content"`
					FinishReason string                     `json:"finishReason"`
				} `json:"candidates"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil || len(ev.Candidates) != 1 {
				t.Fatalf("step %d: event %s: %v", i, data, err)
			}
			c := ev.Candidates[0]
			if parts, has := c.Content["parts"]; has {
				var list []json.RawMessage
				if json.Unmarshal(parts, &list) != nil || len(list) == 0 {
					t.Errorf("step %d: event %s: parts is %s, want a non-empty list or none", i, data, parts)
				}
			}
			finished = finished || c.FinishReason == "STOP"
		}
		resp.Body.Close()
		if events < 2 || !finished {
			t.Errorf("step %d: %d events, finished %v: want the deltas and a last event with STOP", i, events, finished)
		}
	}
}
