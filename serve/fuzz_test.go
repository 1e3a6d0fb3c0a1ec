package serve

// Fuzz targets for everything the server parses from a request: the body
// of every endpoint that takes one, and the resume point of an event
// stream (Last-Event-ID, ?after=). Each asserts that no input panics, and
// that a parse either succeeds with sane values or fails with an
// *api.Error of a 4xx status. The parse functions are fuzzed directly
// (millions of inputs a minute), and FuzzServer sends the same inputs
// through the whole server, to a host, where nothing may answer 5xx.
//
// Run one for a while with, for example:
//
//	go test ./serve -run '^$' -fuzz '^FuzzParseCallRequest$' -fuzztime 60s

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/jsonscan"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/tool"
)

// wantClientError fails unless err is an *api.Error with a 4xx status and
// a message.
func wantClientError(t *testing.T, what string, input any, err error) {
	t.Helper()
	e, ok := err.(*api.Error)
	if !ok {
		t.Fatalf("%s(%q): error %T %v, want an *api.Error", what, input, err, err)
	}
	if s := e.Status(); s < 400 || s > 499 || e.Message == "" {
		t.Fatalf("%s(%q): error %s (HTTP %d) %q, want a 4xx with a message", what, input, e.Code, s, e.Message)
	}
}

var callBodySeeds = []string{
	`{"input":{"prUrl":"https://github.com/acme/checkout/pull/42"}}`,
	`{"input":{},"sessionId":"sess_1"}`, ` {"sessionId":"s\u0031","input":{"a":[1,{"b":null}]}} `,
	`{"sessionId":null}`, `{}`, `{"input":null}`, `{"input":"x"}`, `{"input":[1,2]}`,
	`{"input":{"environment":"staging","environment":"production"}}`,
	`{"input":{"a":1},"input":{"a":2}}`, `{"sessionId":"a","sessionId":"b"}`,
	`{"input":{},"extra":1}`, `{"\u0069nput":{}}`, `{"Input":{}}`, `{"sessionId":1}`, `{"sessionId":"\ud800"}`,
	`{"input":{}`, `{"input":{}} {}`, `{"input":{}}}`, `[]`, `"x"`, `null`, `  `, ``, "\xef\xbb\xbf{}",
	`{"input":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	`{"input":{"n":1e999999999}}`, "{\"input\":{\"\xff\":1}}", `{"input":{},}`, `{"input" {}}`,
}

// FuzzParseCallRequest fuzzes the body of POST /tools/<name>. What it
// accepts, encoding/json reads the same way; what it refuses is a 400.
func FuzzParseCallRequest(f *testing.F) {
	for _, s := range callBodySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseCallRequest(body)
		if err != nil {
			wantClientError(t, "parseCallRequest", body, err)
			return
		}
		if !json.Valid(body) {
			t.Fatalf("parseCallRequest(%q) accepts text that is not JSON", body)
		}
		if req.Input != nil && !json.Valid(req.Input) {
			t.Fatalf("parseCallRequest(%q): input %q is not JSON", body, req.Input)
		}
		if !utf8.ValidString(req.SessionID) {
			t.Fatalf("parseCallRequest(%q): session id %q is not UTF-8", body, req.SessionID)
		}
		if repeatsField(body) {
			t.Fatalf("parseCallRequest(%q) accepts a repeated field", body)
		}
		// encoding/json reads the same fields.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
			t.Fatalf("parseCallRequest(%q) accepts what encoding/json reads as no object: %v", body, err)
		}
		for k := range fields {
			if k != "input" && k != "sessionId" {
				t.Fatalf("parseCallRequest(%q) accepts a field %q", body, k)
			}
		}
		if !bytes.Equal(req.Input, fields["input"]) {
			t.Fatalf("parseCallRequest(%q): input %q, encoding/json reads %q", body, req.Input, fields["input"])
		}
		if raw, ok := fields["sessionId"]; ok {
			var sid *string
			if err := json.Unmarshal(raw, &sid); err != nil || sid == nil && req.SessionID != "" || sid != nil && *sid != req.SessionID {
				t.Fatalf("parseCallRequest(%q): session id %q, encoding/json reads %s", body, req.SessionID, raw)
			}
		}
	})
}

var otherBodySeeds = []string{
	``, ` `, `{}`, `{"message":"hello"}`, `{"channel":"slack","message":"hi"}`, `{"channel":"bad channel!"}`,
	`{"approved":true}`, `{"approved":false,"reason":"no","by":"alice"}`, `{"approved":null}`, `{"approved":"yes"}`,
	`{"message":""}`, `{"message":"   "}`, `{"message":"a","message":"b"}`, `{"APPROVED":true}`, `{"approved":true,"approved":false}`,
	`{"message":1}`, `{"extra":1}`, `{"message":"x"} {}`, `{"message":"x"}}`, `{`, `[]`, `null`, `"x"`, `{"message":"\ud800"}`,
	"{\"message\":\"\xff\"}", `{"message":"` + strings.Repeat("a", 1000) + `"}`, `{"reason":` + strings.Repeat("[", 10001) + `}`,
}

// FuzzDecodeBodies fuzzes the bodies of POST /session, POST
// /session/<id>/messages and POST …/approvals/<callId>, with the rules
// their handlers add to decodeJSON.
func FuzzDecodeBodies(f *testing.F) {
	for _, s := range otherBodySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		accepted := func(what string, err error, strs ...string) {
			t.Helper()
			if err != nil {
				wantClientError(t, what, body, err)
				return
			}
			if len(bytes.TrimSpace(body)) > 0 && !json.Valid(body) {
				t.Fatalf("%s accepts %q, which is not JSON", what, body)
			}
			for _, s := range strs {
				if !utf8.ValidString(s) {
					t.Fatalf("%s(%q): %q is not UTF-8", what, body, s)
				}
			}
		}

		var create api.CreateSessionRequest
		var err error
		if len(bytes.TrimSpace(body)) > 0 { // as createSession: an empty body is {}
			err = decodeJSON(body, &create)
		}
		accepted("createSession", err, create.Channel, create.Message)

		var send api.SendRequest
		accepted("sendMessage", decodeJSON(body, &send), send.Message)

		var resolve api.ResolveRequest
		err = decodeJSON(body, &resolve)
		if err == nil && resolve.Approved == nil { // as resolve
			err = malformed(`send {"approved": true} or {"approved": false, "reason": "…"}`)
		}
		accepted("resolve", err, resolve.Reason, resolve.By)
	})
}

// repeatsField reports whether body is a JSON object that repeats one of
// its own keys.
func repeatsField(body []byte) bool {
	found, _ := jsonscan.DuplicateKeys(body, 0)
	for _, p := range found {
		if len(p) == 1 {
			return true
		}
	}
	return false
}

// FuzzResumeAfter fuzzes where an event stream resumes: Last-Event-ID,
// else ?after=; and ?limit= of the stored events.
func FuzzResumeAfter(f *testing.F) {
	for _, s := range []struct{ id, after, limit string }{
		{"", "", ""}, {"5", "", ""}, {" 7 ", "3", ""}, {"", "12", "100"}, {"-1", "", ""}, {"", "-1", "0"},
		{"9223372036854775807", "", ""}, {"9223372036854775808", "", ""}, {"", "4611686018427387904", "10001"},
		{"", "4611686018427387905", ""}, {"1e3", "0x10", "1.5"}, {"+5", "+5", "+5"}, {"05", "007", "010"},
		{"\t3\n", " 3", "٣"}, {"3 4", "3&after=4", "limit"}, {"", "", "10000"},
	} {
		f.Add(s.id, s.after, s.limit)
	}
	f.Fuzz(func(t *testing.T, id, after, limit string) {
		q := url.Values{}
		if after != "" {
			q.Set("after", after)
		}
		if limit != "" {
			q.Set("limit", limit)
		}
		r := httptest.NewRequest("GET", "/agent/v1/session/s/events?"+q.Encode(), nil)
		if id != "" {
			r.Header["Last-Event-Id"] = []string{id} // as sent, even what a real client could not send
		}
		n, err := resumeAfter(r)
		input := [3]string{id, after, limit}
		switch {
		case err != nil:
			wantClientError(t, "resumeAfter", input, err)
		case n < 0:
			t.Fatalf("resumeAfter(%q) = %d", input, n)
		case id != "":
			if want, err := strconv.ParseInt(strings.TrimSpace(id), 10, 64); err != nil || n != want {
				t.Fatalf("resumeAfter(%q) = %d from Last-Event-ID", input, n)
			}
		case after != "":
			if want, err := strconv.ParseInt(after, 10, 64); err != nil || n != want || n > 1<<62 {
				t.Fatalf("resumeAfter(%q) = %d from ?after", input, n)
			}
		case n != 0:
			t.Fatalf("resumeAfter(%q) = %d with nothing to resume from", input, n)
		}
		lim, err := queryInt(r, "limit", 1000, 1, 10000)
		switch {
		case err != nil:
			wantClientError(t, "queryInt", input, err)
		case lim < 1 || lim > 10000 || limit == "" && lim != 1000:
			t.Fatalf("limit %q read as %d", limit, lim)
		}
	})
}

// fuzzServer is a server on a host with two tools and one session, for
// FuzzServer: requests go through ServeHTTP, so nothing listens.
type fuzzServer struct {
	srv     *Server
	session string
}

type fuzzInput struct {
	Environment string         `json:"environment" jsonschema:"enum=staging,enum=production"`
	Count       int8           `json:"count,omitempty"`
	Targets     []fuzzTarget   `json:"targets,omitempty"`
	Meta        map[string]any `json:"meta,omitempty"`
}

type fuzzTarget struct {
	Host string `json:"host" jsonschema:"minLength=1"`
}

func newFuzzServer(tb testing.TB) *fuzzServer {
	deploy, err := tool.New("deploy", tool.Config{Description: "Deploy."},
		func(ctx context.Context, call *tool.Call, in fuzzInput) (any, error) { return in, nil })
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := tool.New("raw", tool.Config{Description: "Raw.", InputSchema: tool.RawSchema(
		`{"type":"object","properties":{"u":{"type":"string","format":"uri"}},"patternProperties":{"^x-":{"type":"number"}}}`)},
		func(ctx context.Context, call *tool.Call, in json.RawMessage) (any, error) { return in, nil })
	if err != nil {
		tb.Fatal(err)
	}
	set, err := tool.NewSet(deploy, raw)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.Close() })
	sess, _, err := h.Sessions().Create(context.Background(), host.SessionOptions{Principal: tokenPrincipalID})
	if err != nil {
		tb.Fatal(err)
	}
	srv, err := New(h, &Options{Slug: "agent", Token: "fuzz-token", MaxBodyBytes: 64 << 10, ApprovalWait: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Shutdown)
	return &fuzzServer{srv: srv, session: sess.ID}
}

// fuzzRoutes are the requests FuzzServer sends a fuzzed body (or, for the
// events, resume point) to. None creates anything that lasts: messages
// and decisions go to a session and a call that do not exist, so each is
// parsed and then refused. (A new session's body is FuzzDecodeBodies'.)
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/agent/v1/tools/deploy"},
	{"POST", "/agent/v1/tools/raw"},
	{"POST", "/agent/v1/session/sess_missing/messages"},
	{"POST", "/agent/v1/approvals/call_missing"},
	{"POST", "/agent/v1/session/{session}/approvals/call_missing"},
	{"GET", "/agent/v1/session/{session}/events?follow=false"},
}

// FuzzServer sends fuzzed bodies, declared lengths and resume points
// through the whole server: every answer is JSON, 2xx or a 4xx carrying
// the API's error with the status of its code; never a 5xx.
func FuzzServer(f *testing.F) {
	for i := range fuzzRoutes {
		for _, s := range []string{
			`{"input":{"environment":"staging","count":3,"targets":[{"host":"a"}],"meta":{"k":[1,{}]}}}`,
			`{"input":{"environment":"staging","environment":"production"}}`,
			`{"input":{"u":"https://x.example","x-n":1,"x-n":2}}`, `{"input":{"environment":"staging","count":1000}}`,
			`{"message":"hi"}`, `{"approved":true}`, `{"approved":false,"reason":"no"}`, `{}`, ``, `{`, `[]`,
		} {
			f.Add(uint8(i), []byte(s), int64(-1), "")
		}
	}
	f.Add(uint8(0), []byte(`{"input":{}}`), int64(100), "")
	f.Add(uint8(0), []byte(`{"input":{}}`), int64(3), "")
	f.Add(uint8(0), []byte(`{"input":{}}`), int64(1<<40), "")
	f.Add(uint8(5), []byte(nil), int64(-1), "1")
	f.Add(uint8(5), []byte(nil), int64(-1), "-1")
	f.Add(uint8(5), []byte(nil), int64(-1), "9223372036854775807")
	f.Add(uint8(5), []byte(nil), int64(-1), "x")
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, route uint8, body []byte, declared int64, lastEventID string) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		path := strings.ReplaceAll(rt.path, "{session}", fs.session)
		req := httptest.NewRequest(rt.method, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer fuzz-token")
		if declared >= 0 {
			req.ContentLength = declared // as declared, whatever the body's length
		}
		if lastEventID != "" {
			req.Header["Last-Event-Id"] = []string{lastEventID}
		}
		ctx, cancel := context.WithTimeout(req.Context(), 10*time.Second)
		defer cancel()
		rec := httptest.NewRecorder()
		fs.srv.ServeHTTP(rec, req.WithContext(ctx))
		what := fmt.Sprintf("%s %s (Content-Length %d, Last-Event-ID %q) with %q", rt.method, rt.path, declared, lastEventID, body)
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s: Content-Type %q", what, ct)
		}
		var answer struct {
			OK    *bool      `json:"ok"`
			Error *api.Error `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil || answer.OK == nil {
			t.Fatalf("%s: HTTP %d, answer %q is not the API's JSON", what, rec.Code, rec.Body.Bytes())
		}
		switch {
		case rec.Code >= 200 && rec.Code < 300:
			if !*answer.OK {
				t.Fatalf("%s: HTTP %d with %s", what, rec.Code, rec.Body.Bytes())
			}
		case rec.Code >= 400 && rec.Code < 500:
			if *answer.OK || answer.Error == nil || answer.Error.Code.Status() != rec.Code {
				t.Fatalf("%s: HTTP %d with %s", what, rec.Code, rec.Body.Bytes())
			}
		default:
			t.Fatalf("%s: HTTP %d: %s", what, rec.Code, rec.Body.Bytes())
		}
	})
}

// deployCalls counts the runs of TestDuplicateKeysOverHTTP's tool.
var deployCalls atomic.Int64

// Input that repeats a key is refused on every way in: a direct call
// answers 400 invalid_input with the key's path, and a model's call gets
// an error result it can read; neither runs the tool nor parks a call for
// an approver, who would see one value while the tool ran with the other.
func TestDuplicateKeysOverHTTP(t *testing.T) {
	dup := `{"environment":"staging","environment":"production"}`
	fake := fakemodel.New(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "toolu_1", Name: "deploy", Input: dup}}})
	t.Cleanup(fake.Close)
	deploy, err := tool.New("deploy", tool.Config{Description: "Deploy.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in fuzzInput) (any, error) {
			deployCalls.Add(1)
			return in, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet(deploy)
	p, _ := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 10})
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), Model: p})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv, err := New(h, &Options{Slug: "agent", Token: "t", ApprovalWait: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); h.Close() })
	do := func(method, path, body string) (int, []byte) {
		req := httptest.NewRequest(method, "/agent/v1"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer t")
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		return rec.Code, rec.Body.Bytes()
	}

	for input, path := range map[string]string{
		dup: "input.environment",
		`{"environment":"staging","targets":[{"host":"a"},{"host":"a","\u0068ost":"b"}]}`: "input.targets[1].host",
		`{"environment":"staging","meta":{"a":{"b":1,"b":2}}}`:                            "input.meta.a.b",
	} {
		status, body := do("POST", "/tools/deploy", `{"input":`+input+`}`)
		var ans api.ErrorResponse
		if err := json.Unmarshal(body, &ans); err != nil || status != 400 || ans.Error == nil || ans.Error.Code != api.CodeInvalidInput ||
			len(ans.Error.Violations) != 1 || ans.Error.Violations[0].Path != path {
			t.Errorf("call with %s: HTTP %d %s, want 400 invalid_input at %s", input, status, body, path)
		}
	}

	status, body := do("POST", "/session", `{"message":"deploy to staging"}`)
	var started api.TurnStartedResponse
	if err := json.Unmarshal(body, &started); err != nil || status != 201 {
		t.Fatalf("creating a session: HTTP %d %s", status, body)
	}
	var result *api.ActionResult
	for deadline := time.Now().Add(10 * time.Second); result == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the model's call has no result")
		}
		_, body := do("GET", "/session/"+started.SessionID+"/events?follow=false", "")
		var list api.EventList
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("events: %s", body)
		}
		for _, e := range list.Events {
			if e.Kind == api.KindApprovalRequested {
				t.Fatalf("the model's call was parked for approval: %s", e.Data)
			}
			if e.Kind == api.KindActionResult {
				r, err := api.Decode[api.ActionResult](e)
				if err != nil {
					t.Fatal(err)
				}
				result = &r
			}
		}
	}
	if !result.IsError || !strings.Contains(string(result.Result), "input.environment: is a duplicate key") {
		t.Errorf("the model's call: isError %v, result %s", result.IsError, result.Result)
	}
	if _, body := do("GET", "/approvals", ""); !strings.Contains(string(body), `"approvals":[]`) {
		t.Errorf("approvals: %s", body)
	}
	if n := deployCalls.Load(); n != 0 {
		t.Errorf("the tool ran %d times", n)
	}
}
