package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "agent.db"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// Data survives closing and opening again, and migrations run once.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agent.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s.CreateSession(ctx, store.Session{ID: "s", Channel: "http", Mode: "local"})
	s.Append(ctx, "s", store.Event{Kind: "message", Data: []byte(`{"text":"hi"}`)})
	s.Close()
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := s.Events(ctx, "s", 0, 0)
	if err != nil || len(evs) != 1 || string(evs[0].Data) != `{"text":"hi"}` {
		t.Errorf("after reopening: %+v, %v", evs, err)
	}
}
