package serve_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Importing the HTTP API links no database driver: the host is given its
// store, and the agent binary (package agentmain) opens it.
func TestNoDatabaseDriver(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/agentsdk/agentsdk/serve").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "modernc.org/sqlite") || strings.Contains(dep, "/store/sqlite") || strings.HasPrefix(dep, "github.com/jackc/") {
			t.Errorf("serve depends on %s", dep)
		}
	}
}
