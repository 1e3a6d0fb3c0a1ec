package host_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/tool"
)

// writeCounter counts the store's writes of a turn's events.
type writeCounter struct {
	store.Store
	writes atomic.Int64
}

func (c *writeCounter) AppendTurn(ctx context.Context, f store.Fence, events ...api.Event) ([]api.Event, error) {
	c.writes.Add(1)
	return c.Store.AppendTurn(ctx, f, events...)
}

// TestTextDeltasBatched: a long answer streamed token by token is written
// a batch at a time (one write per 50 ms at most, and one at its end), and
// its stream still carries every delta, in order, making up the answer.
func TestTextDeltasBatched(t *testing.T) {
	const tokens = 2000
	text := make([]string, tokens)
	for i := range text {
		text[i] = fmt.Sprintf("t%d ", i)
	}
	st := &writeCounter{Store: memory.New()}
	fake := fakemodel.New(fakemodel.Reply{Text: text, Every: 500 * time.Microsecond})
	t.Cleanup(fake.Close)
	p, err := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet()
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), Store: st, Model: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sess, _, err := h.Sessions().Create(ctx, host.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := st.writes.Load()
	start := time.Now()
	turnID, err := h.Sessions().Send(ctx, sess.ID, "go")
	if err != nil {
		t.Fatal(err)
	}
	var streamed strings.Builder
	var deltas int
	var answer string
	for e, err := range h.Sessions().Follow(ctx, sess.ID, 0) {
		if err != nil {
			t.Fatal(err)
		}
		switch e.Kind {
		case api.KindMessageDelta:
			d, _ := api.Decode[api.MessageDelta](e)
			streamed.WriteString(d.Text)
			deltas++
		case api.KindMessage:
			if m, _ := api.Decode[api.Message](e); m.Role == api.RoleAssistant {
				answer = m.Text
			}
		}
		if e.TurnID == turnID && (e.Kind == api.KindTurnCompleted || e.Kind == api.KindTurnFailed) {
			break
		}
	}
	elapsed := time.Since(start)
	writes := st.writes.Load() - before
	want := strings.Join(text, "")
	if answer != want || streamed.String() != want {
		t.Fatalf("the answer is %d bytes and its deltas %d, want %d each", len(answer), streamed.Len(), len(want))
	}
	if deltas != tokens {
		t.Errorf("%d deltas on the stream, want %d", deltas, tokens)
	}
	// The turn's other writes: the answer, the end. At most one batch per
	// 50 ms of streaming, and the last.
	if bound := int64(elapsed/(50*time.Millisecond)) + 4; writes > bound {
		t.Errorf("%d writes for a %d-token answer streamed in %v; want at most %d", writes, tokens, elapsed.Round(time.Millisecond), bound)
	}
	t.Logf("%d-token answer streamed in %v: %d store writes of the turn", tokens, elapsed.Round(time.Millisecond), writes)
}
