package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
)

// agent-sdk cancel on the real binary, against two real hosts on one
// PostgreSQL schema: a turn parked on an approval by host A is cancelled
// through host B. It ends with turn.failed (cancelled), its call closed as
// cancelled; approving it afterwards is refused (exit 2) and runs nothing;
// the session takes the next message.
func TestCancelParkedTurnCLI(t *testing.T) {
	t.Parallel()
	c := newCluster(t)
	fakeA := c.fake(t, "Fine, no note.", fakemodel.Reply{Calls: []fakemodel.Call{{ID: "m1", Name: "record", Input: `{"note":"turn"}`}}})
	fakeB := c.fake(t, "host B's model answered")
	a := c.host(t, "A", fakeA)
	b := c.host(t, "B", fakeB)
	urlA, urlB := strings.TrimSuffix(a.base, "/v1"), strings.TrimSuffix(b.base, "/v1")

	id, turn := newSession(t, a.server, "Record a note")
	stream := follow(t, b.server, id, 0)
	evs := stream.until(t, 30*time.Second, "action.approval_requested", kindIs("action.approval_requested"))
	callID, _ := evs[len(evs)-1].field("callId").(string)
	// The store is the judge of parked: the turn holds its session with no
	// lease.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.store)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	eventually(t, 30*time.Second, "the turn parks on A", func() bool {
		var parked bool
		err := conn.QueryRow(ctx, `SELECT turn_id = $2 AND lease_expires IS NULL FROM sessions WHERE id = $1`, id, turn).Scan(&parked)
		return err == nil && parked
	})
	if r := run(t, c.dir, "", "send", id, "more", "--url", urlB, "--token", c.token); r.code != 2 || !strings.Contains(r.stderr, "session_busy") {
		t.Fatalf("a message to the parked session: %+v", r)
	}

	r := run(t, c.dir, "", "cancel", id, "--url", urlB, "--token", c.token)
	if r.code != 0 || !strings.Contains(r.stdout, "cancelled the running turn of session "+id) {
		t.Fatalf("agent-sdk cancel: %+v", r)
	}
	evs = append(evs, stream.until(t, 30*time.Second, "turn.failed", kindIs("turn.failed"))...)
	if !inOrder(evs, "action.approval_requested action.approval_resolved action.result turn.failed") {
		t.Fatalf("after the cancel:\n%s", eventLines(evs))
	}
	end := evs[len(evs)-1]
	if end.TurnID != turn || end.field("code") != "cancelled" || end.field("reason") != "cancelled" {
		t.Errorf("turn.failed: %v", end)
	}
	if d := ofCall(evs, "action.approval_resolved", callID); len(d) != 1 || d[0].field("status") != "cancelled" {
		t.Errorf("the decision on the stream: %v", d)
	}
	if res := ofCall(evs, "action.result", callID); len(res) != 1 || res[0].field("result") != "cancelled before it finished" {
		t.Errorf("the call's result: %v", res)
	}

	// Approving afterwards, on the host that parked it, is refused.
	if r := run(t, c.dir, "", "approve", callID, "--url", urlA, "--token", c.token); r.code != 2 ||
		!strings.Contains(r.stderr, "already_resolved") || !strings.Contains(r.stderr, "cancelled with its turn") {
		t.Errorf("approve after the cancel: %+v", r)
	}
	if r := run(t, c.dir, "", "cancel", id, "--url", urlA, "--token", c.token); r.code != 2 || !strings.Contains(r.stderr, "no turn is running") {
		t.Errorf("a second cancel: %+v", r)
	}
	if r := run(t, c.dir, "", "approvals", "--status", "cancelled", "--url", urlA, "--token", c.token); r.code != 0 || !strings.Contains(r.stdout, callID) {
		t.Errorf("approvals --status cancelled: %+v", r)
	}
	if r := run(t, c.dir, "", "events", id, "--no-follow", "--url", urlB, "--token", c.token); r.code != 0 ||
		!strings.Contains(r.stdout, "record cancelled with its turn") || !strings.Contains(r.stdout, "turn failed") {
		t.Errorf("events: %+v", r)
	}

	// The session is free: the next message's turn runs and completes.
	if r := run(t, c.dir, "", "send", id, "Never mind", "--url", urlA, "--token", c.token, "--follow"); r.code != 0 || !strings.Contains(r.stdout, "Fine, no note.") {
		t.Errorf("send after the cancel: %+v", r)
	}
	if runs := c.runLines(); len(runs) != 0 {
		t.Errorf("the cancelled call ran: %v", runs)
	}
}
