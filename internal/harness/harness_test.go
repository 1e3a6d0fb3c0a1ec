package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/internal/harness"
	"github.com/agentsdk/agentsdk/internal/harnesstest"
)

type recorder struct {
	mu      sync.Mutex
	updates []acp.SessionUpdate
	asked   []acp.RequestPermissionRequest
}

func (r *recorder) handler(answer func(acp.RequestPermissionRequest) acp.RequestPermissionResponse) harness.Handler {
	return harness.Handler{
		Update: func(ctx context.Context, u acp.SessionUpdate) {
			r.mu.Lock()
			r.updates = append(r.updates, u)
			r.mu.Unlock()
		},
		Permission: func(ctx context.Context, q acp.RequestPermissionRequest) acp.RequestPermissionResponse {
			r.mu.Lock()
			r.asked = append(r.asked, q)
			r.mu.Unlock()
			return answer(q)
		},
	}
}

func (r *recorder) text() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, u := range r.updates {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			b.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

// Claude Code answers a prompt, asks before it runs a shell command, runs
// it in the workspace once allowed, and is gone with its children after
// Close.
func TestClaudeCode(t *testing.T) {
	fake := fakemodel.New()
	t.Cleanup(fake.Close)
	spec := harnesstest.Claude(t, fake)
	ws, home := t.TempDir(), t.TempDir()
	var rec recorder
	ctx := context.Background()
	start := time.Now()
	p, err := harness.Start(ctx, harness.Options{Spec: spec, Workspace: ws, Home: home, Handler: rec.handler(harness.AllowOnce)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	t.Logf("initialize %v (%s)", time.Since(start), p.Info())
	start = time.Now()
	id, err := p.NewSession(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("session/new %v", time.Since(start))
	fake.Push(fakemodel.Reply{Text: []string{"hello ", "from the fake"}})
	r, err := p.Prompt(ctx, "say hello")
	if err != nil {
		t.Fatal(err, p.Stderr())
	}
	if r.StopReason != acp.StopReasonEndTurn || rec.text() != "hello from the fake" {
		t.Fatalf("stop %s, text %q", r.StopReason, rec.text())
	}
	fake.Push(fakemodel.Reply{Calls: []fakemodel.Call{{ID: "toolu_1", Name: "Bash", Input: `{"command":"pwd > where.txt","description":"write cwd"}`}}},
		fakemodel.Reply{Text: []string{"wrote it"}})
	if _, err := p.Prompt(ctx, "write where you are"); err != nil {
		t.Fatal(err, p.Stderr())
	}
	b, err := os.ReadFile(filepath.Join(ws, "where.txt"))
	if err != nil || strings.TrimSpace(string(b)) != ws {
		t.Fatalf("where.txt: %q, %v; asked %d", b, err, len(rec.asked))
	}
	if len(rec.asked) != 1 || rec.asked[0].ToolCall.Kind == nil || *rec.asked[0].ToolCall.Kind != acp.ToolKindExecute {
		t.Errorf("asked %+v", rec.asked)
	}
	p.Close()
	// A new process continues the session.
	p2, err := harness.Start(ctx, harness.Options{Spec: spec, Workspace: ws, Home: home, Handler: rec.handler(harness.Reject)})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	if !p2.CanLoad() {
		t.Fatal("claude cannot load sessions")
	}
	start = time.Now()
	if err := p2.LoadSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	t.Logf("session/load %v", time.Since(start))
	fake.Push(fakemodel.Reply{Text: []string{"again"}})
	before := len(fake.Requests())
	if _, err := p2.Prompt(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	// The turn's request carries the history; Claude Code's side
	// requests (which may come last) need not.
	reqs := fake.Requests()[before:]
	if !slices.ContainsFunc(reqs, func(r json.RawMessage) bool {
		return strings.Contains(string(r), "again") && strings.Contains(string(r), "write where you are")
	}) {
		t.Errorf("no request of the continued session carries the history: %d requests, the last %.300s", len(reqs), reqs[len(reqs)-1])
	}
}

// Each harness answers a text prompt from its fake provider.
func TestTextTurn(t *testing.T) {
	for _, c := range []struct {
		name string
		spec func(testing.TB, *fakemodel.Server) harness.Spec
	}{{"codex", harnesstest.Codex}, {"gemini", harnesstest.Gemini}} {
		t.Run(c.name, func(t *testing.T) {
			fake := fakemodel.New()
			t.Cleanup(fake.Close)
			spec := c.spec(t, fake)
			var rec recorder
			ctx := context.Background()
			start := time.Now()
			p, err := harness.Start(ctx, harness.Options{Spec: spec, Workspace: t.TempDir(), Home: t.TempDir(), Handler: rec.handler(harness.AllowOnce)})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			t.Logf("initialize %v (%s)", time.Since(start), p.Info())
			start = time.Now()
			if _, err := p.NewSession(ctx); err != nil {
				t.Fatal(err, p.Stderr())
			}
			t.Logf("session/new %v", time.Since(start))
			fake.Push(fakemodel.Reply{Text: []string{"hello ", "from the fake"}})
			r, err := p.Prompt(ctx, "say hello")
			if err != nil {
				t.Fatal(err, p.Stderr())
			}
			if r.StopReason != acp.StopReasonEndTurn || !strings.HasSuffix(rec.text(), "hello from the fake") {
				t.Fatalf("stop %s, text %q; stderr %s", r.StopReason, rec.text(), p.Stderr())
			}
		})
	}
}
