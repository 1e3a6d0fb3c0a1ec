package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

// A direct call's handler runs on the request's goroutine; one that
// ignores its context past its timeout is still answered on time, with
// the timeout, while it runs — and the host serves other calls meanwhile
// and after.
func TestDirectCallOverrunIsAnsweredOnTime(t *testing.T) {
	release := make(chan struct{})
	var returned atomic.Bool
	stuck, _ := tool.New("stuck", tool.Config{Description: "Ignores its context.", Timeout: 100 * time.Millisecond},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
			<-release
			returned.Store(true)
			return "late", nil
		})
	echo, _ := tool.New("echo", tool.Config{Description: "Answers at once."},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "hi", nil })
	base, _ := serveTools(t, stuck, echo)
	t.Cleanup(func() { close(release) }) // before the server closes, which waits for the stuck request
	call := func(name string) (*http.Response, api.Outcome) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/v1/tools/"+name, strings.NewReader(`{"input":{}}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out api.Outcome
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Fatalf("%s: decoding the answer: %v", name, err)
		}
		return resp, out
	}

	resp, out := call("stuck")
	if returned.Load() {
		t.Fatal("the handler returned before the answer came: it was not stuck")
	}
	if resp.StatusCode != 200 || !out.IsError || !strings.Contains(string(out.Result), "timed out after 100ms") {
		t.Fatalf("status %d, outcome %+v: want 200 and the timeout", resp.StatusCode, out)
	}
	if out.CallID == "" || resp.Header.Get(serve.CallIDHeader) != out.CallID {
		t.Errorf("call id %q, header %q", out.CallID, resp.Header.Get(serve.CallIDHeader))
	}
	if !resp.Close {
		t.Error("the answer does not close its connection, which stays busy until the handler returns")
	}
	if _, out := call("echo"); out.IsError || string(out.Result) != `"hi"` {
		t.Errorf("another call while the first handler is stuck: %+v", out)
	}
}
