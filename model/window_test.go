package model_test

import (
	"testing"

	"github.com/agentsdk/agentsdk/model"
)

// Every priced model has a window, and snapshots find their model's.
func TestWindows(t *testing.T) {
	ws := model.DefaultWindows()
	for _, name := range model.DefaultPrices().Names() {
		if w, ok := ws.Lookup(name); !ok || w < 100_000 {
			t.Errorf("%s: window %d, %v", name, w, ok)
		}
	}
	for name, want := range map[string]int64{"claude-sonnet-4-5-20250929": 200_000, "gpt-4o-2024-08-06": 128_000, "gpt-4o-mini": 128_000, "gemini-2.5-flash-latest": 1_048_576} {
		if w, _ := ws.Lookup(name); w != want {
			t.Errorf("%s: %d, want %d", name, w, want)
		}
	}
	if _, ok := ws.Lookup("claude-sonnet-4-6"); ok {
		t.Error("claude-sonnet-4-6 found another model's window")
	}
}
