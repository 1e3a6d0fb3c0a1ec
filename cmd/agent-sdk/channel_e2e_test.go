package main_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// The GitHub example (examples/github) on the real binary: agent-sdk serve
// --dir examples/github, its model served by a fake Anthropic API, and
// GitHub's webhook deliveries signed as GitHub signs them.

const ghSecret = "it's a secret to everybody"

// ghExample serves examples/github with the secret set and the model
// pointed at fake. Its state (token, store, build cache) lives in a
// temporary directory, not in the example.
func ghExample(t *testing.T, fake *fakemodel.Server) *server {
	t.Helper()
	// startServerEnv reads the token from <dir>/.agent-sdk: give it a
	// temporary dir, and serve the example with its state there.
	tmp := t.TempDir()
	env := []string{
		"GITHUB_WEBHOOK_SECRET=" + ghSecret,
		"ANTHROPIC_BASE_URL=" + fake.AnthropicURL(), "ANTHROPIC_API_KEY=test-key",
	}
	return startServerEnv(t, tmp, env, "--dir", filepath.Join(repoRoot, "examples", "github"), "--state", filepath.Join(tmp, ".agent-sdk"))
}

// ghWebhookURL is the github channel's webhook on s.
func ghWebhookURL(s *server) string {
	return strings.TrimSuffix(s.base, "/github/v1") + "/github/channels/github/webhook"
}

// ghSign is GitHub's X-Hub-Signature-256 of body under secret.
func ghSign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// ghDelivery is one webhook delivery: headers beyond the body's.
type ghDelivery struct {
	event     string // X-GitHub-Event
	signature string // X-Hub-Signature-256, "" for none
	token     string // the host's bearer token, "" for none
	body      string
}

// deliver posts a delivery as GitHub does and returns the status, the
// decoded JSON answer and the raw one.
func (d ghDelivery) deliver(t *testing.T, s *server) (int, map[string]any, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ghWebhookURL(s), strings.NewReader(d.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "GitHub-Hookshot/e2e")
	req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	if d.event != "" {
		req.Header.Set("X-GitHub-Event", d.event)
	}
	if d.signature != "" {
		req.Header.Set("X-Hub-Signature-256", d.signature)
	}
	if d.token != "" {
		req.Header.Set("Authorization", "Bearer "+d.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var v map[string]any
	json.Unmarshal(data, &v)
	return resp.StatusCode, v, string(data)
}

// ghSigned is a delivery of event with body, signed with the right secret.
func ghSigned(event, body string) ghDelivery {
	return ghDelivery{event: event, signature: ghSign(ghSecret, body), body: body}
}

// ghPullRequest is a pull_request event as GitHub sends it (trimmed of the
// many fields the channel does not read, which it ignores).
func ghPullRequest(number int, action, before, head string) string {
	return fmt.Sprintf(`{
  "action": %[2]q,
  "number": %[1]d,
  "before": %[3]q,
  "after": %[4]q,
  "pull_request": {
    "url": "https://api.github.com/repos/octo-org/widgets/pulls/%[1]d",
    "html_url": "https://github.com/octo-org/widgets/pull/%[1]d",
    "number": %[1]d,
    "state": "open",
    "title": "Retry webhook deliveries with backoff",
    "body": "Deliveries that fail with a 5xx are retried three times.",
    "draft": false,
    "user": {"login": "octocat", "id": 1, "type": "User"},
    "head": {"label": "octo-org:retry-backoff", "ref": "retry-backoff", "sha": %[4]q},
    "base": {"label": "octo-org:main", "ref": "main", "sha": "9049f1265b7d61be4a8904a9a27120d2064dab3b"},
    "commits": 3,
    "additions": 120,
    "deletions": 14,
    "changed_files": 7
  },
  "repository": {"id": 1296269, "name": "widgets", "full_name": "octo-org/widgets", "private": false,
    "owner": {"login": "octo-org", "type": "Organization"}, "default_branch": "main"},
  "sender": {"login": "octocat", "id": 1, "type": "User"}
}`, number, action, before, head)
}

const (
	ghHead1 = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	ghHead2 = "c2c3a1b0e2b8d4f5a6978812d3e4f5a6b7c8d9e0"
)

// ghSessions lists the host's sessions (one page).
func ghSessions(t *testing.T, s *server) []map[string]any {
	t.Helper()
	status, v, _ := s.request(t, "GET", "/sessions", s.token, "")
	if status != 200 {
		t.Fatalf("sessions: %d %v", status, v)
	}
	var list []map[string]any
	for _, e := range v["sessions"].([]any) {
		list = append(list, e.(map[string]any))
	}
	return list
}

// ghEvents returns a session's stored events, without the text deltas.
func ghEvents(t *testing.T, s *server, sessionID string) []map[string]any {
	t.Helper()
	status, v, _ := s.request(t, "GET", "/session/"+sessionID+"/events?follow=false", s.token, "")
	if status != 200 {
		t.Fatalf("events: %d %v", status, v)
	}
	var evs []map[string]any
	for _, e := range v["events"].([]any) {
		if e := e.(map[string]any); e["kind"] != "message.delta" {
			evs = append(evs, e)
		}
	}
	return evs
}

func ghKinds(evs []map[string]any) string {
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e["kind"].(string))
	}
	return strings.Join(kinds, " ")
}

// ghData is an event's payload.
func ghData(e map[string]any) map[string]any {
	d, _ := e["data"].(map[string]any)
	return d
}

// ghModelText is every string in the n-th model request, JSON-decoded and
// joined: what the model read (messages, system, tool results).
func ghModelText(t *testing.T, fake *fakemodel.Server, n int) string {
	t.Helper()
	reqs := fake.Requests()
	if n >= len(reqs) {
		t.Fatalf("the model got %d requests, want more than %d", len(reqs), n)
	}
	var v any
	if err := json.Unmarshal(reqs[n], &v); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v + "\n")
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return b.String()
}

// ghWaitTurns waits until a session has completed n turns.
func ghWaitTurns(t *testing.T, s *server, sessionID string, n int) {
	t.Helper()
	seen := 0
	waitEvent(t, s, sessionID, func(kind, data string) bool {
		if kind == "turn.failed" {
			t.Fatalf("a turn failed: %s\n%s", data, s.logs())
		}
		if kind == "turn.completed" {
			seen++
		}
		return seen == n
	})
}

// ghRequireMounted fails the test at once, saying why, when the github
// channel's route is not there: the host answered with the bearer-token
// refusal the API gives (or 404), not the channel's verifier.
func ghRequireMounted(t *testing.T, s *server) {
	t.Helper()
	status, _, raw := ghDelivery{event: "ping", body: `{}`}.deliver(t, s)
	if status == 401 && strings.Contains(raw, "the request failed the channel's verification") {
		return
	}
	t.Fatalf("the github channel's webhook is not mounted (a delivery without a signature got %d %s): the agent binary was built without agent/channels (the main package agent-sdk generates must import the agent's channels package alongside the model provider's)\n%s", status, raw, s.logs())
}

// A signed pull request opens a session keyed by the pull request: the
// channel inspects it with inspect_pr (directly, no model), the model
// reviews it with the result and the channel's onStart context; new
// commits resume the same session. Deliveries that fail verification or
// are malformed change nothing.
func TestChannelGitHubWebhook(t *testing.T) {
	fake := fakemodel.New(
		fakemodel.Reply{Text: []string{"Retries look right; ", "add a test for the third attempt.\n\nCOMMENT"}},
		fakemodel.Reply{Text: []string{"The new commits add the test. ", "APPROVE"}},
	)
	defer fake.Close()
	s := ghExample(t, fake)
	ghRequireMounted(t, s)

	opened := ghPullRequest(42, "opened", "", ghHead1)

	// Refused by the verifier: 401, the handler never runs.
	t.Run("refused", func(t *testing.T) {
		for _, d := range []struct {
			name string
			d    ghDelivery
			want string
		}{
			{"forged signature", ghDelivery{event: "pull_request", signature: ghSign("not the secret", opened), body: opened}, "the signature does not match the body"},
			{"no signature", ghDelivery{event: "pull_request", body: opened}, "no X-Hub-Signature-256 header"},
			{"body altered after signing", ghDelivery{event: "pull_request", signature: ghSign(ghSecret, opened), body: strings.Replace(opened, `"changed_files": 7`, `"changed_files": 1`, 1)}, "the signature does not match the body"},
			{"signature not hex", ghDelivery{event: "pull_request", signature: "sha256=zz", body: opened}, "is not hex"},
			{"the host's token, no signature", ghDelivery{event: "pull_request", token: s.token, body: opened}, "no X-Hub-Signature-256 header"},
			{"the host's token, a forged signature", ghDelivery{event: "pull_request", token: s.token, signature: ghSign("not the secret", opened), body: opened}, "the signature does not match the body"},
		} {
			status, v, raw := d.d.deliver(t, s)
			e, _ := v["error"].(map[string]any)
			if status != 401 || e["code"] != "unauthorized" || !strings.Contains(raw, d.want) {
				t.Errorf("%s: %d %s, want 401 with %q", d.name, status, raw, d.want)
			}
		}
	})

	// Signed, but not something to review: nothing starts.
	t.Run("not reviewed", func(t *testing.T) {
		for _, d := range []struct {
			name   string
			d      ghDelivery
			status int
			want   string // in the answer
		}{
			{"ping", ghSigned("ping", `{"zen":"Design for failure.","hook_id":1}`), 200, `"event":"ping"`},
			{"closed", ghSigned("pull_request", ghPullRequest(42, "closed", "", ghHead1)), 202, `"ignored":"pull_request.closed"`},
			{"another event", ghSigned("issues", `{"action":"opened"}`), 202, `"ignored":"issues"`},
			{"malformed JSON", ghSigned("pull_request", `{"action":"opened","pull_request":{`), 400, `"code":"malformed_json"`},
			{"not an object", ghSigned("pull_request", `["opened"]`), 400, `"code":"malformed_json"`},
			{"no pull_request", ghSigned("pull_request", `{"action":"opened","number":42}`), 400, "missing pull_request"},
			{"no head sha", ghSigned("pull_request", strings.Replace(opened, ghHead1, "", 2)), 400, "pull_request.head.sha"},
			{"a head sha that is not hex", ghSigned("pull_request", strings.Replace(opened, ghHead1, "not-a-sha", 2)), 400, `"code":"invalid_input"`},
			{"no event header", ghSigned("", opened), 400, "no X-GitHub-Event header"},
		} {
			status, _, raw := d.d.deliver(t, s)
			if status != d.status || !strings.Contains(raw, d.want) {
				t.Errorf("%s: %d %s, want %d with %q", d.name, status, raw, d.status, d.want)
			}
		}
	})

	// Nothing above made a session, called the model or ran a tool: the
	// request log names a call for every delivery that ran inspect_pr.
	if list := ghSessions(t, s); len(list) != 0 {
		t.Fatalf("sessions after refused deliveries: %v", list)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("the model got %d requests from refused deliveries", n)
	}
	inspectCalls := regexp.MustCompile(`path=/github/channels/github/webhook status=(\d+) duration=\S+ call_id=(tool_inspect_pr_\S+)`)
	if m := inspectCalls.FindAllString(s.logs(), -1); len(m) != 0 {
		t.Fatalf("inspect_pr ran for refused deliveries: %v", m)
	}
	eventually(t, 10*time.Second, "the refusals logged", func() bool { return strings.Contains(s.logs(), "refused a channel request") })

	// The pull request is opened: 202, a session keyed by it.
	status, v, raw := ghSigned("pull_request", opened).deliver(t, s)
	if status != 202 || v["ok"] != true || v["key"] != "octo-org/widgets#42" {
		t.Fatalf("opened: %d %s", status, raw)
	}
	sessionID, _ := v["sessionId"].(string)
	callID, _ := v["callId"].(string)
	if !strings.HasPrefix(sessionID, "sess") || !strings.HasPrefix(callID, "tool_inspect_pr_") {
		t.Fatalf("opened: %s", raw)
	}
	ghWaitTurns(t, s, sessionID, 1)

	evs := ghEvents(t, s, sessionID)
	if got := ghKinds(evs); got != "session.created turn.started message channel.started message model.usage turn.completed" {
		t.Fatalf("the first turn's events: %s\n%v", got, evs)
	}
	if d := ghData(evs[0]); d["channel"] != "github" || d["principal"] != "github:octocat" {
		t.Errorf("session.created: %v", d)
	}
	if d := ghData(evs[1]); d["kind"] != "model" {
		t.Errorf("turn.started: %v", d)
	}
	// The review prompt, with inspect_pr's result, is the turn's message.
	prompt, _ := ghData(evs[2])["text"].(string)
	for _, want := range []string{
		"Pull request octo-org/widgets#42 was opened", "https://github.com/octo-org/widgets/pull/42",
		"inspect_pr (call " + callID + ") found:", `"size":"M"`,
		`"summary":"octo-org/widgets#42 by @octocat at 6dcb09b: \"Retry webhook deliveries with backoff\", M (7 files, +120 −14, retry-backoff → main)"`,
		"APPROVE, REQUEST_CHANGES or COMMENT",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("the review prompt lacks %q:\n%s", want, prompt)
		}
	}
	if d := ghData(evs[2]); d["role"] != "user" {
		t.Errorf("the first message: %v", d)
	}
	// The channel's onStart added its review guidelines, once.
	started := ghData(evs[3])
	ctxs, _ := started["context"].([]any)
	if started["channel"] != "github" || len(ctxs) != 1 || !strings.Contains(fmt.Sprint(ctxs[0]), "Review guidelines for GitHub pull requests") {
		t.Errorf("channel.started: %v", started)
	}
	if d := ghData(evs[4]); d["role"] != "assistant" || d["text"] != "Retries look right; add a test for the third attempt.\n\nCOMMENT" {
		t.Errorf("the model's message: %v", d)
	}
	// What the model read: the prompt with the tool's result, and the
	// guidelines.
	first := ghModelText(t, fake, 0)
	for _, want := range []string{"inspect_pr (call " + callID + ") found:", `"concerns":[`, "Review guidelines for GitHub pull requests", "You are a careful, friendly code reviewer"} {
		if !strings.Contains(first, want) {
			t.Errorf("the model's request lacks %q:\n%s", want, first)
		}
	}
	// The request log is written in batches (a few ms late).
	var m [][]string
	eventually(t, 10*time.Second, "the webhook's line in the request log", func() bool {
		m = inspectCalls.FindAllStringSubmatch(s.logs(), -1)
		return len(m) > 0
	})
	if len(m) != 1 || m[0][1] != "202" || m[0][2] != callID {
		t.Errorf("the request log's inspect_pr calls: %v", m)
	}

	// New commits: the same session, a second turn, with the new head.
	status, v, raw = ghSigned("pull_request", ghPullRequest(42, "synchronize", ghHead1, ghHead2)).deliver(t, s)
	if status != 202 || v["sessionId"] != sessionID || v["callId"] == callID {
		t.Fatalf("synchronize: %d %s, want 202 in %s", status, raw, sessionID)
	}
	callID2 := v["callId"].(string)
	ghWaitTurns(t, s, sessionID, 2)
	evs = ghEvents(t, s, sessionID)
	if got := ghKinds(evs); got != "session.created turn.started message channel.started message model.usage turn.completed turn.started message message model.usage turn.completed" {
		t.Fatalf("the session's events after the second turn: %s\n%v", got, evs)
	}
	prompt2, _ := ghData(evs[8])["text"].(string)
	if !strings.Contains(prompt2, "Pull request octo-org/widgets#42 has new commits") || !strings.Contains(prompt2, "The head moved from "+ghHead1+" to "+ghHead2) ||
		!strings.Contains(prompt2, "inspect_pr (call "+callID2+") found:") || !strings.Contains(prompt2, `"headSha":"`+ghHead2+`"`) {
		t.Errorf("the second prompt:\n%s", prompt2)
	}
	second := ghModelText(t, fake, 1)
	if !strings.Contains(second, "add a test for the third attempt") || !strings.Contains(second, "The head moved from") {
		t.Errorf("the second model request lacks the history or the new prompt:\n%s", second)
	}
	list := ghSessions(t, s)
	if len(list) != 1 || list[0]["id"] != sessionID || list[0]["channel"] != "github" {
		t.Errorf("sessions: %v", list)
	}

	// A refused delivery for the pull request after all that: no third turn.
	if status, _, raw := (ghDelivery{event: "pull_request", signature: ghSign("not the secret", opened), body: opened}).deliver(t, s); status != 401 {
		t.Errorf("forged after the session exists: %d %s", status, raw)
	}
	if got := ghKinds(ghEvents(t, s, sessionID)); got != ghKinds(evs) {
		t.Errorf("a refused delivery changed the session: %s", got)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2", n)
	}

	// New commits while a review still runs: 409 session_busy, to be
	// redelivered; the running review is not disturbed.
	hold := make(chan struct{})
	defer func() {
		select {
		case <-hold:
		default:
			close(hold)
		}
	}()
	fake.Push(fakemodel.Reply{Until: hold, Text: []string{"Reviewing #43."}})
	status, v, raw = ghSigned("pull_request", ghPullRequest(43, "opened", "", ghHead1)).deliver(t, s)
	if status != 202 || v["key"] != "octo-org/widgets#43" {
		t.Fatalf("opened #43: %d %s", status, raw)
	}
	busy := v["sessionId"].(string)
	for deadline := time.Now().Add(30 * time.Second); len(fake.Requests()) < 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the model never got #43's review")
		}
	}
	status, v, raw = ghSigned("pull_request", ghPullRequest(43, "synchronize", ghHead1, ghHead2)).deliver(t, s)
	if e, _ := v["error"].(map[string]any); status != 409 || e["code"] != "session_busy" || !strings.Contains(raw, "redeliver this event once it has finished") {
		t.Errorf("synchronize during a review: %d %s", status, raw)
	}
	close(hold)
	ghWaitTurns(t, s, busy, 1)
	if got := ghKinds(ghEvents(t, s, busy)); got != "session.created turn.started message channel.started message model.usage turn.completed" {
		t.Errorf("#43's session: %s", got)
	}
	if list := ghSessions(t, s); len(list) != 2 {
		t.Errorf("sessions: %v", list)
	}
}

// The webhook is admitted by its signature, not by the host's token: a
// signed delivery with no token is served, while the same route with only
// the token is refused, and the token does not make up for a bad
// signature. The API itself still wants the token.
func TestChannelGitHubSignatureNotToken(t *testing.T) {
	fake := fakemodel.New()
	defer fake.Close()
	s := ghExample(t, fake)
	ghRequireMounted(t, s)
	// The sample event of the README, signed as its curl command signs it.
	sample, err := os.ReadFile(filepath.Join(repoRoot, "examples", "github", "testdata", "pull_request.json"))
	if err != nil {
		t.Fatal(err)
	}
	body := string(sample)

	status, v, raw := ghSigned("pull_request", body).deliver(t, s)
	if status != 202 || v["sessionId"] == nil || v["key"] != "octo-org/widgets#7" {
		t.Fatalf("signed, no token: %d %s", status, raw)
	}
	ghWaitTurns(t, s, v["sessionId"].(string), 1)
	if status, _, raw := (ghDelivery{event: "pull_request", token: s.token, body: body}).deliver(t, s); status != 401 || !strings.Contains(raw, "the request failed the channel's verification") {
		t.Errorf("token, no signature: %d %s", status, raw)
	}
	if status, _, raw := (ghDelivery{event: "pull_request", token: s.token + "x", signature: ghSign(ghSecret, body) + "00", body: body}).deliver(t, s); status != 401 {
		t.Errorf("a wrong token and a wrong signature: %d %s", status, raw)
	}
	// With both the token and a good signature it is served too.
	if status, v2, raw := (ghDelivery{event: "pull_request", token: s.token, signature: ghSign(ghSecret, body), body: body}).deliver(t, s); status != 202 || v2["sessionId"] != v["sessionId"] {
		t.Errorf("token and signature: %d %s", status, raw)
	} else {
		ghWaitTurns(t, s, v["sessionId"].(string), 2)
	}
	// The signature opens the channel's route only, never the API.
	req, _ := http.NewRequest("GET", s.base+"/sessions", nil)
	req.Header.Set("X-Hub-Signature-256", ghSign(ghSecret, ""))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("the API with a signature and no token: %d", resp.StatusCode)
	}
	if list := ghSessions(t, s); len(list) != 1 {
		t.Errorf("sessions: %v", list)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2 (the refused deliveries started turns)", n)
	}
}
