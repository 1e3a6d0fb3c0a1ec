package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// FuzzAgainstSQLite runs one sequence of operations, decoded from the
// input, on the memory store and on SQLite, and requires the same results:
// the same records (times aside, which each store takes from its own
// clock), the same errors as errors.Is tells them apart, in the same
// order.
func FuzzAgainstSQLite(f *testing.F) {
	for seed := range uint64(12) {
		b := make([]byte, 600)
		r := rand.New(rand.NewPCG(seed, seed))
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		ctx := context.Background()
		sql, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agent.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer sql.Close()
		mem := memory.New()
		for step := 0; len(script) > 0; step++ {
			in := &input{b: script}
			op := ops[in.n(len(ops))]
			args := in.b // both stores read the same arguments
			want := op.run(ctx, sql, &input{b: args})
			in = &input{b: args}
			got := op.run(ctx, mem, in)
			if got != want {
				t.Fatalf("step %d, %s:\nsqlite: %s\nmemory: %s", step, op.name, want, got)
			}
			script = in.b
		}
	})
}

// input hands out small choices from the fuzzer's bytes; 0 once they run
// out.
type input struct{ b []byte }

func (in *input) n(max int) int {
	if len(in.b) == 0 {
		return 0
	}
	v := int(in.b[0]) % max
	in.b = in.b[1:]
	return v
}

func (in *input) pick(choices ...string) string { return choices[in.n(len(choices))] }

func (in *input) lease() store.Lease {
	return store.Lease{Holder: in.pick("h1", "h2"), TTL: []time.Duration{time.Minute, -time.Minute}[in.n(2)], Home: in.pick("", "a", "b")}
}

func (in *input) fence() store.Fence {
	return store.Fence{SessionID: in.pick("s1", "s2"), TurnID: in.pick("t1", "t2", "t3"), Token: int64(in.n(4))}
}

func (in *input) page() store.Page { return store.Page{Limit: in.n(4)} }

func (in *input) events() []api.Event {
	evs := make([]api.Event, in.n(3))
	for i := range evs {
		evs[i] = api.Event{Kind: api.KindMessage, Data: json.RawMessage(in.pick(`{"text":"hi"}`, ``, `[1,2]`))}
	}
	return evs
}

func (in *input) version() *int64 {
	if v := in.n(5); v < 4 {
		n := int64(v)
		return &n
	}
	return nil
}

type op struct {
	name string
	run  func(ctx context.Context, s store.Store, in *input) string
}

var ops = []op{
	{"CreateSession", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.CreateSession(ctx, api.Session{ID: in.pick("s1", "s2", ""), Channel: "http", Mode: api.ModeLocal}))
	}},
	{"Session", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.Session(ctx, in.pick("s1", "s2", "s3")))
	}},
	{"ListSessions", func(ctx context.Context, s store.Store, in *input) string {
		return showPages(in.page(), func(p store.Page) ([]api.Session, string, error) {
			return s.ListSessions(ctx, store.ListSessionsParams{Page: p})
		})
	}},
	{"Append", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.Append(ctx, in.pick("s1", "s2", "s3"), in.events()...))
	}},
	{"Events", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.Events(ctx, in.pick("s1", "s2", "s3"), int64(in.n(6)-1), in.n(4)))
	}},
	{"BeginTurn", func(ctx context.Context, s store.Store, in *input) string {
		t := api.Turn{SessionID: in.pick("s1", "s2", "s3"), ID: in.pick("t1", "t2", "t3"), Kind: api.TurnModel}
		h, evs, err := s.BeginTurn(ctx, store.BeginTurnParams{Turn: t, Lease: in.lease(), Events: in.events()})
		return show(h, err) + show(evs, err)
	}},
	{"AppendTurn", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.AppendTurn(ctx, in.fence(), in.events()...))
	}},
	{"EndTurn", func(ctx context.Context, s store.Store, in *input) string {
		p := store.EndTurnParams{SessionID: in.pick("s1", "s2"), TurnID: in.pick("t1", "t2", "t3"),
			Status: api.TurnStatus(in.pick("completed", "failed")), Reason: in.pick("", "boom")}
		p.Token, p.Expired = int64(in.n(4)), in.n(2) == 0
		p.Events = in.events()
		return show(s.EndTurn(ctx, p))
	}},
	{"RenewLease", func(ctx context.Context, s store.Store, in *input) string {
		return show(0, s.RenewLease(ctx, in.fence(), in.lease()))
	}},
	{"ParkTurn", func(ctx context.Context, s store.Store, in *input) string {
		return show(0, s.ParkTurn(ctx, in.fence()))
	}},
	{"ResumeTurn", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.ResumeTurn(ctx, in.pick("s1", "s2"), in.pick("t1", "t2", "t3"), in.lease()))
	}},
	{"Turn", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.Turn(ctx, in.pick("s1", "s2"), in.pick("t1", "t2", "t3")))
	}},
	{"ExpiredTurns", func(ctx context.Context, s store.Store, in *input) string {
		return showSorted(s.ExpiredTurns(ctx, time.Now()))
	}},
	{"ParkedTurns", func(ctx context.Context, s store.Store, in *input) string { return showSorted(s.ParkedTurns(ctx)) }},
	{"CancelTurn", func(ctx context.Context, s store.Store, in *input) string {
		evs := in.events()
		var given []api.Approval
		closed, stored, err := s.CancelTurn(ctx, store.CancelTurnParams{SessionID: in.pick("s1", "s2"), TurnID: in.pick("t1", "t2", "t3"),
			Reason: in.pick("", "cancelled"), CallReason: in.pick("", "why"), Outcome: api.Outcome{IsError: true, Result: json.RawMessage(`"x"`)}, Held: in.n(2) == 0,
			Events: func(closed []api.Approval) []api.Event { given = closed; return evs }})
		return show2(closed, stored, err) + show(given, nil)
	}},
	{"CreateApproval", func(ctx context.Context, s store.Store, in *input) string {
		a := api.Approval{CallID: in.pick("c1", "c2", "c3"), SessionID: in.pick("", "s1", "s3"), TurnID: in.pick("", "t1"), Tool: "promote",
			Input: json.RawMessage(`{"n":1}`), RequestedBy: "p", ExpiresAt: time.Now().Add([]time.Duration{time.Hour, -time.Hour}[in.n(2)])}
		return show(s.CreateApproval(ctx, a, in.events()...))
	}},
	{"Approval", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.Approval(ctx, in.pick("c1", "c2", "c3")))
	}},
	{"ListApprovals", func(ctx context.Context, s store.Store, in *input) string {
		status := api.ApprovalStatus(in.pick("", "pending", "approved", "denied", "expired"))
		return showPages(in.page(), func(p store.Page) ([]api.Approval, string, error) {
			return s.ListApprovals(ctx, store.ListApprovalsParams{Status: status, Page: p})
		})
	}},
	{"ResolveApproval", func(ctx context.Context, s store.Store, in *input) string {
		return show2(s.ResolveApproval(ctx, store.ResolveApprovalParams{CallID: in.pick("c1", "c2", "c3"), Approved: in.n(2) == 0,
			By: "p", Reason: in.pick("", "ok"), Executor: []store.Lease{in.lease(), {}}[in.n(2)], Events: in.events()}))
	}},
	{"ExpireApprovals", func(ctx context.Context, s store.Store, in *input) string {
		return showSorted(s.ExpireApprovals(ctx, time.Now()))
	}},
	{"CountSessions", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.CountSessions(ctx, in.pick("", "p", "q"), time.Now().Add([]time.Duration{-time.Hour, time.Hour}[in.n(2)])))
	}},
	{"CountPending", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.CountPending(ctx, in.pick("", "p", "q")))
	}},
	{"ApprovalsToRun", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.ApprovalsToRun(ctx, in.pick("s1", "s3"), in.pick("", "t1")))
	}},
	{"ClaimApproval", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.ClaimApproval(ctx, in.pick("c1", "c2", "c3"), in.lease()))
	}},
	{"RenewExecutor", func(ctx context.Context, s store.Store, in *input) string {
		return show(0, s.RenewExecutor(ctx, in.pick("c1", "c2", "c3"), in.lease()))
	}},
	{"OrphanedApprovals", func(ctx context.Context, s store.Store, in *input) string {
		return showSorted(s.OrphanedApprovals(ctx, time.Now()))
	}},
	{"FinishApproval", func(ctx context.Context, s store.Store, in *input) string {
		o := api.Outcome{ToolName: "promote", CallID: "c", IsError: in.n(2) == 0, Result: json.RawMessage(in.pick(`{"ok":true}`, `null`, `"x"`))}
		return show2(s.FinishApproval(ctx, in.pick("c1", "c2", "c3"), o, in.events()...))
	}},
	{"KVGet", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.KVGet(ctx, in.pick("a", "b"), in.pick("k", "k/1", "k/2", "kk")))
	}},
	{"KVSet", func(ctx context.Context, s store.Store, in *input) string {
		p := store.KVSetParams{Namespace: in.pick("a", "b"), Key: in.pick("k", "k/1", "k/2", "kk"), Value: []byte(in.pick("v", "", "w"))}
		p.IfVersion = in.version()
		p.TTL = []time.Duration{0, time.Hour, time.Nanosecond}[in.n(3)]
		return show(s.KVSet(ctx, p))
	}},
	{"KVDelete", func(ctx context.Context, s store.Store, in *input) string {
		return show(0, s.KVDelete(ctx, in.pick("a", "b"), in.pick("k", "k/1", "k/2", "kk")))
	}},
	{"KVList", func(ctx context.Context, s store.Store, in *input) string {
		ns, prefix := in.pick("a", "b"), in.pick("", "k", "k/", "z")
		return showPages(in.page(), func(p store.Page) ([]tool.KVEntry, string, error) {
			return s.KVList(ctx, store.ListParams{Namespace: ns, Prefix: prefix, Page: p})
		})
	}},
	{"PutFileMeta", func(ctx context.Context, s store.Store, in *input) string {
		f := tool.FileInfo{Name: in.pick("f", "d/f", "d/g"), Size: int64(in.n(100)), ContentType: "text/plain", SHA256: in.pick("x", "y")}
		return show(0, s.PutFileMeta(ctx, in.pick("a", "b"), f))
	}},
	{"FileMeta", func(ctx context.Context, s store.Store, in *input) string {
		return show(s.FileMeta(ctx, in.pick("a", "b"), in.pick("f", "d/f", "d/g")))
	}},
	{"DeleteFileMeta", func(ctx context.Context, s store.Store, in *input) string {
		return show(0, s.DeleteFileMeta(ctx, in.pick("a", "b"), in.pick("f", "d/f", "d/g")))
	}},
	{"ListFileMeta", func(ctx context.Context, s store.Store, in *input) string {
		ns, prefix := in.pick("a", "b"), in.pick("", "d/", "f")
		return showPages(in.page(), func(p store.Page) ([]tool.FileInfo, string, error) {
			return s.ListFileMeta(ctx, store.ListParams{Namespace: ns, Prefix: prefix, Page: p})
		})
	}},
}

// sentinels are the errors results are compared by.
var sentinels = []error{store.ErrNotFound, store.ErrBusy, store.ErrNotRunning, store.ErrExists,
	store.ErrAlreadyResolved, store.ErrExpired, store.ErrConflict, store.ErrBadCursor}

// show renders a result for comparison: the value as JSON with times
// reduced to whether they are set, and the error as the sentinel it is.
// show2 is show for a call with two results.
func show2[A, B any](a A, b B, err error) string { return show([2]any{a, b}, err) }

func show[T any](v T, err error) string {
	kind := "<nil>"
	if err != nil {
		kind = "error"
		for _, s := range sentinels {
			if errors.Is(err, s) {
				kind = s.Error()
			}
		}
	}
	b, merr := json.Marshal(v)
	if merr != nil {
		return "unencodable: " + merr.Error()
	}
	var tree any
	json.Unmarshal(b, &tree)
	b, _ = json.Marshal(timeless(tree))
	return fmt.Sprintf("%s (%s)", b, kind)
}

func showSorted[T any](vs []T, err error) string {
	shown := make([]string, len(vs))
	for i, v := range vs {
		shown[i] = show(v, nil)
	}
	slices.Sort(shown)
	return fmt.Sprint(shown, show(0, err))
}

// showPages lists every page from the first, showing the items and
// whether each page had a next one.
func showPages[T any](p store.Page, list func(store.Page) ([]T, string, error)) string {
	var out []string
	for range 50 {
		items, next, err := list(p)
		out = append(out, show(items, err), fmt.Sprint(next != ""))
		if next == "" || err != nil {
			break
		}
		p.Cursor = next
	}
	return fmt.Sprint(out)
}

var timeKeys = map[string]bool{"createdAt": true, "updatedAt": true, "startedAt": true, "endedAt": true,
	"requestedAt": true, "expiresAt": true, "decidedAt": true, "time": true}

// timeless replaces times with whether they are set, and an empty value
// with none (SQLite reads an empty BLOB back as nil).
func timeless(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch {
			case timeKeys[k]:
				v[k] = x != nil && x != "0001-01-01T00:00:00Z"
			case k == "value" && x == "":
				v[k] = nil
			default:
				v[k] = timeless(x)
			}
		}
	case []any:
		for i, x := range v {
			v[i] = timeless(x)
		}
	}
	return v
}
