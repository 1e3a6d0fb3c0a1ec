package agentmain

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// agent.yaml's auth.slack becomes the host's ChannelUsers, keyed as a
// Slack decision is recorded.
func TestChannelUsersFromAgentYAML(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	yaml := "auth:\n  roles:\n    deployer: [read, approve]\n  slack:\n    U0ALICE01: {principal: \"key:k1\", roles: [deployer]}\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, _, err := hostOptionsFor(path, "", slog.New(slog.DiscardHandler), Stdio{Out: io.Discard, Err: io.Discard}, Options{}, hostUse{})
	if err != nil {
		t.Fatal(err)
	}
	u, ok := opts.ChannelUsers["slack:U0ALICE01"]
	if len(opts.ChannelUsers) != 1 || !ok || u.Principal != "key:k1" || !slices.Equal(u.Roles, []string{"deployer"}) {
		t.Errorf("ChannelUsers = %+v", opts.ChannelUsers)
	}
}
