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

// The ground floor — package tool, the protocol (api), the typed client
// and the CLI — links no platform SDK: the Slack and GitHub clients are
// package platform's, which only tools and the host import.
func TestGroundFloorLinksNoPlatformSDK(t *testing.T) {
	const m = "github.com/agentsdk/agentsdk/"
	args := []string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", m + "tool", m + "api", m + "client", m + "cmd/agent-sdk"}
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		for _, dep := range strings.Fields(deps) {
			for _, vendor := range []string{"github.com/slack-go/", "github.com/google/go-github/", "github.com/gorilla/websocket"} {
				if strings.HasPrefix(dep, vendor) {
					t.Errorf("%s depends on %s: platform SDKs belong to package platform, which the ground floor does not import", pkg, dep)
				}
			}
		}
	}
}

// The Slack channel is made of a tool.Handle like any other channel: it
// links neither the host nor the store.
func TestSlackChannelNeedsNoHost(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/agentsdk/agentsdk/slackbot").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/agentsdk/agentsdk/host" || dep == "github.com/agentsdk/agentsdk/store" {
			t.Errorf("slackbot depends on %s: a channel acts through its tool.Handle", dep)
		}
	}
}
