package agentmain

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// agent.yaml's modelRetries and maxResumes reach the host's options:
// absent, the host's default (0); 0, none (negative); n, n.
func TestModelRetriesOption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.yaml")
	tests := []struct {
		yaml              string
		want, wantResumes int
	}{
		{"", 0, 0},
		{"modelRetries: 0\nmaxResumes: 0\n", -1, -1},
		{"modelRetries: 7\nmaxResumes: 3\n", 7, 3},
	}
	for _, tt := range tests {
		if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		opts, _, err := hostOptions(path, "", slog.New(slog.DiscardHandler), Stdio{Out: io.Discard, Err: io.Discard}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if opts.ModelRetries != tt.want || opts.MaxResumes != tt.wantResumes {
			t.Errorf("%q: ModelRetries %d, MaxResumes %d; want %d, %d", tt.yaml, opts.ModelRetries, opts.MaxResumes, tt.want, tt.wantResumes)
		}
	}
}
