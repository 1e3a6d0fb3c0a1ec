package main_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/pgtest"
)

// Two real agent-sdk serve processes on one PostgreSQL schema: streams,
// approvals and failover across hosts, as a user of the HTTP API sees them.
// Each host has a state directory of its own (its own disk) and its own
// fake model, so that a test can tell which host ran a model call; the
// gated tool record (testdata/multihost) appends a line to a file the
// hosts share, so that a test counts how often, and where, it ran.

// The agent every multi-host test serves, built once (with the PostgreSQL
// driver and the Anthropic provider) and linked into each host's state
// directory.
var multihost struct {
	once sync.Once
	dir  string // the agent directory
	bin  string // its binary
	err  error
}

func multihostAgent(t *testing.T) (dir, bin string) {
	t.Helper()
	multihost.once.Do(func() {
		dir := filepath.Join(filepath.Dir(cliBin), "multihost") // removed with TestMain's directory
		if err := newAgent(dir); err != nil {
			multihost.err = err
			return
		}
		if err := addFixtures(dir, "multihost", "model:\n  provider: anthropic\n  name: fake-model\nmaxSteps: 4\n"); err != nil {
			multihost.err = err
			return
		}
		bin, err := buildFixtureAgent(dir, true)
		if err != nil {
			multihost.err = err
			return
		}
		multihost.dir, multihost.bin = dir, bin
	})
	if multihost.err != nil {
		t.Fatal(multihost.err)
	}
	return multihost.dir, multihost.bin
}

// addFixtures makes the agent in dir use the tools in testdata/<fixtures>
// and the agent.yaml given.
func addFixtures(dir, fixtures, agentYAML string) error {
	files, err := filepath.Glob(filepath.Join("testdata", fixtures, "*.go"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no fixtures in testdata/%s: %v", fixtures, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "agent", "tools", filepath.Base(f)), b, 0o644)
		}
		if err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "agent", "agent.yaml"), []byte(agentYAML), 0o644)
}

// buildFixtureAgent runs agent-sdk build on dir and returns the binary's
// path; postgres builds the PostgreSQL driver in.
func buildFixtureAgent(dir string, postgres bool) (string, error) {
	cmd := exec.Command(cliBin, "build", "--dir", dir)
	cmd.Env = os.Environ()
	if postgres {
		// The store's URL only decides that the driver is built in.
		cmd.Env = append(cmd.Env, "AGENT_SDK_STORE=postgres://build-only/db")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("agent-sdk build: %v\n%s", err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// mhCluster is the shared part of a test's hosts: the agent, one
// PostgreSQL schema, one token, the tool's side-effect file.
type mhCluster struct {
	dir, bin string
	store    string
	token    string
	runs     string // record's side-effect file
}

// newCluster gives the test a schema of its own; it skips (or fails under
// CI=true) without PostgreSQL.
func newCluster(t *testing.T) *mhCluster {
	t.Helper()
	store := pgtest.Schema(t)
	dir, bin := multihostAgent(t)
	return &mhCluster{dir: dir, bin: bin, store: store, token: "asdk_multihost_test_token", runs: filepath.Join(t.TempDir(), "runs")}
}

// fake starts a fake model provider, closed when the test ends (after its
// hosts are killed: cleanups run last first).
func (c *mhCluster) fake(t *testing.T, def string, script ...fakemodel.Reply) *fakemodel.Server {
	f := fakemodel.New(script...)
	f.SetDefault(fakemodel.Reply{Text: []string{def}})
	t.Cleanup(f.Close)
	return f
}

// mhHost is one agent-sdk serve process, which a test can kill and start
// again on the same state directory.
type mhHost struct {
	*server
	name  string
	state string
	env   []string
	args  []string
	c     *mhCluster
	past  []*server // earlier processes, for their logs
}

// host starts a host named name (A, B) with its model at model, and extra
// serve flags.
func (c *mhCluster) host(t *testing.T, name string, model *fakemodel.Server, args ...string) *mhHost {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state-"+name)
	// The binary built once, where serve looks for it in this state
	// directory. (If the SDK's sources changed since, serve rebuilds.)
	build := filepath.Join(state, "build")
	if err := os.MkdirAll(build, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := linkOrCopy(c.bin, filepath.Join(build, filepath.Base(c.bin))); err != nil {
		t.Fatal(err)
	}
	h := &mhHost{name: name, state: state, args: args, c: c, env: []string{
		"ANTHROPIC_BASE_URL=" + model.AnthropicURL(), "ANTHROPIC_API_KEY=test-key",
		"MULTIHOST_RUNS=" + c.runs, "MULTIHOST_NAME=" + name,
	}}
	t.Cleanup(func() {
		if t.Failed() {
			for i, s := range append(h.past, h.server) {
				if s != nil {
					t.Logf("host %s, process %d, log:\n%s", h.name, i+1, s.logs())
				}
			}
		}
	})
	h.launch(t)()
	return h
}

// linkOrCopy hard-links src to dst, or copies it (keeping it executable)
// across file systems.
func linkOrCopy(src, dst string) error {
	if os.Link(src, dst) == nil {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// launch starts the host's process and returns a function that waits until
// it serves, so that hosts can start together.
func (h *mhHost) launch(t *testing.T) (wait func()) {
	t.Helper()
	if h.server != nil {
		h.past = append(h.past, h.server)
	}
	argv := append([]string{"serve", "--dir", h.c.dir, "--state", h.state, "--addr", "127.0.0.1:0",
		"--store", h.c.store, "--token", h.c.token}, h.args...)
	cmd := exec.Command(cliBin, argv...)
	cmd.Env = append(os.Environ(), h.env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, token: h.c.token, done: make(chan struct{})}
	h.server = s
	found := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pipe)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[2]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second): // a child (a build) holds stderr
		}
		cmd.Wait()
	})
	return func() {
		t.Helper()
		select {
		case s.base = <-found:
		case <-s.done:
			t.Fatalf("host %s exited:\n%s", h.name, s.logs())
		case <-time.After(5 * time.Minute):
			t.Fatalf("host %s did not start:\n%s", h.name, s.logs())
		}
		if strings.Contains(s.logs(), "built the agent") {
			t.Logf("host %s rebuilt the agent: the SDK's sources changed since the first build", h.name)
		}
	}
}

// kill SIGKILLs the host and returns when it was sent.
func (h *mhHost) kill(t *testing.T) time.Time {
	t.Helper()
	at := time.Now()
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-h.done
	h.cmd.Wait()
	return at
}

// stop SIGTERMs the host and waits for it to exit.
func (h *mhHost) stop(t *testing.T) {
	t.Helper()
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("host %s did not stop after SIGTERM:\n%s", h.name, h.logs())
	}
	if err := h.cmd.Wait(); err != nil {
		t.Errorf("host %s exited with %v after SIGTERM:\n%s", h.name, err, h.logs())
	}
}

// mhDo sends a request to a host without failing the test, for
// goroutines.
func mhDo(s *server, method, path, body string) (int, map[string]any, error) {
	return doJSON(context.Background(), http.DefaultClient, s.token, s.base, method, path, body)
}

// mhEvent is an event as a client reads it.
type mhEvent struct {
	Seq    int64           `json:"seq"`
	TurnID string          `json:"turnId"`
	Kind   string          `json:"kind"`
	Data   json.RawMessage `json:"data"`
	at     time.Time       // when the client read it
}

func (e mhEvent) field(name string) any {
	var m map[string]any
	json.Unmarshal(e.Data, &m)
	return m[name]
}

func (e mhEvent) String() string { return fmt.Sprintf("%d %s %s", e.Seq, e.Kind, e.Data) }

// mhStream is an SSE client following a session's stream.
type mhStream struct {
	name   string
	events chan mhEvent
	cancel context.CancelFunc
	mu     sync.Mutex
	err    error
}

// follow opens s's stream of the session, after lastEventID (a resuming
// EventSource's Last-Event-ID; 0 for none).
func follow(t *testing.T, s *server, sessionID string, lastEventID int64) *mhStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.base+"/session/"+sessionID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	if lastEventID > 0 {
		req.Header.Set("Last-Event-ID", fmt.Sprint(lastEventID))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("events of %s: %d %s", sessionID, resp.StatusCode, b)
	}
	st := &mhStream{name: s.base, events: make(chan mhEvent, 10000), cancel: cancel}
	t.Cleanup(cancel)
	go func() {
		defer resp.Body.Close()
		defer close(st.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var id, kind, data string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if data == "" {
					continue // a comment (ping)
				}
				var e mhEvent
				if err := json.Unmarshal([]byte(data), &e); err != nil || fmt.Sprint(e.Seq) != id || e.Kind != kind {
					st.fail(fmt.Errorf("malformed event: id %q, event %q, data %s (%v)", id, kind, data, err))
					return
				}
				e.at = time.Now()
				st.events <- e
				id, kind, data = "", "", ""
			case strings.HasPrefix(line, "id: "):
				id = line[len("id: "):]
			case strings.HasPrefix(line, "event: "):
				kind = line[len("event: "):]
			case strings.HasPrefix(line, "data: "):
				data = line[len("data: "):]
			}
		}
		st.fail(fmt.Errorf("the stream ended (%v)", sc.Err()))
	}()
	return st
}

func (st *mhStream) fail(err error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err == nil {
		st.err = err
	}
}

// until reads events until one matches, and returns all it read.
func (st *mhStream) until(t *testing.T, timeout time.Duration, what string, match func(mhEvent) bool) []mhEvent {
	t.Helper()
	var got []mhEvent
	deadline := time.After(timeout)
	for {
		select {
		case e, ok := <-st.events:
			if !ok {
				st.mu.Lock()
				err := st.err
				st.mu.Unlock()
				t.Fatalf("waiting for %s on %s: %v; read:\n%s", what, st.name, err, eventLines(got))
			}
			got = append(got, e)
			if match(e) {
				return got
			}
		case <-deadline:
			t.Fatalf("no %s on %s within %v; read:\n%s", what, st.name, timeout, eventLines(got))
		}
	}
}

func kindIs(kind string) func(mhEvent) bool {
	return func(e mhEvent) bool { return e.Kind == kind }
}

func eventLines(evs []mhEvent) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString("  " + e.String() + "\n")
	}
	return b.String()
}

func kindsOf(evs []mhEvent) string {
	var ks []string
	for _, e := range evs {
		ks = append(ks, e.Kind)
	}
	return strings.Join(ks, " ")
}

// inOrder reports whether the events have the kinds, in this order, among
// others (events this test is not about, such as a session's workspace
// moving to another host, may come in between); the last of kinds must be
// the last event.
func inOrder(evs []mhEvent, kinds string) bool {
	want := strings.Fields(kinds)
	if len(evs) == 0 || len(want) == 0 || evs[len(evs)-1].Kind != want[len(want)-1] {
		return false
	}
	for _, e := range evs {
		if len(want) > 0 && e.Kind == want[0] {
			want = want[1:]
		}
	}
	return len(want) == 0
}

// checkSeqs fails unless evs are numbered first, first+1, … with no gap.
func checkSeqs(t *testing.T, what string, evs []mhEvent, first int64) {
	t.Helper()
	for i, e := range evs {
		if e.Seq != first+int64(i) {
			t.Errorf("%s: event %d has seq %d, want %d (a gap or a repeat):\n%s", what, i, e.Seq, first+int64(i), eventLines(evs))
			return
		}
	}
}

// stored returns a session's stored events as s serves them, each event's
// data as sent.
func stored(t *testing.T, s *server, sessionID string) []mhEvent {
	t.Helper()
	req, _ := http.NewRequest("GET", s.base+"/session/"+sessionID+"/events?follow=false", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var list struct {
		Events []mhEvent `json:"events"`
	}
	if err := json.Unmarshal(body, &list); err != nil || resp.StatusCode != 200 {
		t.Fatalf("stored events of %s: %d %s", sessionID, resp.StatusCode, body)
	}
	return list.Events
}

// sameEvents fails unless two hosts serve the same events.
func sameEvents(t *testing.T, what string, a, b []mhEvent) {
	t.Helper()
	if eventLines(a) != eventLines(b) {
		t.Errorf("%s differ:\n%s\nand\n%s", what, eventLines(a), eventLines(b))
	}
}

// ofCall returns the events of kind about callID.
func ofCall(evs []mhEvent, kind, callID string) []mhEvent {
	var out []mhEvent
	for _, e := range evs {
		if e.Kind == kind && e.field("callId") == callID {
			out = append(out, e)
		}
	}
	return out
}

// eventually polls cond until it holds.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); time.Sleep(25 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
	}
}

// runLines returns record's side-effect lines: callId, host, note.
func (c *mhCluster) runLines() [][]string {
	var out [][]string
	for _, l := range lines(c.runs) {
		out = append(out, strings.SplitN(l, " ", 3))
	}
	return out
}

// newSession opens a session on s with a first message and returns its id
// and turn.
func newSession(t *testing.T, s *server, message string) (string, string) {
	t.Helper()
	status, v, _ := s.request(t, "POST", "/session", s.token, fmt.Sprintf(`{"message":%q}`, message))
	id, _ := v["sessionId"].(string)
	turn, _ := v["turnId"].(string)
	if status != 201 || id == "" {
		t.Fatalf("creating a session: %d %v", status, v)
	}
	return id, turn
}

// 1. A session created on host A and followed from host B: B's SSE client
// sees the model turn running on A live, in order with no gaps, ending in
// turn.completed; resuming on B with Last-Event-ID gives only the later
// events, and then follows the next turn live.
func TestMultiHostStreamAcrossHosts(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	fakeA := c.fake(t, "Again.",
		fakemodel.Reply{Hang: 300 * time.Millisecond, Text: []string{"Let me ", "greet Ada."}, Calls: []fakemodel.Call{{ID: "m1", Name: "hello", Input: `{"name":"Ada"}`}}},
		fakemodel.Reply{Text: []string{"Greeted ", "Ada."}},
	)
	fakeB := c.fake(t, "host B's model answered")
	a := c.host(t, "A", fakeA)
	b := c.host(t, "B", fakeB)

	status, v, _ := a.request(t, "POST", "/session", c.token, `{}`)
	id, _ := v["sessionId"].(string)
	if status != 201 || id == "" {
		t.Fatalf("creating a session on A: %d %v", status, v)
	}
	live := follow(t, b.server, id, 0)
	all := live.until(t, 30*time.Second, "session.created", kindIs("session.created"))
	status, v, _ = a.request(t, "POST", "/session/"+id+"/messages", c.token, `{"message":"Greet Ada"}`)
	turn, _ := v["turnId"].(string)
	if status != 202 || turn == "" {
		t.Fatalf("sending on A: %d %v", status, v)
	}
	all = append(all, live.until(t, 30*time.Second, "turn.completed", kindIs("turn.completed"))...)

	checkSeqs(t, "B's stream", all, 1)
	want := "session.created turn.started message message.delta message.delta message actions.requested action.result " +
		"message.delta message.delta message turn.completed"
	if !inOrder(all, want) {
		t.Errorf("B's stream:\n%s\nwant kinds %s", eventLines(all), want)
	}
	for _, e := range all[1:] {
		if e.TurnID != turn {
			t.Errorf("event %d is of turn %q, want %q", e.Seq, e.TurnID, turn)
		}
	}
	// What B streamed is what A stored, byte for byte.
	sameEvents(t, "B's stream and A's stored events", all, stored(t, a.server, id))
	// The turn ran on A: its model answered, B's was never asked.
	if n, m := len(fakeA.Requests()), len(fakeB.Requests()); n != 2 || m != 0 {
		t.Errorf("model requests: A's %d (want 2), B's %d (want 0)", n, m)
	}

	// Resuming on B after an event in the middle gives only what followed.
	mid := all[len(all)/2].Seq
	resumed := follow(t, b.server, id, mid)
	last := all[len(all)-1].Seq
	got := resumed.until(t, 30*time.Second, fmt.Sprintf("seq %d", last), func(e mhEvent) bool { return e.Seq >= last })
	checkSeqs(t, "the resumed stream", got, mid+1)
	sameEvents(t, "the resumed stream and the first", got, all[mid:])
	// … and goes on following live: a second turn on A.
	if status, v, _ := a.request(t, "POST", "/session/"+id+"/messages", c.token, `{"message":"Again"}`); status != 202 {
		t.Fatalf("second message on A: %d %v", status, v)
	}
	more := resumed.until(t, 30*time.Second, "the second turn.completed", kindIs("turn.completed"))
	checkSeqs(t, "the resumed stream's second turn", more, last+1)
	if !inOrder(more, "turn.started message message.delta message turn.completed") {
		t.Errorf("the second turn on the resumed stream:\n%s", eventLines(more))
	}
}

// 2. Calls parked on host A — one by a model turn, one by a direct call
// whose caller waits on A — are listed and approved through host B; each
// tool call runs exactly once and its outcome is the same on both hosts.
func TestMultiHostApproveThroughOtherHost(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	fakeA := c.fake(t, "Recorded.", fakemodel.Reply{Calls: []fakemodel.Call{{ID: "m1", Name: "record", Input: `{"note":"turn"}`}}})
	fakeB := c.fake(t, "Recorded.")
	a := c.host(t, "A", fakeA, "--approval-wait", "30s")
	b := c.host(t, "B", fakeB, "--approval-wait", "30s")

	// A model turn on A parks its call.
	id, turn := newSession(t, a.server, "Record a note")
	streamB := follow(t, b.server, id, 0)
	evs := streamB.until(t, 30*time.Second, "action.approval_requested", kindIs("action.approval_requested"))
	callID, _ := evs[len(evs)-1].field("callId").(string)
	if callID == "" {
		t.Fatalf("approval request without a call id: %v", evs[len(evs)-1])
	}
	// B lists it.
	status, v, _ := b.request(t, "GET", "/approvals?status=pending", c.token, "")
	list, _ := v["approvals"].([]any)
	if status != 200 || len(list) != 1 {
		t.Fatalf("pending approvals on B: %d %v", status, v)
	}
	if p := list[0].(map[string]any); p["callId"] != callID || p["tool"] != "record" || p["sessionId"] != id || p["turnId"] != turn ||
		p["status"] != "pending" || p["input"].(map[string]any)["note"] != "turn" {
		t.Errorf("the pending approval on B: %v", p)
	}
	// B approves it.
	status, v, _ = b.request(t, "POST", "/approvals/"+callID, c.token, `{"approved":true,"onBehalfOf":"bob"}`)
	if ap, _ := v["approval"].(map[string]any); status != 200 || ap["status"] != "approved" || ap["decidedBy"] != "bearer-token:bob" {
		t.Fatalf("approving through B: %d %v", status, v)
	}
	evs = append(evs, streamB.until(t, 30*time.Second, "turn.completed", kindIs("turn.completed"))...)
	checkSeqs(t, "B's stream", evs, 1)

	// The tool ran once, and both hosts show the same outcome.
	if runs := c.runLines(); len(runs) != 1 || runs[0][0] != callID {
		t.Errorf("record ran %d times, want once as %s: %v", len(runs), callID, runs)
	} else {
		// B took the parked turn's lease to run it, and went on with the
		// turn there: B's model was asked next, not A's.
		if runs[0][1] != "B" || len(fakeB.Requests()) != 1 || len(fakeA.Requests()) != 1 {
			t.Errorf("the call ran on %s; model requests: A %d, B %d; want the call and the rest of the turn on B",
				runs[0][1], len(fakeA.Requests()), len(fakeB.Requests()))
		}
	}
	onA, onB := stored(t, a.server, id), stored(t, b.server, id)
	sameEvents(t, "the session's events on A and B", onA, onB)
	resolved, results := ofCall(onB, "action.approval_resolved", callID), ofCall(onB, "action.result", callID)
	if len(resolved) != 1 || resolved[0].field("status") != "approved" || resolved[0].field("by") != "bearer-token:bob" {
		t.Errorf("approval_resolved events: %v", resolved)
	}
	if len(results) != 1 || results[0].field("isError") != false || !strings.Contains(string(results[0].Data), `"recorded":"turn"`) {
		t.Errorf("action.result events: %v", results)
	}
	if !inOrder(onB, "action.approval_requested action.approval_resolved action.result message.delta message turn.completed") {
		t.Errorf("the turn did not go on after the approval:\n%s", eventLines(onB))
	}
	for _, h := range []*mhHost{a, b} {
		_, v, _ := h.request(t, "GET", "/approvals?status=approved", c.token, "")
		list, _ := v["approvals"].([]any)
		if len(list) != 1 || list[0].(map[string]any)["callId"] != callID || list[0].(map[string]any)["outcome"] == nil {
			t.Errorf("approved calls on %s: %v", h.name, v)
		}
	}

	// A direct call on A waits for a decision; B approves it; A's caller
	// gets the outcome.
	answer := make(chan string, 1)
	go func() {
		status, v, err := mhDo(a.server, "POST", "/tools/record", `{"input":{"note":"direct"}}`)
		b, _ := json.Marshal(v)
		answer <- fmt.Sprintf("%d %s %v", status, b, err)
	}()
	var direct string
	eventually(t, 30*time.Second, "the direct call listed as pending on B", func() bool {
		_, v, _ := b.request(t, "GET", "/approvals?status=pending", c.token, "")
		if list, _ := v["approvals"].([]any); len(list) == 1 {
			direct, _ = list[0].(map[string]any)["callId"].(string)
		}
		return direct != ""
	})
	if status, v, _ := b.request(t, "POST", "/approvals/"+direct, c.token, `{"approved":true,"onBehalfOf":"bob"}`); status != 200 {
		t.Fatalf("approving the direct call through B: %d %v", status, v)
	}
	select {
	case got := <-answer:
		if !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"callId":"`+direct+`"`) || !strings.Contains(got, `"isError":false`) ||
			!strings.Contains(got, `"recorded":"direct"`) {
			t.Errorf("A's waiting caller got: %s", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("A's waiting caller got no answer")
	}
	for _, h := range []*mhHost{a, b} {
		_, v, _ := h.request(t, "GET", "/calls/"+direct, c.token, "")
		if v["status"] != "approved" || v["isError"] != false || !strings.Contains(fmt.Sprint(v["result"]), "recorded:direct") {
			t.Errorf("the direct call's outcome on %s: %v", h.name, v)
		}
	}
	if runs := c.runLines(); len(runs) != 2 || runs[1][0] != direct {
		t.Errorf("record ran %d times in all, want 2 (the direct call once): %v", len(runs), runs)
	}
}

// 3. Twenty approvers at once, ten on each host, for one call parked on
// A: exactly one wins, nineteen get 409 already_resolved carrying the
// winner's decision, and the tool runs once.
func TestMultiHostConcurrentApprovers(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	fakeA, fakeB := c.fake(t, "A"), c.fake(t, "B")
	a := c.host(t, "A", fakeA, "--approval-wait", "0s")
	b := c.host(t, "B", fakeB, "--approval-wait", "0s")

	status, v, _ := a.request(t, "POST", "/tools/record", c.token, `{"input":{"note":"race"}}`)
	callID, _ := v["callId"].(string)
	if status != 202 || v["status"] != "approval_pending" || callID == "" {
		t.Fatalf("gated call on A: %d %v", status, v)
	}
	if _, v, _ := b.request(t, "GET", "/calls/"+callID, c.token, ""); v["status"] != "approval_pending" {
		t.Fatalf("the parked call seen from B: %v", v)
	}

	type answer struct {
		host   string
		by     string
		status int
		body   map[string]any
		err    error
	}
	answers := make(chan answer, 20)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 20 {
		h := []*mhHost{a, b}[i%2]
		wg.Go(func() {
			by := fmt.Sprintf("approver%d", i)
			<-start
			status, v, err := mhDo(h.server, "POST", "/approvals/"+callID, `{"approved":true,"onBehalfOf":"`+by+`"}`)
			answers <- answer{h.name, by, status, v, err}
		})
	}
	close(start)
	wg.Wait()
	close(answers)
	codes := map[string]int{}
	var winner answer
	var losers []answer
	for ans := range answers {
		if ans.err != nil {
			t.Errorf("approver on %s: %v", ans.host, ans.err)
			continue
		}
		codes[fmt.Sprintf("%s:%d", ans.host, ans.status)]++
		switch ans.status {
		case 200:
			winner = ans
		case 409:
			losers = append(losers, ans)
		default:
			t.Errorf("approver on %s: %d %v", ans.host, ans.status, ans.body)
		}
	}
	t.Logf("answers by host and status: %v", codes)
	if winner.status != 200 || len(losers) != 19 {
		t.Fatalf("want one 200 and nineteen 409s, got %v", codes)
	}
	for _, l := range losers {
		e, _ := l.body["error"].(map[string]any)
		ap, _ := e["approval"].(map[string]any)
		if e["code"] != "already_resolved" || ap["status"] != "approved" || ap["decidedBy"] != "bearer-token:"+winner.by {
			t.Errorf("a 409 on %s without the winner's (%s) decision: %v", l.host, winner.by, l.body)
		}
	}
	for _, h := range []*mhHost{a, b} {
		eventually(t, 30*time.Second, "the outcome on "+h.name, func() bool {
			_, v, _ := h.request(t, "GET", "/calls/"+callID, c.token, "")
			return v["status"] == "approved" && v["isError"] == false
		})
	}
	time.Sleep(time.Second) // a late second run would show by now
	if runs := c.runLines(); len(runs) != 1 || runs[0][0] != callID {
		t.Errorf("record ran %d times, want once: %v", len(runs), runs)
	} else {
		t.Logf("the winner approved through %s; the call ran on %s", winner.host, runs[0][1])
	}
}

// 4. A host is SIGKILLed while its model turn waits on the model; the
// other host resumes the turn (turn.resumed) once the dead host's lease
// runs out, asks its model again and finishes it. Everything stored
// before the kill is still there, and the session takes new turns on the
// survivor. The failover time (from the kill to turn.resumed on the
// survivor's stream) is measured with the dead host leading River's jobs
// and not (its scheduler runs on the leader; the sweep that resumes does
// not): host A starts alone (and so leads), then B; the turn runs on the
// host killed.
// Not parallel with the other tests, so that the figure is not that of a
// loaded machine.
func TestMultiHostFailover(t *testing.T) {
	for _, tc := range []struct {
		name       string
		killLeader bool
	}{{"kill A, started first to lead River", true}, {"kill B, started second", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testFailover(t, tc.killLeader)
		})
	}
}

func testFailover(t *testing.T, killLeader bool) {
	c := newCluster(t)
	const ttl = 2 * time.Second
	dyingName, survivorName := "A", "B"
	if !killLeader {
		dyingName, survivorName = "B", "A"
	}
	fakes := map[string]*fakemodel.Server{
		dyingName: c.fake(t, "unused",
			fakemodel.Reply{Text: []string{"Greeting first."}, Calls: []fakemodel.Call{{ID: "m1", Name: "hello", Input: `{"name":"Ada"}`}}},
			fakemodel.Reply{Hang: 5 * time.Minute},
		),
		survivorName: c.fake(t, "Back, on "+survivorName+"."),
	}
	hosts := map[string]*mhHost{"A": c.host(t, "A", fakes["A"], "--lease-ttl", ttl.String())}
	leaderA := riverLeader(t, c.store, 10*time.Second) // A runs alone: it leads
	hosts["B"] = c.host(t, "B", fakes["B"], "--lease-ttl", ttl.String())
	dying, survivor := hosts[dyingName], hosts[survivorName]

	id, turn := newSession(t, dying.server, "Greet Ada, then think hard")
	stream := follow(t, survivor.server, id, 0)
	evs := stream.until(t, 30*time.Second, "action.result", kindIs("action.result"))
	// The turn is mid-flight: the model has its second request and stalls.
	eventually(t, 30*time.Second, "the model's second request", func() bool { return len(fakes[dyingName].Requests()) == 2 })
	before := stored(t, dying.server, id)
	killed := dying.kill(t)

	evs = append(evs, stream.until(t, 60*time.Second, "turn.resumed", kindIs("turn.resumed"))...)
	resumed := evs[len(evs)-1]
	failover := resumed.at.Sub(killed)
	led := "unknown"
	if leaderA != "" {
		led = fmt.Sprint(killLeader)
		if now := riverLeader(t, c.store, 0); now != "" {
			led += fmt.Sprintf(" (River's leader is %s now)", map[bool]string{true: "A still", false: "another host"}[now == leaderA])
		}
	}
	t.Logf("failover after SIGKILL: %v (from the kill of %s to turn.resumed on %s's stream; --lease-ttl %v; the dead host led River's jobs: %s)",
		failover.Round(time.Millisecond), dyingName, survivorName, ttl, led)
	if resumed.TurnID != turn || resumed.field("attempt") != 1.0 || resumed.field("from") == "" {
		t.Errorf("turn.resumed: %v", resumed)
	}
	evs = append(evs, stream.until(t, 30*time.Second, "the resumed turn's end", func(e mhEvent) bool {
		return e.TurnID == turn && (e.Kind == "turn.completed" || e.Kind == "turn.failed")
	})...)
	// README: the lease TTL, plus up to 5 s (River's scheduler), plus up to
	// about 15 s when the dead host led River; and a little slack.
	limit := ttl + 5*time.Second + 3*time.Second
	if killLeader || leaderA == "" {
		limit += 15 * time.Second
	}
	if failover > limit {
		t.Errorf("failover took %v, more than %v", failover, limit)
	}
	checkSeqs(t, survivorName+"'s stream", evs, 1)
	after := stored(t, survivor.server, id)
	if len(after) <= len(before) {
		t.Fatalf("stored after the failover:\n%s\nbefore the kill:\n%s", eventLines(after), eventLines(before))
	}
	sameEvents(t, "the events stored before the kill", after[:len(before)], before)
	// The dead turn went on from its history: the survivor's model was
	// asked again (the dead host's request had no answer) and answered.
	tail := after[len(before):]
	if got := kindsOf(tail); got != "turn.resumed workspace.moved message.delta message model.usage turn.completed" || tail[3].field("text") != "Back, on "+survivorName+"." {
		t.Errorf("stored after the kill:\n%s", eventLines(tail))
	}
	if reqs := fakes[survivorName].Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0]), "Greeting first.") {
		t.Errorf("the survivor's model should get the turn's history: %d requests", len(reqs))
	}
	if !inOrder(before, "session.created turn.started message message.delta message actions.requested action.result") {
		t.Errorf("before the kill:\n%s", eventLines(before))
	}

	// The session takes a new turn, on the survivor.
	status, v, _ := survivor.request(t, "POST", "/session/"+id+"/messages", c.token, `{"message":"still there?"}`)
	if status != 202 {
		t.Fatalf("a new turn on %s: %d %v", survivorName, status, v)
	}
	more := stream.until(t, 30*time.Second, "the new turn's end", func(e mhEvent) bool { return e.Kind == "turn.completed" || e.Kind == "turn.failed" })
	if !inOrder(more, "turn.started message message.delta message model.usage turn.completed") || more[len(more)-3].field("text") != "Back, on "+survivorName+"." {
		t.Errorf("the turn after the failover:\n%s", eventLines(more))
	}
}

// riverLeader returns the id of the host leading River's jobs in the
// schema at url, waiting up to wait for one to be elected; "" when there is
// none (or no River: a store without durable jobs).
func riverLeader(t *testing.T, url string, wait time.Duration) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(wait); ; time.Sleep(50 * time.Millisecond) {
		var id string
		err := conn.QueryRow(ctx, `SELECT leader_id FROM river_leader WHERE expires_at > now()`).Scan(&id)
		if err == nil || time.Now().After(deadline) || strings.Contains(err.Error(), "SQLSTATE 42P01") { // no such table
			return id
		}
	}
}

// 5. The host running an approved call is SIGKILLed while the call runs
// (after its side effect): the other host records the call as interrupted
// (isError), does not run it again, and the turn waiting for it goes on
// (the model reads the interrupted result) or ends visibly (turn.failed).
func TestMultiHostKilledDuringApprovedCall(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	const ttl = 2 * time.Second
	script := fakemodel.Reply{Calls: []fakemodel.Call{{ID: "m1", Name: "record", Input: `{"note":"slow","sleepMs":60000}`}}}
	fakes := map[string]*fakemodel.Server{"A": c.fake(t, "Carried on.", script), "B": c.fake(t, "Carried on.")}
	// B first, so that it (likely) leads River's jobs and A, which runs the
	// call, does not: TestMultiHostFailover measures the other case.
	b := c.host(t, "B", fakes["B"], "--lease-ttl", ttl.String())
	a := c.host(t, "A", fakes["A"], "--lease-ttl", ttl.String())

	id, _ := newSession(t, a.server, "Record slowly")
	evs := follow(t, a.server, id, 0).until(t, 30*time.Second, "action.approval_requested", kindIs("action.approval_requested"))
	callID, _ := evs[len(evs)-1].field("callId").(string)
	if status, v, _ := a.request(t, "POST", "/approvals/"+callID, c.token, `{"approved":true,"onBehalfOf":"ana"}`); status != 200 {
		t.Fatalf("approving on A: %d %v", status, v)
	}
	eventually(t, 30*time.Second, "the approved call's side effect", func() bool { return len(c.runLines()) == 1 })
	// Kill whichever host runs it (the one approved through, today).
	runner, survivor := a, b
	if c.runLines()[0][1] == "B" {
		runner, survivor = b, a
	}
	t.Logf("approved through A, the call runs on %s; killing it", runner.name)
	killed := runner.kill(t)

	// Both must come, in either order: the call's outcome, and the end of
	// the turn (it goes on to the model, or is closed).
	var result, end *mhEvent
	all := follow(t, survivor.server, id, 0).until(t, 60*time.Second, "the call's result and the turn's end", func(e mhEvent) bool {
		switch {
		case e.Kind == "action.result" && e.field("callId") == callID:
			result = &e
		case e.Kind == "turn.completed" || e.Kind == "turn.failed":
			end = &e
		}
		return result != nil && end != nil
	})
	checkSeqs(t, "the survivor's stream", all, 1)
	if result.field("isError") != true || !strings.Contains(string(result.Data), "interrupted by host restart; not retried") {
		t.Errorf("the interrupted call's result: %v", result)
	}
	t.Logf("after the SIGKILL: the call's interrupted result came in %v, %s in %v; stream:\n%s",
		result.at.Sub(killed).Round(time.Millisecond), end.Kind, end.at.Sub(killed).Round(time.Millisecond), eventLines(all[len(evs)-1:]))
	switch {
	case end.Kind == "turn.completed":
		// It went on: the model read the interrupted result.
		if !inOrder(all, "action.approval_resolved action.result message.delta message turn.completed") {
			t.Errorf("the waiting turn went on out of order:\n%s", eventLines(all))
		}
		if !fakes[survivor.name].Contains(0, "interrupted by host restart") {
			t.Errorf("the survivor's model did not read the interrupted result: %d requests", len(fakes[survivor.name].Requests()))
		}
	case end.Seq < result.Seq:
		t.Logf("NOTE: the turn was closed (%s) before its call's outcome was recorded", end.Data)
	}
	if _, v, _ := survivor.request(t, "GET", "/calls/"+callID, c.token, ""); v["status"] != "approved" || v["isError"] != true {
		t.Errorf("the interrupted call's outcome: %v", v)
	}
	time.Sleep(2 * ttl) // more sweeps: nothing runs it again
	if runs := c.runLines(); len(runs) != 1 {
		t.Errorf("record ran %d times, want once: %v", len(runs), runs)
	}
	final := stored(t, survivor.server, id)
	if n, m := len(ofCall(final, "action.approval_resolved", callID)), len(ofCall(final, "action.result", callID)); n != 1 || m != 1 {
		t.Errorf("%d approval_resolved and %d action.result for the call, want 1 and 1:\n%s", n, m, eventLines(final))
	}
}

// 6. A call's approval expires while both hosts are down; when both start
// again, it is expired exactly once: one approval_resolved (expired) and
// one action.result on the stream, the tool never ran, and the waiting
// turn goes on.
func TestMultiHostApprovalExpiresWhileDown(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	args := []string{"--lease-ttl", "2s", "--approval-timeout", "15s"} // room for both hosts to go down first on a loaded machine
	fakeA := c.fake(t, "Nobody approved it.", fakemodel.Reply{Calls: []fakemodel.Call{{ID: "m1", Name: "record", Input: `{"note":"never"}`}}})
	fakeB := c.fake(t, "Nobody approved it.")
	a := c.host(t, "A", fakeA, args...)
	b := c.host(t, "B", fakeB, args...)

	id, _ := newSession(t, a.server, "Record, if someone lets you")
	st := follow(t, b.server, id, 0)
	evs := st.until(t, 30*time.Second, "action.approval_requested", kindIs("action.approval_requested"))
	callID, _ := evs[len(evs)-1].field("callId").(string)
	_, v, _ := b.request(t, "GET", "/approvals?status=pending", c.token, "")
	list, _ := v["approvals"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["callId"] != callID {
		t.Fatalf("pending approvals: %v", v)
	}
	expires, err := time.Parse(time.RFC3339Nano, list[0].(map[string]any)["expiresAt"].(string))
	if err != nil {
		t.Fatal(err)
	}
	st.cancel()
	a.stop(t)
	b.kill(t)
	if time.Now().After(expires) {
		t.Fatalf("the hosts were not both down before the approval expired at %v", expires)
	}
	t.Logf("both hosts down %v before the approval expires", time.Until(expires).Round(time.Millisecond))
	time.Sleep(time.Until(expires) + time.Second)

	waitA, waitB := a.launch(t), b.launch(t)
	waitA()
	waitB()
	all := follow(t, b.server, id, 0).until(t, 60*time.Second, "the turn's end", func(e mhEvent) bool {
		return e.Kind == "turn.completed" || e.Kind == "turn.failed"
	})
	time.Sleep(3 * time.Second) // more sweeps on both hosts: nothing is expired twice
	onA, onB := stored(t, a.server, id), stored(t, b.server, id)
	sameEvents(t, "the session's events on A and B", onA, onB)
	checkSeqs(t, "the stored events", onB, 1)
	resolved, results := ofCall(onB, "action.approval_resolved", callID), ofCall(onB, "action.result", callID)
	if len(resolved) != 1 || resolved[0].field("status") != "expired" {
		t.Errorf("approval_resolved events, want one expired:\n%s", eventLines(resolved))
	}
	if len(results) != 1 || results[0].field("isError") != true || !strings.Contains(string(results[0].Data), "expired") {
		t.Errorf("action.result events, want one error saying it expired:\n%s", eventLines(results))
	}
	if got := kindsOf(onB); strings.Count(got, "turn.completed")+strings.Count(got, "turn.failed") != 1 ||
		!inOrder(onB, "action.approval_requested action.approval_resolved action.result message.delta message turn.completed") {
		t.Errorf("the waiting turn after the restart:\n%s", eventLines(onB))
	}
	if len(all) != len(onB) {
		t.Errorf("the stream ended the turn at seq %d, but %d events are stored", all[len(all)-1].Seq, len(onB))
	}
	if runs := c.runLines(); len(runs) != 0 {
		t.Errorf("the expired call ran: %v", runs)
	}
	for _, h := range []*mhHost{a, b} {
		if _, v, _ := h.request(t, "GET", "/calls/"+callID, c.token, ""); v["status"] != "expired" || v["isError"] != true {
			t.Errorf("the expired call on %s: %v", h.name, v)
		}
		status, v, _ := h.request(t, "POST", "/approvals/"+callID, c.token, `{"approved":true}`)
		if e, _ := v["error"].(map[string]any); status != 410 || e["code"] != "approval_expired" {
			t.Errorf("approving the expired call on %s: %d %v", h.name, status, v)
		}
	}
}
