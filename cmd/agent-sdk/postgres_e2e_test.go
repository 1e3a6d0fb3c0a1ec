package main_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentsdk/agentsdk/internal/pgtest"
)

// serve --store postgres://… builds the PostgreSQL driver into the agent and
// keeps sessions there: a session made by one host is read by the next,
// from PostgreSQL, not from the SQLite file in the state directory.
func TestServeOnPostgres(t *testing.T) {
	url := pgtest.Schema(t)
	s := startServer(t, shared, "--store", url)
	status, v, _ := s.request(t, "POST", "/session", s.token, `{}`)
	id, _ := v["sessionId"].(string)
	if status != 201 || id == "" {
		t.Fatalf("create session: %d %v\n%s", status, v, s.logs())
	}
	if status, v, _ := s.request(t, "POST", "/tools/hello", s.token, `{"input":{"name":"PG"},"sessionId":"`+id+`"}`); status != 200 || v["result"] != "Hello, PG!" {
		t.Fatalf("call in the session: %d %v", status, v)
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.cmd.Wait()

	// The store is named by $AGENT_SDK_STORE this time.
	s2 := startServerEnv(t, shared, []string{"AGENT_SDK_STORE=" + url})
	status, v, _ = s2.request(t, "GET", "/session/"+id+"/events?follow=false", s2.token, "")
	if evs, _ := v["events"].([]any); status != 200 || len(evs) != 4 {
		t.Fatalf("events after a restart: %d %v", status, v)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events WHERE session_id = $1`, id).Scan(&n); err != nil || n != 4 {
		t.Errorf("events in PostgreSQL: %d, %v", n, err)
	}
}
