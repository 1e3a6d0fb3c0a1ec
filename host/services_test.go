package host_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/internal/fakemodel"
	"github.com/agentsdk/agentsdk/model"
	"github.com/agentsdk/agentsdk/model/anthropic"
	"github.com/agentsdk/agentsdk/store/sqlite"
	"github.com/agentsdk/agentsdk/tool"
)

// zeros is an endless reader of zero bytes that counts what it gave.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += int64(len(p))
	return len(p), nil
}

func TestFilesService(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(state, "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var files tool.Files
	grab, _ := tool.New("grab", tool.Config{Description: "Grab the services."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		files = call.Host.Files
		return nil, nil
	})
	set, _ := tool.NewSet(grab)
	h, _ := host.New(set, &host.Options{StateRoot: state, Store: st, MaxFileBytes: 10 << 20})
	if _, err := h.CallTool(ctx, "grab", nil, nil); err != nil {
		t.Fatal(err)
	}
	// A 10 MiB blob streams in and out; its hash is recorded.
	blob := bytes.Repeat([]byte("0123456789abcdef"), 10<<20/16)
	want := sha256.Sum256(blob)
	info, err := files.Put(ctx, "reports/big.bin", bytes.NewReader(blob), &tool.FilePutOptions{ContentType: "application/x-test"})
	if err != nil || info.Size != int64(len(blob)) || info.SHA256 != hex.EncodeToString(want[:]) {
		t.Fatalf("Put: %+v %v", info, err)
	}
	rc, got, err := files.Get(ctx, "reports/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.New()
	io.Copy(sum, rc)
	rc.Close()
	if hex.EncodeToString(sum.Sum(nil)) != info.SHA256 || got.ContentType != "application/x-test" {
		t.Errorf("Get returned other content or type: %+v", got)
	}
	// Over the limit: refused, nothing stored, the reader not drained past it.
	z := &zeros{}
	if _, err := files.Put(ctx, "too/big", z, nil); !errors.Is(err, tool.ErrFileTooLarge) {
		t.Errorf("too large: %v", err)
	}
	if z.n > 11<<20 {
		t.Errorf("read %d bytes of an over-limit file", z.n)
	}
	if _, err := files.Stat(ctx, "too/big"); !errors.Is(err, tool.ErrFileNotFound) {
		t.Errorf("a refused file was stored: %v", err)
	}
	// Hostile names cannot leave the namespace.
	for _, bad := range []string{"", "../escape", "a/../../b", "/etc/passwd", "a\\b", "a\x00b", "a//b", "./a", ".tmp-x"} {
		if _, err := files.Put(ctx, bad, strings.NewReader("x"), nil); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	files.Put(ctx, "reports/small.txt", strings.NewReader("hi"), nil)
	list, _, _ := files.List(ctx, "reports/", nil)
	if len(list) != 2 || list[0].Name != "reports/big.bin" || list[1].ContentType != "application/octet-stream" {
		t.Errorf("List: %+v", list)
	}
	if err := files.Delete(ctx, "reports/small.txt"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := files.Get(ctx, "reports/small.txt"); !errors.Is(err, tool.ErrFileNotFound) {
		t.Errorf("deleted file: %v", err)
	}
	// Without a store given, Files keeps its metadata in memory.
	bare, _ := host.New(set, &host.Options{StateRoot: t.TempDir()})
	bare.CallTool(ctx, "grab", nil, nil) // files is now the bare host's
	if _, err := files.Put(ctx, "x", strings.NewReader("x"), nil); err != nil {
		t.Errorf("in-memory Files: %v", err)
	}
	if info, err := files.Stat(ctx, "x"); err != nil || info.Size != 1 {
		t.Errorf("in-memory Files: %+v, %v", info, err)
	}
}

type handoffInput struct {
	PR string `json:"pr"`
}

// A tool opens a session for another piece of work (the reference page's
// chat tool handing a pull request to its own session), leaves an artifact
// in its own session, and reads the new session back.
func TestSendArtifactsGetSession(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	fake := fakemodel.New(
		fakemodel.Reply{Calls: []fakemodel.Call{{ID: "h1", Name: "handoff", Input: `{"pr":"acme/checkout#42"}`}}},
		fakemodel.Reply{Text: []string{"Reviewing acme/checkout#42."}}, // the new session's turn
		fakemodel.Reply{Text: []string{"Handed off."}},
	)
	defer fake.Close()
	st, _ := sqlite.Open(ctx, filepath.Join(state, "agent.db"))
	defer st.Close()
	opened := make(chan string, 1)
	handoff, _ := tool.New("handoff", tool.Config{Description: "Hand a PR to its own session."}, func(ctx context.Context, call *tool.Call, in handoffInput) (any, error) {
		id, _, err := call.Send(ctx, "pr", "Review "+in.PR, nil)
		if err != nil {
			return nil, err
		}
		opened <- id
		state, err := call.GetSession(ctx, "pr", id)
		if err != nil {
			return nil, err
		}
		if _, err := call.GetSession(ctx, "slack", id); err == nil {
			return nil, errors.New("a session was found on the wrong channel")
		}
		if _, err := call.Artifacts.Put(ctx, "handoff.md", strings.NewReader("# "+in.PR), &tool.FilePutOptions{ContentType: "text/markdown"}); err != nil {
			return nil, err
		}
		return map[string]string{"session": id, "principal": state.Principal, "channel": state.Channel}, nil
	})
	set, _ := tool.NewSet(handoff)
	p, _ := anthropic.New(model.Config{Name: "fake", APIKey: "k", BaseURL: fake.AnthropicURL(), MaxTokens: 100})
	h, _ := host.New(set, &host.Options{StateRoot: state, Store: st, Model: p})
	defer h.Close()
	b := &sessionBundle{host: h, store: st, fake: fake, state: state}
	sess, turnID, err := h.Sessions().Create(ctx, host.SessionOptions{Channel: "chat", Principal: "alice", Message: "take #42"})
	if err != nil {
		t.Fatal(err)
	}
	var newID string
	select {
	case newID = <-opened:
	case <-time.After(20 * time.Second):
		t.Fatal("no session opened")
	}
	evs := b.waitTurn(t, sess.ID, turnID)
	r := find(evs, api.KindActionResult)
	if len(r) != 1 || !strings.Contains(string(r[0].Data), `"principal":"alice"`) || !strings.Contains(string(r[0].Data), `"channel":"pr"`) {
		t.Fatalf("handoff result: %s", kinds(evs))
	}
	if a := find(evs, api.KindArtifactCreated); len(a) != 1 || !strings.Contains(string(a[0].Data), `"name":"handoff.md"`) || !strings.Contains(string(a[0].Data), `"contentType":"text/markdown"`) {
		t.Errorf("artifact.created: %v", a)
	}
	list, _ := h.Sessions().Artifacts(ctx, sess.ID)
	if len(list) != 1 || list[0].Name != "handoff.md" || list[0].Size != int64(len("# acme/checkout#42")) {
		t.Errorf("artifacts: %+v", list)
	}
	rc, info, err := h.Sessions().Artifact(ctx, sess.ID, "handoff.md")
	if err != nil {
		t.Fatal(err)
	}
	content, _ := io.ReadAll(rc)
	rc.Close()
	if string(content) != "# acme/checkout#42" || info.ContentType != "text/markdown" {
		t.Errorf("artifact content %q, %+v", content, info)
	}
	if other, _ := h.Sessions().Artifacts(ctx, newID); len(other) != 0 {
		t.Errorf("artifacts leak across sessions: %+v", other)
	}
	// The new session ran its own turn like any other.
	newSess, _ := h.Sessions().Get(ctx, newID)
	if newSess.Channel != "pr" || newSess.Principal != "alice" {
		t.Errorf("new session: %+v", newSess)
	}
	evs2, _ := h.Sessions().Events(ctx, newID, 0, 0)
	for _, e := range evs2 {
		if e.Kind == api.KindTurnStarted {
			b.waitTurn(t, newID, e.TurnID)
		}
	}
	evs2, _ = h.Sessions().Events(ctx, newID, 0, 0)
	if !strings.Contains(kinds(evs2), "message model.usage turn.completed") {
		t.Errorf("the handed-off session's turn: %s", kinds(evs2))
	}
	// Artifacts outside a session answer that they need one.
	var artErr error
	outside, _ := tool.New("outside", tool.Config{Description: "No session."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		_, artErr = call.Artifacts.List(ctx)
		return nil, nil
	})
	set2, _ := tool.NewSet(outside)
	h2, _ := host.New(set2, &host.Options{StateRoot: t.TempDir()})
	h2.CallTool(ctx, "outside", nil, nil)
	if !errors.Is(artErr, tool.ErrNoSession) {
		t.Errorf("artifacts outside a session: %v", artErr)
	}
}

func TestUnconfiguredMCP(t *testing.T) {
	var err error
	var names []string
	probe, _ := tool.New("probe", tool.Config{Description: "Probe MCP."}, func(ctx context.Context, call *tool.Call, in struct{}) (any, error) {
		names = call.Host.MCP.Names()
		_, err = call.Host.MCP.CallTool(ctx, "github", "list_issues", nil)
		return nil, nil
	})
	set, _ := tool.NewSet(probe)
	h, _ := host.New(set, &host.Options{StateRoot: t.TempDir()})
	h.CallTool(context.Background(), "probe", nil, nil)
	if len(names) != 0 || !errors.Is(err, tool.ErrNotConfigured) || !strings.Contains(err.Error(), "no MCP servers in agent/agent.yaml") {
		t.Errorf("unconfigured MCP: %v %v", names, err)
	}
}
