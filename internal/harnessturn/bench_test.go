package harnessturn

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/store/sqlite"
)

// openSQLite opens a SQLite store in a temporary directory.
func openSQLite(tb testing.TB) store.Store {
	st, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "agent.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// storeSink appends to an in-memory store, as the host's sink appends to
// its store (without the fence).
type storeSink struct {
	st store.Store
	id string
}

func (s *storeSink) Emit(ctx context.Context, p ...api.Payload) error {
	evs := make([]api.Event, len(p))
	for i, x := range p {
		evs[i] = api.NewEvent(x)
		evs[i].TurnID = "turn_1"
	}
	_, err := s.st.Append(ctx, s.id, evs...)
	return err
}

func (s *storeSink) Ask(context.Context, Request) (Decision, error) {
	return Decision{Verdict: Rejected}, nil
}

// Our overhead per session/update: mapping it onto the stream and writing
// what it becomes (text deltas batched per 50 ms, a tool call's events
// one write each; in memory and in SQLite), against decoding the update from the wire — what the
// ACP SDK does for every update before we see it — in the same run.
//
//	go test ./internal/harnessturn -run '^$' -bench Update -benchtime 2s
func BenchmarkUpdate(b *testing.B) {
	ctx := context.Background()
	text := []byte(`{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Reading the file to see what the tests expect. "}}}`)
	call := []byte(`{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"toolu_%d","title":"go test ./...","kind":"execute","status":"pending","rawInput":{"command":"go test ./...","description":"run the tests"}}}`)
	done := []byte(`{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"toolu_%d","status":"completed","rawOutput":{"stdout":"ok  \texample.com/pkg\t0.012s\n","exit_code":0}}}`)
	decode := func(b *testing.B, raw []byte) acp.SessionUpdate {
		var n acp.SessionNotification
		if err := json.Unmarshal(raw, &n); err != nil {
			b.Fatal(err)
		}
		return n.Update
	}
	newStream := func(b *testing.B, st store.Store) *stream {
		sess, err := st.CreateSession(ctx, api.Session{ID: "sess_bench", Channel: "http"})
		if err != nil {
			b.Fatal(err)
		}
		return &stream{sink: &storeSink{st: st, id: sess.ID}, ctx: ctx, calls: map[acp.ToolCallId]*harnessCall{}, live: true}
	}
	b.Run("text/decode", func(b *testing.B) {
		for b.Loop() {
			decode(b, text)
		}
	})
	b.Run("text/decode+ours", func(b *testing.B) {
		s := newStream(b, memory.New())
		for b.Loop() {
			s.update(ctx, decode(b, text))
		}
		s.finish(nil)
	})
	b.Run("text/decode+ours+sqlite", func(b *testing.B) {
		s := newStream(b, openSQLite(b))
		for b.Loop() {
			s.update(ctx, decode(b, text))
		}
		s.finish(nil)
	})
	b.Run("call/decode", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			decode(b, fmt.Appendf(nil, string(call), i))
			decode(b, fmt.Appendf(nil, string(done), i))
		}
	})
	for _, c := range []struct {
		name string
		open func(testing.TB) store.Store
	}{{"call/decode+ours", func(testing.TB) store.Store { return memory.New() }}, {"call/decode+ours+sqlite", openSQLite}} {
		b.Run(c.name, func(b *testing.B) {
			s := newStream(b, c.open(b))
			i := 0
			for b.Loop() {
				i++
				s.update(ctx, decode(b, fmt.Appendf(nil, string(call), i)))
				s.update(ctx, decode(b, fmt.Appendf(nil, string(done), i)))
			}
			s.finish(nil)
		})
	}
}
