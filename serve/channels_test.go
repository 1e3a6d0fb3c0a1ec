package serve_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/serve"
	"github.com/agentsdk/agentsdk/tool"
)

const hookSecret = "hook-secret"

func hookSign(body string) string {
	m := hmac.New(sha256.New, []byte(hookSecret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// hookChannel has a signed route (its own HMAC check) that calls a tool
// through its handle, and a route behind the host's token; both count the
// requests they serve in hooked.
func hookChannel(t *testing.T, hooked *atomic.Int32) *channel.Channel {
	verify := channel.Verify(func(r *http.Request, body []byte) error {
		if !hmac.Equal([]byte(r.Header.Get("X-Signature")), []byte(hookSign(string(body)))) {
			return fmt.Errorf("bad signature")
		}
		return nil
	})
	c, err := channel.New("hook", channel.Config{Routes: []channel.Route{
		{Method: "POST", Path: "/signed", Auth: verify, MaxBodyBytes: 256, Handler: func(h tool.Handle, w http.ResponseWriter, r *http.Request) {
			hooked.Add(1)
			body, _ := io.ReadAll(r.Body) // the verifier's body, readable again
			out, err := h.CallTool(r.Context(), "quick", map[string]any{}, nil)
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			fmt.Fprintf(w, "%s %s", body, out.Result)
		}},
		{Method: "GET", Path: "/items/{id}", Handler: func(h tool.Handle, w http.ResponseWriter, r *http.Request) {
			hooked.Add(1)
			fmt.Fprint(w, "item "+r.PathValue("id"))
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChannelRoutes: a channel's routes are mounted under
// /<slug>/channels/<id>; a signed route runs its handler only for a valid
// signature (whatever the token), a bearer route only with the token.
func TestChannelRoutes(t *testing.T) {
	hd := serveHardened(t, serve.Options{}, serve.ListenOptions{})
	c := newClient(t)
	url := hd.base + serve.ChannelPath("agent", "hook")
	signed := func(body, sig, auth string) answer {
		req, _ := http.NewRequest("POST", url+"/signed", strings.NewReader(body))
		if sig != "" {
			req.Header.Set("X-Signature", sig)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return answer{status: resp.StatusCode, body: string(b), code: codeOf(b), header: resp.Header}
	}
	body := `{"event":"push"}`
	if a := signed(body, hookSign(body), ""); a.status != 200 || a.body != body+` "done"` {
		t.Fatalf("a signed request: %d %s", a.status, a.body)
	}
	for name, a := range map[string]answer{
		"no signature":          signed(body, "", ""),
		"wrong signature":       signed(body, hookSign("other"), ""),
		"altered body":          signed(body+" ", hookSign(body), ""),
		"the token, no sig":     signed(body, "", "Bearer "+testToken),
		"a signature of empty":  signed("", hookSign(""), ""), /* verified: accepted below */
		"over the route's body": signed(strings.Repeat("x", 300), hookSign(strings.Repeat("x", 300)), ""),
	} {
		switch name {
		case "a signature of empty":
			if a.status != 200 {
				t.Errorf("%s: %d %s", name, a.status, a.body)
			}
		case "over the route's body":
			if a.status != 413 || a.code != "body_too_large" {
				t.Errorf("%s: %d %s", name, a.status, a.body)
			}
		default:
			if a.status != 401 || a.code != "unauthorized" || !strings.Contains(a.body, "verification") {
				t.Errorf("%s: %d %s", name, a.status, a.body)
			}
		}
	}
	if n := hd.hooked.Load(); n != 2 {
		t.Fatalf("the signed handler ran %d times, want 2 (the valid requests)", n)
	}
	if a := send(t, c, "GET", url+"/items/42", "Bearer "+testToken, ""); a.status != 200 || a.body != "item 42" {
		t.Fatalf("the bearer route with the token: %d %s", a.status, a.body)
	}
	if a := send(t, c, "GET", url+"/items/42", "", ""); a.status != 401 || a.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("the bearer route without the token: %d %s", a.status, a.body)
	}
	if a := send(t, c, "GET", url+"/signed", "", ""); a.status != 401 {
		t.Fatalf("the signed route's path with another method, no token: %d %s", a.status, a.body)
	}
	if n := hd.hooked.Load(); n != 3 {
		t.Fatalf("handlers ran %d times, want 3", n)
	}
}
