package slackbot

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/internal/slacktest"
)

func TestSplitText(t *testing.T) {
	cases := map[string]struct {
		text  string
		limit int
		want  []string
	}{
		"short":      {"hello", 10, []string{"hello"}},
		"paragraphs": {"aaaa aaaa\n\nbbbb\nbbbb cccc", 14, []string{"aaaa aaaa", "bbbb\nbbbb cccc"}},
		"lines":      {"aaaa aaaa\nbbbb bbbb", 12, []string{"aaaa aaaa", "bbbb bbbb"}},
		"spaces":     {"aaaa bbbb cccc", 10, []string{"aaaa bbbb", "cccc"}},
		"no break":   {"ääääääääää", 4, []string{"ääää", "ääää", "ää"}},
		// A paragraph break too early is passed over for a later line break.
		"early break": {"a\n\nbbbbbbb\ncc", 11, []string{"a\n\nbbbbbbb", "cc"}},
		"empty":       {"   ", 5, nil},
	}
	for name, c := range cases {
		got := splitText(c.text, c.limit)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("%s: %q", name, got)
		}
	}
	// Whatever the text, parts are valid UTF-8 within the limit and keep
	// every non-space rune in order.
	text := strings.Repeat("日本語のテキスト🙂 and some words\n", 400) + strings.Repeat("x", 5000)
	parts := splitText(text, 3000)
	for _, p := range parts {
		if !utf8.ValidString(p) || utf8.RuneCountInString(p) > 3000 {
			t.Fatalf("a part of %d runes (valid %v)", utf8.RuneCountInString(p), utf8.ValidString(p))
		}
	}
	strip := func(s string) string { return strings.Join(strings.Fields(s), "") }
	if strip(strings.Join(parts, "")) != strip(text) {
		t.Error("runes lost or reordered")
	}
}

func TestTruncateAndInput(t *testing.T) {
	if got := truncate("ééééé", 3); got != "éé…" {
		t.Errorf("truncate: %q", got)
	}
	big, _ := json.Marshal(map[string]string{"x": strings.Repeat("€", 1000), "code": "``` <!here> & end"})
	s := showInput(big)
	if !utf8.ValidString(s) || len(s) > maxInputBytes+200 || !strings.HasSuffix(s, "…") {
		t.Errorf("input shown: %d bytes, valid %v: …%q", len(s), utf8.ValidString(s), s[max(0, len(s)-20):])
	}
	s = showInput(json.RawMessage(`{"code":"` + "```" + ` <!here> & end"}`))
	if strings.Contains(s, "```") || strings.Contains(s, "<!here>") || !strings.Contains(s, "&lt;!here&gt; &amp; end") {
		t.Errorf("input not neutralised: %q", s)
	}
	if got := showInput(json.RawMessage("{\"a\":\"\xff\"")); !utf8.ValidString(got) {
		t.Errorf("invalid input shown as %q", got)
	}
}

func TestStripMentions(t *testing.T) {
	cases := []struct{ text, bot, want string }{
		{"<@UBOT0001> hello", "UBOT0001", "hello"},
		{"hey <@UBOT0001|agent>, and <@UALICE01>?", "UBOT0001", "hey , and <@UALICE01>?"},
		{"<@UBOT0001> <@UOTHER01> hi", "", "hi"},
		{"hi <@UBOT0001>", "", "hi <@UBOT0001>"},
		{"<@UBOT0001>", "UBOT0001", ""},
	}
	for _, c := range cases {
		if got := stripMentions(c.text, c.bot, true); got != c.want {
			t.Errorf("stripMentions(%q, %q) = %q, want %q", c.text, c.bot, got, c.want)
		}
	}
}

func TestToolActivity(t *testing.T) {
	for _, c := range []struct {
		ok   bool
		ms   int64
		want string
	}{
		{true, 120, "⚙ inspect_pr ✓ 120 ms"},
		{false, 3400, "⚙ inspect_pr ✗ 3.4 s"},
		{true, 125_000, "⚙ inspect_pr ✓ 2 min 5 s"},
	} {
		if got := toolActivity("inspect_pr", c.ok, c.ms); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
}

func TestCardBlocks(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	a := api.Approval{CallID: "tool_deploy_abc", Tool: "deploy", Input: json.RawMessage(`{"service":"api"}`),
		RequestedBy: "slack:UALICE01", ExpiresAt: at, Status: api.ApprovalPending}
	blocks, fallback := cardBlocks(a, false)
	b, _ := json.Marshal(blocks)
	c := slacktest.Call{Params: map[string][]string{"blocks": {string(b)}}}
	text := c.BlockText()
	for _, want := range []string{"deploy", `"service": "api"`, "<@UALICE01>", fmt.Sprintf("<!date^%d^", at.Unix()), "Approve", "Deny", "tool_deploy_abc"} {
		if !strings.Contains(text, want) {
			t.Errorf("pending card lacks %q: %s", want, text)
		}
	}
	if fallback != "Approval needed: deploy" {
		t.Errorf("fallback %q", fallback)
	}
	a.Status, a.DecidedBy, a.DecidedAt, a.Reason = api.ApprovalDenied, "erin", &at, "not <today>"
	blocks, _ = cardBlocks(a, true)
	b, _ = json.Marshal(blocks)
	c = slacktest.Call{Params: map[string][]string{"blocks": {string(b)}}}
	text = c.BlockText()
	if strings.Contains(text, "Approve") || !strings.Contains(text, "Denied by `erin`") || !strings.Contains(text, "not &lt;today&gt;") {
		t.Errorf("decided card: %s", text)
	}
}

// TestVerify: the signature check alone, at a fixed clock.
func TestVerify(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	b, err := New(Config{BotToken: "xoxb", SigningSecret: "s3cret", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	s := &slacktest.Sender{URL: "http://x", Secret: "s3cret"}
	body := []byte(`{"type":"url_verification","challenge":"c"}`)
	ok := s.Request("/events", body, &slacktest.SendOptions{At: now.Add(-4 * time.Minute)})
	if err := b.verify(ok, body); err != nil {
		t.Errorf("valid: %v", err)
	}
	upper := s.Request("/events", body, &slacktest.SendOptions{At: now})
	upper.Header.Set(headerSignature, "v0="+strings.ToUpper(strings.TrimPrefix(upper.Header.Get(headerSignature), "v0=")))
	if err := b.verify(upper, body); err != nil {
		t.Errorf("upper-case hex: %v", err)
	}
	bad := map[string]func() (string, string){
		"stale":  func() (string, string) { return "1699999699", slacktest.Sign("s3cret", "1699999699", body) },
		"future": func() (string, string) { return "1700000301", slacktest.Sign("s3cret", "1700000301", body) },
		"junk":   func() (string, string) { return "17e8", slacktest.Sign("s3cret", "17e8", body) },
		"huge": func() (string, string) {
			return "99999999999999999999", slacktest.Sign("s3cret", "99999999999999999999", body)
		},
		"secret": func() (string, string) { return "1700000000", slacktest.Sign("other", "1700000000", body) },
		"short":  func() (string, string) { return "1700000000", "v0=abcd" },
	}
	for name, f := range bad {
		ts, sig := f()
		r := httptest.NewRequest("POST", "/events", nil)
		r.Header.Set(headerTimestamp, ts)
		r.Header.Set(headerSignature, sig)
		if err := b.verify(r, body); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
