package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/client"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

func TestNew(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, url, err string
	}{
		{"slug", "http://127.0.0.1:3000/agent", ""},
		{"trailing slash", "http://127.0.0.1:3000/agent/", ""},
		{"v1", "http://127.0.0.1:3000/agent/v1", ""},
		{"v1 and slash", "https://example.com/agent/v1/", ""},
		{"under a prefix", "https://example.com/proxy/agent", ""},
		{"another scheme", "ftp://127.0.0.1/agent", "the scheme must be http or https"},
		{"no scheme", "localhost/agent", "the scheme must be http or https"},
		{"no host", "http:///agent", "has no host"},
		{"no slug", "http://127.0.0.1:3000/", "needs the agent's slug: http://127.0.0.1:3000/<slug>"},
		{"only v1", "http://127.0.0.1:3000/v1", "needs the agent's slug"},
		{"a query", "http://127.0.0.1:3000/agent?x=1", "drop the query"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.New(tt.url, "t", nil)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Errorf("New(%q) = %v, want an error with %q", tt.url, err, tt.err)
			}
		})
	}
}

func TestBaseURLForms(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		c, err := client.New(b.url+suffix, testToken, &client.Options{HTTPClient: &http.Client{Timeout: time.Minute}, UserAgent: "client-test"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Tools(context.Background()); err != nil {
			t.Errorf("%q: %v", suffix, err)
		}
	}
}

func TestTools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tools, err := b.client.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range tools {
		got = append(got, tl.Name+"/"+tl.Approval)
	}
	if want := []string{"fail/never", "greet/never", "keep/never", "promote/conditional"}; !slices.Equal(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
	if !json.Valid(tools[1].InputSchema) || !strings.Contains(string(tools[1].InputSchema), `"name"`) {
		t.Errorf("greet's schema: %s", tools[1].InputSchema)
	}
}

func TestCallTool(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tt := range []struct {
		name    string
		tool    string
		input   any
		result  string
		isError bool
	}{
		{"a value", "greet", greetInput{Name: "<Ada> & Zoë ✓"}, "Hello, <Ada> & Zoë ✓!", false},
		{"raw JSON", "greet", json.RawMessage(`{"name": "Raw"}`), "Hello, Raw!", false},
		{"bytes", "greet", []byte(`{"name":"Bytes"}`), "Hello, Bytes!", false},
		{"a map", "greet", map[string]string{"name": "Map"}, "Hello, Map!", false},
		{"nil input", "fail", nil, "the PR does not exist", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := b.client.CallTool(context.Background(), tt.tool, tt.input, nil)
			if err != nil {
				t.Fatal(err)
			}
			var result string
			if err := json.Unmarshal(out.Result, &result); err != nil || result != tt.result || out.IsError != tt.isError ||
				out.ToolName != tt.tool || !strings.HasPrefix(out.CallID, "tool_"+tt.tool+"_") {
				t.Errorf("outcome %+v (result %s), want %q, isError %v", out, out.Result, tt.result, tt.isError)
			}
		})
	}
	if _, err := b.client.CallTool(context.Background(), "greet", json.RawMessage(`{"name":`), nil); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("invalid raw input: %v", err)
	}
}

// statusError checks that err is an error answer with status and code.
func statusError(t *testing.T, err error, status int, code api.Code) *api.Error {
	t.Helper()
	var se *client.StatusError
	var ae *api.Error
	if !errors.As(err, &se) || !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want a *client.StatusError", err, err)
	}
	if se.Status != status || ae.Code != code || se.Err != ae {
		t.Fatalf("error %d %s (%v), want %d %s", se.Status, ae.Code, err, status, code)
	}
	if !strings.HasSuffix(err.Error(), ")") || !strings.Contains(err.Error(), "(HTTP ") {
		t.Errorf("error text %q lacks the status", err)
	}
	return ae
}

func TestCallToolRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	t.Run("unknown tool", func(t *testing.T) {
		_, err := b.client.CallTool(ctx, "nope", nil, nil)
		e := statusError(t, err, http.StatusNotFound, api.CodeUnknownTool)
		if !slices.Equal(e.Available, []string{"fail", "greet", "keep", "promote"}) {
			t.Errorf("available: %v", e.Available)
		}
	})
	t.Run("a name to escape", func(t *testing.T) {
		_, err := b.client.CallTool(ctx, "a/b c?", nil, nil)
		if e := statusError(t, err, http.StatusNotFound, api.CodeUnknownTool); !strings.Contains(e.Message, `"a/b c?"`) {
			t.Errorf("message: %s", e.Message)
		}
	})
	t.Run("invalid input", func(t *testing.T) {
		_, err := b.client.CallTool(ctx, "greet", map[string]any{"nmae": "x"}, nil)
		e := statusError(t, err, http.StatusBadRequest, api.CodeInvalidInput)
		var paths []string
		for _, v := range e.Violations {
			paths = append(paths, v.Path)
		}
		if !slices.Equal(paths, []string{"input.name", "input.nmae"}) {
			t.Errorf("violations: %+v", e.Violations)
		}
	})
	t.Run("unknown session", func(t *testing.T) {
		_, err := b.client.CallTool(ctx, "greet", greetInput{Name: "x"}, &client.CallOptions{SessionID: "sess_nope"})
		statusError(t, err, http.StatusNotFound, api.CodeSessionNotFound)
		if !errors.Is(err, api.ErrSessionNotFound) {
			t.Errorf("errors.Is(%v, api.ErrSessionNotFound) is false", err)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		c, err := client.New(b.url, "wrong", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.CallTool(ctx, "greet", greetInput{Name: "x"}, nil)
		statusError(t, err, http.StatusUnauthorized, api.CodeUnauthorized)
		_, err = c.Tools(ctx)
		statusError(t, err, http.StatusUnauthorized, api.CodeUnauthorized)
	})
}

func TestGatedCall(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, ctx := b.client, context.Background()
	if out, err := c.CallTool(ctx, "promote", promoteInput{"api", "staging"}, nil); err != nil || out.IsError {
		t.Fatalf("ungated: %+v %v", out, err)
	}

	// Parked, listed, approved, then its outcome.
	_, err := c.CallTool(ctx, "promote", promoteInput{"api", "production"}, nil)
	var pending *client.PendingError
	if !errors.As(err, &pending) || pending.Status != api.CallAwaitingApproval || !strings.HasPrefix(pending.CallID, "tool_promote_") ||
		!strings.HasSuffix(pending.Outcome, "/calls/"+pending.CallID) {
		t.Fatalf("gated call: %v (%+v)", err, pending)
	}
	id := pending.CallID
	done, waiting, err := c.CallStatus(ctx, id)
	if err != nil || done != nil || waiting.Status != api.CallAwaitingApproval || waiting.Approval.Tool != "promote" {
		t.Fatalf("status: %+v %+v %v", done, waiting, err)
	}
	list, next, err := c.Approvals(ctx, api.ApprovalPending, 10, "")
	if err != nil || len(list) != 1 || list[0].CallID != id || next != "" {
		t.Fatalf("pending approvals: %+v %q %v", list, next, err)
	}
	a, err := c.Approve(ctx, id, nil)
	if err != nil || a.Status != api.ApprovalApproved || a.DecidedBy != "bearer-token" {
		t.Fatalf("approve: %+v %v", a, err)
	}
	done, err = c.WaitCall(ctx, id, 10*time.Millisecond)
	if err != nil || done.Status != api.CallState(api.ApprovalApproved) || done.IsError || string(done.Result) != `{"promoted":"api","to":"production"}` {
		t.Fatalf("outcome: %+v %v", done, err)
	}

	// A call is decided once.
	_, err = c.Deny(ctx, id, "too late", nil)
	e := statusError(t, err, http.StatusConflict, api.CodeAlreadyResolved)
	if !errors.Is(err, api.ErrAlreadyResolved) || e.Approval == nil || e.Approval.Status != api.ApprovalApproved {
		t.Errorf("second decision: %v, first %+v", err, e.Approval)
	}

	// Denied, with who and why, through Resolve.
	_, err = c.CallTool(ctx, "promote", promoteInput{"web", "production"}, nil)
	if !errors.As(err, &pending) {
		t.Fatal(err)
	}
	no := false
	a, err = c.Resolve(ctx, pending.CallID, api.ResolveRequest{Approved: &no, Reason: "frozen <until> Monday", OnBehalfOf: "ops"}, nil)
	if err != nil || a.Status != api.ApprovalDenied || a.DecidedBy != "bearer-token:ops" || a.Reason != "frozen <until> Monday" {
		t.Fatalf("deny: %+v %v", a, err)
	}
	done, err = c.WaitCall(ctx, pending.CallID, 0)
	if err != nil || done.Status != api.CallState(api.ApprovalDenied) || !done.IsError {
		t.Errorf("denied outcome: %+v %v", done, err)
	}
	all, _, err := c.Approvals(ctx, "", 0, "")
	if err != nil || len(all) != 2 || all[0].Status != api.ApprovalApproved || all[1].Status != api.ApprovalDenied {
		t.Errorf("all approvals: %+v %v", all, err)
	}

	// Unknown calls.
	_, err = c.Approve(ctx, "tool_nope_x", nil)
	statusError(t, err, http.StatusNotFound, api.CodeApprovalNotFound)
	_, err = c.Approve(ctx, pending.CallID, &client.ResolveOptions{SessionID: "sess_other"})
	if !errors.Is(err, api.ErrApprovalNotFound) && !errors.Is(err, api.ErrSessionNotFound) {
		t.Errorf("a direct call decided through a session: %v", err)
	}
	_, _, err = c.CallStatus(ctx, "tool_nope_x")
	statusError(t, err, http.StatusNotFound, api.CodeApprovalNotFound)
	_, err = c.WaitCall(ctx, "tool_nope_x", 0)
	statusError(t, err, http.StatusNotFound, api.CodeApprovalNotFound)
	_, _, err = c.Approvals(ctx, "bogus", 0, "")
	statusError(t, err, http.StatusBadRequest, api.CodeBadQuery)
}

func TestWaitCallEndsWithContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.client.CallTool(context.Background(), "promote", promoteInput{"api", "production"}, nil)
	var pending *client.PendingError
	if !errors.As(err, &pending) {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.client.WaitCall(ctx, pending.CallID, 5*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitCall = %v, want the context's error", err)
	}
}

// follow collects a session's events until the end of turn.
func follow(t *testing.T, c *client.Client, sessionID string, after int64, turn string) []api.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var evs []api.Event
	for e, err := range c.Events(ctx, sessionID, after) {
		if err != nil {
			t.Fatalf("following %s: %v", sessionID, err)
		}
		evs = append(evs, e)
		if e.TurnID == turn && (e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed) {
			return evs
		}
	}
	t.Fatalf("the events of %s ended before turn %s did", sessionID, turn)
	return nil
}

func kinds(evs []api.Event) string {
	var ks []string
	for _, e := range evs {
		ks = append(ks, string(e.Kind))
	}
	return strings.Join(ks, " ")
}

// checkSeqs checks that evs are numbered from first without gaps.
func checkSeqs(t *testing.T, evs []api.Event, first int64) {
	t.Helper()
	for i, e := range evs {
		if e.Seq != first+int64(i) {
			t.Fatalf("event %d has seq %d, want %d (%s)", i, e.Seq, first+int64(i), kinds(evs))
		}
	}
}

func TestSessionTurn(t *testing.T) {
	t.Parallel()
	b := setup(t,
		fakemodel.Reply{Text: []string{"Hel", "lo."}, Calls: []fakemodel.Call{{ID: "m1", Name: "greet", Input: `{"name":"<Ada>"}`}}},
		fakemodel.Reply{Text: []string{"Done."}},
		fakemodel.Reply{Text: []string{"Again."}},
	)
	c, ctx := b.client, context.Background()
	turn, err := c.CreateSession(ctx, api.CreateSessionRequest{Message: "greet Ada"})
	if err != nil || !strings.HasPrefix(turn.SessionID, "sess_") || !strings.HasPrefix(turn.TurnID, "turn_") {
		t.Fatalf("create: %+v %v", turn, err)
	}
	id := turn.SessionID
	evs := follow(t, c, id, 0, turn.TurnID)
	want := "session.created turn.started message message.delta message.delta message model.usage actions.requested action.result message.delta message model.usage turn.completed"
	if got := kinds(evs); got != want {
		t.Fatalf("events:\n%s\nwant\n%s", got, want)
	}
	checkSeqs(t, evs, 1)

	// Payloads, decoded through their types.
	created, err := api.Decode[api.SessionCreated](evs[0])
	if err != nil || created.Channel != "http" || created.Mode != api.ModeLocal {
		t.Errorf("session.created: %+v %v", created, err)
	}
	var texts []string
	for _, e := range evs {
		switch p := api.PayloadOf(e.Kind).(type) {
		case *api.Message:
			if err := json.Unmarshal(e.Data, p); err != nil {
				t.Fatal(err)
			}
			texts = append(texts, p.Role+": "+p.Text)
		case *api.ActionResult:
			if err := json.Unmarshal(e.Data, p); err != nil || p.Tool != "greet" || p.IsError || string(p.Result) != `"Hello, \u003cAda\u003e!"` {
				t.Errorf("action.result: %+v %s %v", p, p.Result, err)
			}
		}
	}
	if got := strings.Join(texts, "|"); got != "user: greet Ada|assistant: Hello.|assistant: Done." {
		t.Errorf("messages: %s", got)
	}

	// The same events, stored; a page of them; the stream from seq 8.
	stored, err := c.StoredEvents(ctx, id, 0, 0)
	if err != nil || kinds(stored) != want {
		t.Errorf("stored: %s %v", kinds(stored), err)
	}
	page, err := c.StoredEvents(ctx, id, 5, 3)
	if err != nil || len(page) != 3 {
		t.Fatalf("a page: %s %v", kinds(page), err)
	}
	checkSeqs(t, page, 6)
	rest := follow(t, c, id, 8, turn.TurnID)
	checkSeqs(t, rest, 9)
	if len(rest) != 5 {
		t.Errorf("after 8: %s", kinds(rest))
	}

	s, err := c.Session(ctx, id)
	if err != nil || s.ID != id || s.LastSeq != 13 || s.RunningTurn != "" || s.Principal != "bearer-token" {
		t.Errorf("session: %+v %v", s, err)
	}
	if s.Usage == nil || s.Usage.ModelCalls != 2 {
		t.Errorf("session usage: %+v, want its 2 model calls", s.Usage)
	}

	// Another message, then a second session.
	again, err := c.Send(ctx, id, "again")
	if err != nil || again.SessionID != id || again.TurnID == turn.TurnID {
		t.Fatalf("send: %+v %v", again, err)
	}
	if evs := follow(t, c, id, 13, again.TurnID); kinds(evs) != "turn.started message message.delta message model.usage turn.completed" {
		t.Errorf("second turn: %s", kinds(evs))
	}
	other, err := c.CreateSession(ctx, api.CreateSessionRequest{Channel: "slack"})
	if err != nil || other.TurnID != "" {
		t.Fatalf("a session without a message: %+v %v", other, err)
	}
	list, next, err := c.Sessions(ctx, 1, "")
	if err != nil || len(list) != 1 || list[0].ID != other.SessionID || list[0].Channel != "slack" || next == "" {
		t.Fatalf("first page: %+v %q %v", list, next, err)
	}
	list, next, err = c.Sessions(ctx, 1, next)
	if err != nil || len(list) != 1 || list[0].ID != id || next != "" {
		t.Errorf("second page: %+v %q %v", list, next, err)
	}
	var ids []string
	for s, err := range c.AllSessions(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []string{other.SessionID, id}) {
		t.Errorf("all sessions: %v", ids)
	}
}

func TestSessionRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, fakemodel.Reply{Hang: time.Minute})
	c, ctx := b.client, context.Background()
	turn, err := c.CreateSession(ctx, api.CreateSessionRequest{Message: "think hard"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		err    error
		status int
		is     *api.Error
	}{
		{"busy", second(c.Send(ctx, turn.SessionID, "and this?")), http.StatusConflict, api.ErrSessionBusy},
		{"empty message", second(c.Send(ctx, turn.SessionID, "")), http.StatusBadRequest, api.ErrEmptyMessage},
		{"unknown session", second(c.Session(ctx, "sess_nope")), http.StatusNotFound, api.ErrSessionNotFound},
		{"send to an unknown session", second(c.Send(ctx, "sess_nope", "hi")), http.StatusNotFound, api.ErrSessionNotFound},
		{"invalid channel", second(c.CreateSession(ctx, api.CreateSessionRequest{Channel: "no spaces"})), http.StatusBadRequest, api.ErrInvalidChannel},
		{"bad cursor", third(c.Sessions(ctx, 0, "nonsense")), http.StatusBadRequest, api.ErrBadCursor},
		{"stored events of an unknown session", second(c.StoredEvents(ctx, "sess_nope", 0, 0)), http.StatusNotFound, api.ErrSessionNotFound},
		{"artifacts of an unknown session", second(c.Artifacts(ctx, "sess_nope")), http.StatusNotFound, api.ErrSessionNotFound},
		{"compact while busy", second(c.Compact(ctx, turn.SessionID)), http.StatusConflict, api.ErrSessionBusy},
		{"compact an unknown session", second(c.Compact(ctx, "sess_nope")), http.StatusNotFound, api.ErrSessionNotFound},
		{"a message over the limit", second(c.Send(ctx, turn.SessionID, strings.Repeat("x", 3<<19))), http.StatusRequestEntityTooLarge, api.ErrMessageTooBig},
	} {
		t.Run(tt.name, func(t *testing.T) {
			statusError(t, tt.err, tt.status, tt.is.Code)
			if !errors.Is(tt.err, tt.is) {
				t.Errorf("errors.Is(%v, %v) is false", tt.err, tt.is.Code)
			}
		})
	}

	// Cancelled, the turn fails; then there is nothing to cancel.
	if err := c.Cancel(ctx, turn.SessionID); err != nil {
		t.Fatal(err)
	}
	evs := follow(t, c, turn.SessionID, 0, turn.TurnID)
	failed, err := api.Decode[api.TurnFailed](evs[len(evs)-1])
	if err != nil || failed.Reason != "cancelled" {
		t.Errorf("turn.failed: %+v %v (%s)", failed, err, kinds(evs))
	}
	if err := c.Cancel(ctx, turn.SessionID); !errors.Is(err, api.ErrNoRunningTurn) {
		t.Errorf("cancel with no turn: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }

func third[T, U any](_ T, _ U, err error) error { return err }

func TestEventsResumeAfterADrop(t *testing.T) {
	t.Parallel()
	// The second answer waits until the connections are dropped, however
	// late the client reads the turn's first event.
	release := make(chan struct{})
	b := setup(t, fakemodel.Reply{Text: []string{"One."}}, fakemodel.Reply{Until: release, Text: []string{"Two."}})
	var mu sync.Mutex
	var resumed []string // the Last-Event-ID of each request for the stream
	c, err := client.New(b.url, testToken, &client.Options{HTTPClient: &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/events") {
			mu.Lock()
			resumed = append(resumed, r.Header.Get("Last-Event-ID"))
			mu.Unlock()
		}
		return http.DefaultTransport.RoundTrip(r)
	})}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := c.CreateSession(ctx, api.CreateSessionRequest{Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	var evs []api.Event
	secondTurn, dropped := "", int64(0)
	for e, err := range c.Events(ctx, first.SessionID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e)
		if e.Kind == api.KindTurnCompleted && e.TurnID == first.TurnID {
			turn, err := c.Send(ctx, first.SessionID, "two")
			if err != nil {
				t.Fatal(err)
			}
			secondTurn = turn.TurnID
		}
		if e.Kind == api.KindMessage && e.TurnID == secondTurn && dropped == 0 {
			// The model is thinking: drop every connection under the client.
			b.server.CloseClientConnections()
			dropped = e.Seq
			close(release)
		}
		if e.Kind == api.KindTurnCompleted && e.TurnID == secondTurn {
			break
		}
	}
	checkSeqs(t, evs, 1)
	if got, want := kinds(evs), "session.created turn.started message message.delta message model.usage turn.completed "+
		"turn.started message message.delta message model.usage turn.completed"; got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"", strconv.FormatInt(dropped, 10)}; !slices.Equal(resumed, want) {
		t.Errorf("the stream was asked for with Last-Event-ID %q, want %q", resumed, want)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestEventsGiveUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, err := client.New(b.url, testToken, &client.Options{Reconnects: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := c.CreateSession(ctx, api.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for e, err := range c.Events(ctx, s.SessionID, 0) {
		if err != nil {
			got = append(got, err.Error())
			continue
		}
		got = append(got, string(e.Kind))
		b.server.CloseClientConnections()
	}
	if len(got) != 2 || got[0] != "session.created" || !strings.Contains(got[1], "the stream dropped and did not resume") {
		t.Errorf("yielded %q", got)
	}
}

func TestEventsEndWithContext(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := b.client.CreateSession(ctx, api.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range b.client.Events(ctx, s.SessionID, 0) {
		if err != nil {
			t.Fatalf("an error after the context ended: %v", err)
		}
		n++
		cancel() // the stream is idle now: Events must end, quietly
	}
	if n != 1 {
		t.Errorf("%d events", n)
	}
}

func TestEventsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	wrong, err := client.New(b.url, "wrong", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, err := b.client.CreateSession(ctx, api.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		c       *client.Client
		session string
		status  int
		code    api.Code
	}{
		{"unknown session", b.client, "sess_nope", http.StatusNotFound, api.CodeSessionNotFound},
		{"wrong token", wrong, s.SessionID, http.StatusUnauthorized, api.CodeUnauthorized},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := 0
			for _, err := range tt.c.Events(ctx, tt.session, 0) {
				n++
				statusError(t, err, tt.status, tt.code)
			}
			if n != 1 {
				t.Errorf("yielded %d times", n)
			}
		})
	}
}

func TestArtifacts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, ctx := b.client, context.Background()
	s, err := c.CreateSession(ctx, api.CreateSessionRequest{})
	if err != nil {
		t.Fatal(err)
	}
	const name, content = "notes/a b&c.html", "<p>hi ✓</p>"
	if out, err := c.CallTool(ctx, "keep", keepInput{Name: name, Text: content}, &client.CallOptions{SessionID: s.SessionID}); err != nil || out.IsError {
		t.Fatalf("keep: %+v %v", out, err)
	}
	list, err := c.Artifacts(ctx, s.SessionID)
	if err != nil || len(list) != 1 || list[0].Name != name || list[0].Size != int64(len(content)) || list[0].SHA256 == "" {
		t.Fatalf("artifacts: %+v %v", list, err)
	}
	rc, info, err := c.Artifact(ctx, s.SessionID, name)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != content || info.Name != name || info.ContentType != "text/html" || info.Size != int64(len(content)) {
		t.Errorf("artifact: %q %+v %v", got, info, err)
	}
	_, _, err = c.Artifact(ctx, s.SessionID, "missing.txt")
	statusError(t, err, http.StatusNotFound, api.CodeArtifactNotFound)
	for _, bad := range []string{"..", ".", "a/../../b", "/etc/passwd"} {
		_, _, err := c.Artifact(ctx, s.SessionID, bad)
		statusError(t, err, http.StatusBadRequest, api.CodeBadName)
	}
}

func TestOpenAPI(t *testing.T) {
	t.Parallel()
	b := setup(t)
	doc, err := b.client.OpenAPI(context.Background())
	var se *client.StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		t.Skip("the host does not serve openapi.json yet")
	}
	if err != nil || !json.Valid(doc) || !strings.Contains(string(doc), `"openapi"`) {
		t.Errorf("openapi.json: %.200s %v", doc, err)
	}
}

// Answers that are not the API's, from a proxy in front of a host.
func TestErrorsNotFromTheAPI(t *testing.T) {
	t.Parallel()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/agent/v1/tools":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "<html><body>502 Bad Gateway</body></html>\n")
		case "/agent/v1/sessions":
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			io.WriteString(w, "not JSON")
		}
	}))
	defer proxy.Close()
	c, err := client.New(proxy.URL+"/agent", "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	_, err = c.Tools(ctx)
	e := statusError(t, err, http.StatusBadGateway, api.CodeInternal)
	var se *client.StatusError
	errors.As(err, &se)
	if e.Message != "<html><body>502 Bad Gateway</body></html>" || err.Error() != "<html><body>502 Bad Gateway</body></html> (HTTP 502)" ||
		string(se.Body) != "<html><body>502 Bad Gateway</body></html>\n" {
		t.Errorf("HTML answer: %q, body %q", err, se.Body)
	}
	_, _, err = c.Sessions(ctx, 0, "")
	statusError(t, err, http.StatusServiceUnavailable, api.CodeInternal)
	if err.Error() != "Service Unavailable (HTTP 503)" {
		t.Errorf("empty answer: %q", err)
	}
	if _, err := c.Session(ctx, "x"); err == nil || !strings.Contains(err.Error(), "decoding the answer of GET") {
		t.Errorf("a 200 that is not JSON: %v", err)
	}
	for _, err := range c.Events(ctx, "x", 0) {
		if err == nil || !strings.Contains(err.Error(), "not an event stream") {
			t.Errorf("a 200 that is not a stream: %v", err)
		}
	}
}
