package channel_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/channel"
	"github.com/agentsdk/agentsdk/tool"
)

func ok(tool.Handle, http.ResponseWriter, *http.Request) {}

func TestNewRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		id     string
		routes []channel.Route
		want   string
	}{
		"nil verifier":  {"gh", []channel.Route{{Method: "POST", Path: "/hook", Auth: channel.Verify(nil), Handler: ok}}, "the verifier is nil"},
		"no handler":    {"gh", []channel.Route{{Method: "POST", Path: "/hook"}}, "no Handler"},
		"bad method":    {"gh", []channel.Route{{Method: "post", Path: "/hook", Handler: ok}}, "not an HTTP method"},
		"bad path":      {"gh", []channel.Route{{Method: "GET", Path: "hook", Handler: ok}}, "must start with /"},
		"query in path": {"gh", []channel.Route{{Method: "GET", Path: "/hook?x=1", Handler: ok}}, "must start with /"},
		"twice": {"gh", []channel.Route{{Method: "GET", Path: "/a", Handler: ok}, {Method: "GET", Path: "/a", Handler: ok}},
			"declared twice"},
		"negative body": {"gh", []channel.Route{{Method: "GET", Path: "/a", Handler: ok, MaxBodyBytes: -1}}, "cannot be negative"},
		"bad id":        {"no spaces", nil, "channel"},
		"host's own":    {"http", nil, "the host's own channel"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := channel.New(tc.id, channel.Config{Routes: tc.routes})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error saying %q", err, tc.want)
			}
		})
	}
	c, err := channel.New("gh", channel.Config{Routes: []channel.Route{{Method: "GET", Path: "/items/{id}", Handler: ok}}})
	if err != nil || c.ID() != "gh" || len(c.Routes()) != 1 || !c.Routes()[0].Auth.IsBearer() || c.HasOnStart() {
		t.Fatalf("New = %v, %v", c, err)
	}
}

func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func TestHMACSHA256(t *testing.T) {
	auth := channel.HMACSHA256("X-Hub-Signature-256", "sha256=", "TEST_CHANNEL_SECRET")
	body := `{"action":"opened"}`
	check := func(sig, body string) error {
		r := httptest.NewRequest("POST", "/hook", strings.NewReader(body))
		if sig != "" {
			r.Header.Set("X-Hub-Signature-256", sig)
		}
		return auth.Check(r, []byte(body))
	}
	t.Setenv("TEST_CHANNEL_SECRET", "")
	if err := check(sign("", body), body); err == nil || !strings.Contains(err.Error(), "TEST_CHANNEL_SECRET") {
		t.Fatalf("without a secret: %v, want a refusal naming the variable", err)
	}
	t.Setenv("TEST_CHANNEL_SECRET", "s3cret")
	if err := check(sign("s3cret", body), body); err != nil {
		t.Fatalf("a valid signature: %v", err)
	}
	for name, err := range map[string]error{
		"wrong secret":  check(sign("other", body), body),
		"altered body":  check(sign("s3cret", body), body+" "),
		"no signature":  check("", body),
		"no prefix":     check(strings.TrimPrefix(sign("s3cret", body), "sha256="), body),
		"not hex":       check("sha256=zz", body),
		"empty":         check("sha256=", body),
		"truncated sig": check(sign("s3cret", body)[:20], body),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if channel.BearerToken.Check(httptest.NewRequest("GET", "/", nil), nil) == nil {
		t.Error("a bearer route's Check accepted a request: the host checks those")
	}
}

func TestStartContext(t *testing.T) {
	s := channel.NewStart(tool.Handle{}, tool.Session{ID: "sess_1"}, "hi", "/tmp/ws")
	s.AddContext("one")
	s.AddContext("  ")
	s.AddContext("two")
	if got := s.Context(); len(got) != 2 || got[0] != "one" || got[1] != "two" || s.WorkspaceDir() != "/tmp/ws" {
		t.Fatalf("Context = %q", got)
	}
}
