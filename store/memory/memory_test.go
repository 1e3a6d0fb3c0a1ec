package memory_test

import (
	"testing"

	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/memory"
	"github.com/agentsdk/agentsdk/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return memory.New() })
}
