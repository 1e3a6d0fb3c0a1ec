package evals_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/evals"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// newEvalModel is the model of the eval tests: a batch's cases run at
// once, so each case whose first message starts with a marker gets a fake
// of its own (fakemodel.Router).
func newEvalModel(t testing.TB) *fakemodel.Router {
	m := fakemodel.NewRouter()
	t.Cleanup(m.Close)
	return m
}

// evalHost starts a host of set on st whose model is m, with its evals;
// closed when the test ends.
func evalHost(t testing.TB, st store.Store, set *tool.Set, m *fakemodel.Router, opts host.Options) *evalBed {
	t.Helper()
	return startHost(t, st, set, m.URL, opts)
}

type lookupInput struct {
	City  string `json:"city"`
	Units string `json:"units,omitempty"`
}

type scoreInput struct {
	Case   map[string]any   `json:"case"`
	Events []map[string]any `json:"events"`
}

// evalTools are the tools the evals' agent has: lookup (the weather of a
// city), boom (fails), judge (a scorer: it passes a case whose events
// hold a lookup of the city its case's name names), broken_judge (a
// scorer that fails) and run_eval (runs an eval through call.Host.Evals).
func evalTools(t testing.TB) *tool.Set {
	lookup, err := tool.New("lookup", tool.Config{Description: "The weather of a city."}, func(ctx context.Context, call *tool.Call, in lookupInput) (map[string]string, error) {
		return map[string]string{"city": in.City, "sky": "sunny"}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	boom, _ := tool.New("boom", tool.Config{Description: "Fails."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		return nil, errors.New("boom went the tool")
	})
	judge, _ := tool.New("judge", tool.Config{Description: "Scores an eval case."}, func(ctx context.Context, call *tool.Call, in scoreInput) (map[string]any, error) {
		city, _ := in.Case["name"].(string)
		kinds := 0
		for _, e := range in.Events {
			if e["kind"] == string(api.KindMessageDelta) {
				return nil, errors.New("the scorer got text deltas")
			}
			if e["kind"] == string(api.KindActionsRequested) && strings.Contains(fmt.Sprint(e["data"]), city) {
				return map[string]any{"pass": true, "score": 0.9, "reason": "looked up " + city}, nil
			}
			kinds++
		}
		return map[string]any{"pass": false, "score": 0.1, "reason": fmt.Sprintf("no lookup of %s in %d events", city, kinds)}, nil
	})
	brokenJudge, _ := tool.New("broken_judge", tool.Config{Description: "A scorer that fails."}, func(ctx context.Context, call *tool.Call, in scoreInput) (any, error) {
		return nil, errors.New("the judge is out")
	})
	runEval, _ := tool.New("run_eval", tool.Config{Description: "Runs an eval."}, func(ctx context.Context, call *tool.Call, in struct {
		Eval json.RawMessage `json:"eval"`
	}) (string, error) {
		return call.Host.Evals.Run(ctx, in.Eval)
	})
	set, err := tool.NewSet(lookup, boom, judge, brokenJudge, runEval)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// waitEval polls a batch until it is completed, and returns it.
func waitEval(t testing.TB, h *evalBed, id string) api.EvalBatch {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, err := h.GetEval(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if b.Status == api.EvalCompleted {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s not completed within 60s: %+v", id, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func checkDetails(r api.EvalCaseResult) string {
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "  %+v pass=%v %s\n", c.Check, c.Pass, c.Detail)
	}
	return b.String()
}

// A two-case batch: one case passes every check (the model looks the
// city up with the args, then answers), the other fails two of three;
// and a conversation, whose final answer is its last turn's. Each case
// runs once, in a session of its own on the eval channel.
func TestEvalBatch(t *testing.T) {
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			m := newEvalModel(t)
			m.Route("[paris]",
				fakemodel.Reply{Text: []string{"Let me look."}, Calls: []fakemodel.Call{{ID: "c1", Name: "lookup", Input: `{"city":"Paris","units":"metric"}`}}},
				fakemodel.Reply{Text: []string{"It is ", "sunny in Paris."}})
			m.Route("[lima]", fakemodel.Reply{Text: []string{"I do not know."}})
			m.Route("[talk]",
				fakemodel.Reply{Text: []string{"Which city?"}},
				fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c2", Name: "boom", Input: `{}`}}},
				fakemodel.Reply{Text: []string{"Oslo: cloudy."}})
			h := evalHost(t, openStore(t, driver), evalTools(t), m, host.Options{})
			ctx := context.Background()
			req := api.EvalRunRequest{Name: "weather", Cases: []api.EvalCase{
				{Name: "paris", Message: "[paris] Weather in Paris?", Checks: []api.EvalCheck{
					{Called: "lookup", Args: map[string]any{"city": "Paris"}},
					{NotCalled: "boom"},
					{Contains: "sunny"},
					{Matches: `(?i)^it is .* paris\.$`},
					{MaxSteps: 2},
					{NoError: true},
				}},
				{Message: "[lima] Weather in Lima?", Checks: []api.EvalCheck{
					{Called: "lookup"},
					{Contains: "sunny"},
					{NoError: true},
				}},
				{Name: "talk", Conversation: []string{"[talk] Weather?", "In Oslo."}, Checks: []api.EvalCheck{
					{Contains: "Oslo"},
					{NotCalled: "lookup"},
					{MaxSteps: 3},
					{NoError: true},
				}},
			}}
			started, err := h.RunEval(ctx, req, "tester")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(started.ID, "eval_") || started.Status != api.EvalQueued || started.Total != 3 || started.Name != "weather" ||
				len(started.Cases) != 3 || started.Cases[1].Case.Name != "case-2" || started.Cases[1].Status != api.EvalQueued {
				t.Fatalf("started: %+v", started)
			}
			b := waitEval(t, h, started.ID)
			if b.Ended == nil || b.Total != 3 || b.Passed != 1 || len(b.Cases) != 3 {
				t.Fatalf("batch: %+v", b)
			}
			paris, lima, talk := b.Cases[0], b.Cases[1], b.Cases[2]
			if paris.Status != api.EvalCompleted || !paris.Pass || paris.Score != 1 || len(paris.Checks) != 6 || paris.Error != "" {
				t.Errorf("paris: %+v\n%s", paris, checkDetails(paris))
			}
			if d := paris.Checks[4].Detail; d != "2 model steps" {
				t.Errorf("paris's maxSteps detail: %q", d)
			}
			if lima.Status != api.EvalCompleted || lima.Pass || math.Abs(lima.Score-1.0/3) > 1e-9 || len(lima.Checks) != 3 ||
				lima.Checks[0].Pass || lima.Checks[0].Detail != "not called" ||
				lima.Checks[1].Pass || lima.Checks[1].Detail != `the final answer does not contain it: "I do not know."` || !lima.Checks[2].Pass {
				t.Errorf("lima: %+v\n%s", lima, checkDetails(lima))
			}
			// The conversation's final answer is its second turn's; boom's
			// error fails noError; the steps add up over both turns.
			if talk.Status != api.EvalCompleted || talk.Pass || talk.Score != 0.75 || !talk.Checks[0].Pass || !talk.Checks[1].Pass ||
				!talk.Checks[2].Pass || talk.Checks[2].Detail != "3 model steps" ||
				talk.Checks[3].Pass || !strings.Contains(talk.Checks[3].Detail, "boom (tool_boom_") || !strings.Contains(talk.Checks[3].Detail, "boom went the tool") {
				t.Errorf("talk: %+v\n%s", talk, checkDetails(talk))
			}
			if want := (1 + 1.0/3 + 0.75) / 3; math.Abs(b.Score-want) > 1e-9 {
				t.Errorf("batch score %v, want %v", b.Score, want)
			}
			// Each case ran once, in its session on the eval channel, the principal's who ran it.
			for _, c := range b.Cases {
				if c.Started == nil || c.Ended == nil || c.Ended.Before(*c.Started) {
					t.Errorf("case %d: started %v, ended %v", c.Index, c.Started, c.Ended)
				}
				sess, err := h.Sessions().Get(ctx, c.SessionID)
				if err != nil || sess.Channel != "eval" || sess.Principal != "tester" || sess.RunningTurn != "" {
					t.Errorf("case %d's session %s: %+v %v", c.Index, c.SessionID, sess, err)
				}
			}
			sessions, _, err := h.Sessions().List(ctx, store.Page{Limit: 100})
			if err != nil || len(sessions) != 3 {
				t.Errorf("%d sessions, want 3 (one per case): %v", len(sessions), err)
			}
			evs, _ := h.Sessions().Events(ctx, talk.SessionID, 0, 1000)
			if got := len(find(evs, api.KindTurnCompleted)); got != 2 {
				t.Errorf("the conversation had %d turns, want 2: %s", got, kinds(evs))
			}
			for marker, n := range map[string]int{"[paris]": 2, "[lima]": 1, "[talk]": 3} {
				if got := m.Requests(marker); got != n {
					t.Errorf("case %s: %d model requests, want %d", marker, got, n)
				}
			}
			// Listed, newest first, without cases.
			list, next, err := h.ListEvals(ctx, store.Page{Limit: 10})
			if err != nil || next != "" || len(list) != 1 || list[0].ID != b.ID || list[0].Cases != nil || list[0].Status != api.EvalCompleted || list[0].Passed != 1 {
				t.Errorf("listed: %+v %q %v", list, next, err)
			}
		})
	}
}

// A case whose turn fails (the model answers 500) fails, with the turn's
// reason and a score of 0; the batch completes.
func TestEvalTurnFails(t *testing.T) {
	m := newEvalModel(t)
	m.Route("[down]", fakemodel.Reply{Status: 500}, fakemodel.Reply{Status: 500}, fakemodel.Reply{Status: 500}, fakemodel.Reply{Status: 500})
	h := evalHost(t, openStore(t, "sqlite"), evalTools(t), m, host.Options{})
	b, err := h.RunEval(context.Background(), api.EvalRunRequest{Cases: []api.EvalCase{
		{Message: "[down] Hi", Checks: []api.EvalCheck{{Contains: "Hi"}}},
		{Message: "Hello"},
	}}, "tester")
	if err != nil {
		t.Fatal(err)
	}
	b = waitEval(t, h, b.ID)
	down, hello := b.Cases[0], b.Cases[1]
	if b.Name != "eval" || down.Status != api.EvalFailed || down.Pass || down.Score != 0 || !strings.HasPrefix(down.Error, "the turn failed: ") || down.Checks != nil {
		t.Errorf("the failed case: %+v", down)
	}
	// No checks: a score of 1.
	if hello.Status != api.EvalCompleted || !hello.Pass || hello.Score != 1 || b.Passed != 1 || b.Score != 0.5 {
		t.Errorf("the batch: %+v", b)
	}
}

// A batch runs at most EvalConcurrencyDefault cases at once, and runs
// them at once.
func TestEvalConcurrency(t *testing.T) {
	for _, driver := range drivers {
		t.Run(driver, func(t *testing.T) {
			m := newEvalModel(t)
			m.Default.SetDefault(fakemodel.Reply{Hang: 150 * time.Millisecond, Text: []string{"ok"}})
			h := evalHost(t, openStore(t, driver), evalTools(t), m, host.Options{})
			var cases []api.EvalCase
			for i := range 12 {
				cases = append(cases, api.EvalCase{Message: fmt.Sprintf("case %d", i), Checks: []api.EvalCheck{{Contains: "ok"}}})
			}
			b, err := h.RunEval(context.Background(), api.EvalRunRequest{Name: "wide", Cases: cases, Concurrency: 4}, "tester")
			if err != nil {
				t.Fatal(err)
			}
			b = waitEval(t, h, b.ID)
			if b.Passed != 12 || b.Score != 1 {
				t.Fatalf("batch: %+v", b)
			}
			if p := m.Peak(); p > evals.ConcurrencyDefault || p < 2 {
				t.Errorf("%d cases ran at once, want 2 to %d", p, evals.ConcurrencyDefault)
			}
			if n := len(m.Default.Requests()); n != 12 {
				t.Errorf("%d model requests, want 12", n)
			}
		})
	}
}

// A scorer tool scores a case as one more check: it gets the case and the
// events (no text deltas); its verdict, score and reason are the check's.
func TestEvalScorer(t *testing.T) {
	m := newEvalModel(t)
	m.Route("[rome]",
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "c1", Name: "lookup", Input: `{"city":"Rome"}`}}},
		fakemodel.Reply{Text: []string{"Sunny ", "in Rome."}})
	h := evalHost(t, openStore(t, "sqlite"), evalTools(t), m, host.Options{})
	b, err := h.RunEval(context.Background(), api.EvalRunRequest{Cases: []api.EvalCase{
		{Name: "Rome", Message: "[rome] Rome?", Scorer: "judge", Checks: []api.EvalCheck{{Contains: "Rome"}}},
		{Name: "Bern", Message: "[bern] Bern?", Scorer: "judge"},
		{Name: "Kyiv", Message: "[kyiv] Kyiv?", Scorer: "broken_judge"},
	}}, "tester")
	if err != nil {
		t.Fatal(err)
	}
	b = waitEval(t, h, b.ID)
	rome, bern, kyiv := b.Cases[0], b.Cases[1], b.Cases[2]
	if !rome.Pass || rome.Score != 1 || len(rome.Checks) != 2 || rome.Checks[1].Detail != "scorer judge: pass (score 0.9): looked up Rome" {
		t.Errorf("rome: %+v\n%s", rome, checkDetails(rome))
	}
	if bern.Pass || bern.Score != 0 || len(bern.Checks) != 1 || !strings.HasPrefix(bern.Checks[0].Detail, "scorer judge: fail (score 0.1): no lookup of Bern in ") {
		t.Errorf("bern: %+v\n%s", bern, checkDetails(bern))
	}
	if kyiv.Pass || kyiv.Status != api.EvalCompleted || len(kyiv.Checks) != 1 || kyiv.Checks[0].Detail != "scorer broken_judge failed: the judge is out" {
		t.Errorf("kyiv: %+v\n%s", kyiv, checkDetails(kyiv))
	}
}

// An invalid eval is refused with invalid_eval, listing every problem; a
// host without durable jobs refuses evals with no_jobs; an unknown batch
// is eval_not_found.
func TestEvalInvalid(t *testing.T) {
	m := newEvalModel(t)
	h := evalHost(t, openStore(t, "sqlite"), evalTools(t), m, host.Options{})
	ctx := context.Background()
	many := make([]api.EvalCase, 501)
	for i := range many {
		many[i] = api.EvalCase{Message: "hi"}
	}
	twentyOne := make([]api.EvalCheck, 21)
	for i := range twentyOne {
		twentyOne[i] = api.EvalCheck{NoError: true}
	}
	for _, tc := range []struct {
		name string
		req  api.EvalRunRequest
		want []string // the violations, "path: message"
	}{
		{"no cases", api.EvalRunRequest{}, []string{"cases: an eval needs at least one case"}},
		{"too many cases", api.EvalRunRequest{Cases: many}, []string{"cases: 501 cases; an eval has at most 500 (split it)"}},
		{"everything", api.EvalRunRequest{Concurrency: -1, Cases: []api.EvalCase{
			{},
			{Message: "a", Conversation: []string{"b"}},
			{Conversation: []string{"a", "  "}},
			{Name: "case-1", Message: "x", Checks: []api.EvalCheck{
				{},
				{Called: "lookup", Contains: "x"},
				{Matches: "("},
				{MaxSteps: -1},
				{Contains: "y", Args: map[string]any{"a": 1}},
				{Args: map[string]any{"a": 1}},
				{Called: "nope"},
				{NotCalled: "nope"}, // fine: an absent tool is not called
			}, Scorer: "nope"},
			{Message: "x", Scorer: "lookup", Checks: twentyOne},
		}}, []string{
			"concurrency: must not be negative",
			"cases[0]: has neither a message nor a conversation",
			"cases[1]: has both a message and a conversation; give one",
			"cases[2].conversation[1]: is empty",
			`cases[3].name: "case-1" is the name of cases[0] too; names must be unique`,
			"cases[3].checks[0]: is empty; give one of called, notCalled, contains, matches, maxSteps, noError",
			"cases[3].checks[1]: has called and contains; a check is exactly one kind (make one check of each)",
			"cases[3].checks[2].matches: is not a regular expression (RE2): error parsing regexp: missing closing ): `(`",
			"cases[3].checks[3].maxSteps: must be positive",
			"cases[3].checks[4].args: args go with called only",
			"cases[3].checks[5]: args without called: args narrow a called check",
			`cases[3].checks[6].called: the agent has no tool "nope"`,
			`cases[3].scorer: the agent has no tool "nope"`,
			"cases[4].checks: 21 checks; a case has at most 20",
		}},
		{"concurrency", api.EvalRunRequest{Concurrency: 65, Cases: []api.EvalCase{{Message: "x"}}}, []string{"concurrency: is 65; at most 64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := h.RunEval(ctx, tc.req, "tester")
			var e *api.Error
			if !errors.As(err, &e) || e.Code != api.CodeInvalidEval || e.Status() != http.StatusBadRequest {
				t.Fatalf("%v (%T), want invalid_eval", err, err)
			}
			var got []string
			for _, v := range e.Violations {
				got = append(got, v.Path+": "+v.Message)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if !strings.HasPrefix(e.Message, "invalid eval: "+tc.want[0]) {
				t.Errorf("message: %s", e.Message)
			}
		})
	}
	list, _, err := h.ListEvals(ctx, store.Page{})
	if err != nil || len(list) != 0 {
		t.Errorf("refused evals stored: %+v %v", list, err)
	}
	if _, err := h.GetEval(ctx, "eval_nope"); !errors.Is(err, &api.Error{Code: api.CodeEvalNotFound}) {
		t.Errorf("an unknown batch: %v", err)
	}

	// The in-memory store runs no jobs.
	mem, err := newEvalBed(evalTools(t), &host.Options{StateRoot: t.TempDir(), Store: memory.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	_, err = mem.RunEval(ctx, api.EvalRunRequest{Cases: []api.EvalCase{{Message: "x"}}}, "tester")
	if !errors.Is(err, &api.Error{Code: api.CodeNoJobs}) {
		t.Errorf("RunEval on the memory store: %v", err)
	}
	if _, _, err := mem.ListEvals(ctx, store.Page{}); !errors.Is(err, &api.Error{Code: api.CodeNoJobs}) {
		t.Errorf("ListEvals on the memory store: %v", err)
	}
	if _, err := mem.GetEval(ctx, "eval_x"); !errors.Is(err, &api.Error{Code: api.CodeNoJobs}) {
		t.Errorf("GetEval on the memory store: %v", err)
	}
	out, err := mem.CallTool(ctx, "run_eval", map[string]any{"eval": map[string]any{"cases": []any{map[string]any{"message": "x"}}}}, nil)
	if err != nil || !out.IsError || !strings.Contains(string(out.Result), "service not configured") || !strings.Contains(string(out.Result), "evals need SQLite or PostgreSQL") {
		t.Errorf("call.Host.Evals on the memory store: %v %+v", err, out)
	}
}

// A tool runs an eval through call.Host.Evals and reads its batch.
func TestEvalFromTool(t *testing.T) {
	m := newEvalModel(t)
	h := evalHost(t, openStore(t, "sqlite"), evalTools(t), m, host.Options{})
	ctx := context.Background()
	out, err := h.CallTool(ctx, "run_eval", map[string]any{"eval": map[string]any{"name": "from a tool",
		"cases": []any{map[string]any{"message": "hi", "checks": []any{map[string]any{"contains": "done"}}}}}}, nil)
	if err != nil || out.IsError {
		t.Fatalf("run_eval: %v %+v", err, out)
	}
	var id string
	json.Unmarshal(out.Result, &id)
	b := waitEval(t, h, id)
	if b.Name != "from a tool" || b.Passed != 1 {
		t.Errorf("batch: %+v", b)
	}
	out, _ = h.CallTool(ctx, "run_eval", map[string]any{"eval": map[string]any{"cases": []any{}}}, nil)
	if !out.IsError || !strings.Contains(string(out.Result), "evals: invalid eval: cases: an eval needs at least one case") {
		t.Errorf("an invalid eval from a tool: %+v", out)
	}
	out, _ = h.CallTool(ctx, "run_eval", map[string]any{"eval": map[string]any{"cases": []any{}, "bogus": 1}}, nil)
	if !out.IsError || !strings.Contains(string(out.Result), `unknown field \"bogus\"`) {
		t.Errorf("an eval with an unknown field from a tool: %+v", out)
	}
}

// A host that stops while cases run records them as interrupted (they
// are not run again); the cases still queued run on the next host.
func TestEvalHostStops(t *testing.T) {
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := newEvalModel(t)
	release := make(chan struct{})
	defer close(release)
	fakes := []*fakemodel.Server{m.Route("[c0]", fakemodel.Reply{Until: release})}
	cases := []api.EvalCase{{Message: "[c0] Hi"}}
	for i := 1; i <= 10; i++ {
		marker := fmt.Sprintf("[c%d]", i)
		fakes = append(fakes, m.Route(marker, fakemodel.Reply{Hang: 200 * time.Millisecond, Text: []string{"ok"}}))
		cases = append(cases, api.EvalCase{Message: marker + " Hi"})
	}
	first, err := newEvalBed(evalTools(t), &host.Options{StateRoot: dir, Store: st, LeaseTTL: time.Second, Model: mustFake(t, m)})
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := first.RunEval(context.Background(), api.EvalRunRequest{Cases: cases}, "tester")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(fakes[0].Requests()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the hanging case never reached the model")
		}
		time.Sleep(10 * time.Millisecond)
	}
	first.Close()
	mid, err := first.GetEval(context.Background(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	interrupted := 0
	for _, c := range mid.Cases {
		switch c.Status {
		case api.EvalRunning:
			t.Errorf("case %d still running after its host stopped", c.Index)
		case api.EvalFailed:
			interrupted++
			if c.Error != "interrupted: its host stopped; not run again" {
				t.Errorf("case %d: %+v", c.Index, c)
			}
		}
	}
	if mid.Status == api.EvalCompleted || mid.Cases[0].Status != api.EvalFailed || interrupted > evals.ConcurrencyDefault {
		t.Fatalf("after the host stopped: %+v", mid)
	}
	second := evalHost(t, st, evalTools(t), m, host.Options{StateRoot: dir})
	done := waitEval(t, second, b.ID)
	if done.Passed != 11-interrupted {
		t.Errorf("%d cases passed, want %d: %+v", done.Passed, 11-interrupted, done)
	}
	for i, c := range done.Cases {
		n := len(fakes[i].Requests())
		switch {
		case c.Status == api.EvalCompleted && n != 1, c.Status == api.EvalFailed && n > 1:
			t.Errorf("case %d (%s) asked the model %d times", i, c.Status, n)
		case c.Status == api.EvalFailed && mid.Cases[i].Status != api.EvalFailed:
			t.Errorf("case %d failed on the second host: %+v", i, c)
		}
	}
}

func mustFake(t testing.TB, m *fakemodel.Router) model.Provider {
	p, err := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: m.URL, MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// BenchmarkEvalBatch runs batches of one-turn cases (50, and 500) with
// the instant fake model and reports cases a second:
//
//	go test ./evals -run '^$' -bench EvalBatch -benchtime 3x
func BenchmarkEvalBatch(b *testing.B) {
	for _, driver := range drivers {
		for _, n := range []int{50, 500} {
			b.Run(fmt.Sprintf("%s/cases=%d", driver, n), func(b *testing.B) {
				m := newEvalModel(b)
				h := evalHost(b, openStore(b, driver), evalTools(b), m, host.Options{LeaseTTL: 15 * time.Second, MaxSessions: -1})
				cases := make([]api.EvalCase, n)
				for i := range cases {
					cases[i] = api.EvalCase{Message: fmt.Sprintf("case %d", i), Checks: []api.EvalCheck{{Contains: "done"}, {NoError: true}}}
				}
				var total time.Duration
				for b.Loop() {
					start := time.Now()
					batch, err := h.RunEval(context.Background(), api.EvalRunRequest{Cases: cases}, "bench")
					if err != nil {
						b.Fatal(err)
					}
					// Polled through the listing, which reads no cases.
					for {
						list, _, err := h.ListEvals(context.Background(), store.Page{Limit: 1})
						if err != nil {
							b.Fatal(err)
						}
						if list[0].ID == batch.ID && list[0].Status == api.EvalCompleted {
							batch = list[0]
							break
						}
						time.Sleep(5 * time.Millisecond)
					}
					total += time.Since(start)
					if batch.Passed != n {
						b.Fatalf("passed %d of %d", batch.Passed, n)
					}
				}
				b.ReportMetric(float64(n*b.N)/total.Seconds(), "cases/s")
			})
		}
	}
}
