package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

// The direct call's shortcut past the mux answers every request exactly as
// the mux does: the plain calls it takes, and the odd paths it leaves to the
// mux (escaped, unclean, a trailing slash, other methods).
func TestDirectRouteAnswersAsTheMux(t *testing.T) {
	echo, err := tool.New("echo_it", tool.Config{Description: "Echo."},
		func(ctx context.Context, call *tool.Call, in struct {
			S string `json:"s"`
		}) (any, error) {
			return in.S, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(echo)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv, err := serve.New(h, &serve.Options{Slug: "agent", Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		method, target string
		direct         bool // the shortcut takes it
	}{
		{"POST", "/agent/v1/tools/echo_it", true},
		{"POST", "/agent/v1/tools/no-such_tool", true},
		{"POST", "/agent/v1/tools/echo_it?x=1", true},
		{"POST", "/agent/v1/tools/ech%6F_it", false},
		{"POST", "/agent/v1/tools/echo%5Fit", false},
		{"POST", "/agent/v1/tools/echo_it/", false},
		{"POST", "/agent/v1/tools//echo_it", false},
		{"POST", "/agent/v1/tools/./echo_it", false},
		{"POST", "/agent/v1/tools/../tools/echo_it", false},
		{"POST", "/agent/v1/tools/a.b", false},
		{"POST", "/agent/v1/tools/", false},
		{"POST", "/agent/v1/tools/" + strings.Repeat("x", 65), false},
		{"POST", "/agent/v1/tools/a%2Fb", false},
		{"POST", "/Agent/v1/tools/echo_it", false},
		{"GET", "/agent/v1/tools/echo_it", false},
		{"PUT", "/agent/v1/tools/echo_it", false},
	}
	answer := func(method, target string) (status int, location, code string, result any) {
		r := httptest.NewRequest(method, target, strings.NewReader(`{"input":{"s":"hi"}}`))
		r.Header.Set("Authorization", "Bearer "+testToken)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		var body struct {
			Result any `json:"result"`
			Error  struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		json.Unmarshal(w.Body.Bytes(), &body)
		return w.Code, w.Header().Get("Location"), body.Error.Code, body.Result
	}
	for _, c := range cases {
		serve.SetDirectRoute(srv, true)
		r := httptest.NewRequest(c.method, c.target, nil)
		if got := serve.DirectRouteTakes(srv, r); got != c.direct {
			t.Errorf("%s %s: the shortcut takes it: %v, want %v", c.method, c.target, got, c.direct)
		}
		status, loc, code, res := answer(c.method, c.target)
		serve.SetDirectRoute(srv, false)
		mStatus, mLoc, mCode, mRes := answer(c.method, c.target)
		if status != mStatus || loc != mLoc || code != mCode || res != mRes {
			t.Errorf("%s %s: with the shortcut %d %q %q %v; through the mux %d %q %q %v",
				c.method, c.target, status, loc, code, res, mStatus, mLoc, mCode, mRes)
		}
		if c.direct && c.target == "/agent/v1/tools/echo_it" && (status != http.StatusOK || res != "hi") {
			t.Errorf("the plain call: %d %v", status, res)
		}
	}
}
