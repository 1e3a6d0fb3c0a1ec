package serve_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/evals"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/schedule"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// sendWith sends a request with the test token and the given headers, and
// returns the status and the body.
func sendWith(t *testing.T, method, url, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// The schedule and eval routes answer with "ok": true, as every route does,
// on a host whose store runs durable jobs (which they need).
func TestScheduleAndEvalAnswersSayOK(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tick, err := schedule.New("yearly", schedule.Config{Cron: "0 0 1 1 *", Run: func(context.Context, *schedule.Run) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet()
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), Store: st, Schedules: []*schedule.Schedule{tick}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evals.New(h, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken, Evals: ev})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Shutdown()
	base := ts.URL + "/agent/v1"

	answer := func(method, path, body string, want int) map[string]any {
		t.Helper()
		status, out := sendWith(t, method, base+path, body, nil)
		var v map[string]any
		if err := json.Unmarshal([]byte(out), &v); status != want || err != nil {
			t.Fatalf("%s %s = %d %s; want %d and a JSON object", method, path, status, out, want)
		}
		if v["ok"] != true {
			t.Errorf("%s %s answers without \"ok\": true: %s", method, path, out)
		}
		return v
	}
	if list := answer("GET", "/schedules", "", http.StatusOK); len(list["schedules"].([]any)) != 1 {
		t.Errorf("schedules: %v", list)
	}
	if run := answer("POST", "/schedules/yearly/run", "", http.StatusAccepted); run["schedule"] != "yearly" || run["manual"] != true {
		t.Errorf("the run lost its fields: %v", run)
	}
	batch := answer("POST", "/evals", `{"name":"smoke","cases":[{"message":"hi","checks":[{"noError":true}]}]}`, http.StatusAccepted)
	id, _ := batch["id"].(string)
	if id == "" || batch["name"] != "smoke" || batch["total"] != 1.0 {
		t.Fatalf("the batch lost its fields: %v", batch)
	}
	if list := answer("GET", "/evals", "", http.StatusOK); len(list["batches"].([]any)) != 1 {
		t.Errorf("evals: %v", list)
	}
	if got := answer("GET", "/evals/"+id, "", http.StatusOK); got["id"] != id || got["cases"] == nil {
		t.Errorf("the batch lost its fields: %v", got)
	}
}
