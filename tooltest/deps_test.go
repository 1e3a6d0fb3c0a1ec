package tooltest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A tool's test links neither the host nor a store: the kit's services
// are its own, in memory.
func TestKitLinksNoHostNorStore(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/agentsdk/agentsdk/tooltest").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %s", len(deps), out)
	}
	for _, dep := range deps {
		if dep == "github.com/agentsdk/agentsdk/host" || strings.HasPrefix(dep, "github.com/agentsdk/agentsdk/store") ||
			strings.HasPrefix(dep, "modernc.org/sqlite") || strings.HasPrefix(dep, "github.com/jackc/") || strings.HasPrefix(dep, "github.com/riverqueue/") {
			t.Errorf("tooltest depends on %s", dep)
		}
	}
}
