package main_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

var serviceTool = `package tools

import (
	"context"
	"strings"

	"github.com/agentsdk/agentsdk/tool"
)

type StashInput struct {
	Op   string ` + "`" + `json:"op" jsonschema:"enum=put,enum=get"` + "`" + `
	Text string ` + "`" + `json:"text,omitempty"` + "`" + `
}

var _ = tool.Define(tool.Config{Description: "Keep text in KV, Files and the session's artifacts."},
	func(ctx context.Context, call *tool.Call, in StashInput) (any, error) {
		if in.Op == "put" {
			if _, err := call.Host.KV.Set(ctx, "note", []byte(in.Text), nil); err != nil {
				return nil, err
			}
			if _, err := call.Host.Files.Put(ctx, "notes/note.txt", strings.NewReader(in.Text), &tool.FilePutOptions{ContentType: "text/plain"}); err != nil {
				return nil, err
			}
			_, err := call.Artifacts.Put(ctx, "note.html", strings.NewReader("<p>"+in.Text+"</p>"), &tool.FilePutOptions{ContentType: "text/html"})
			return "stored", err
		}
		e, err := call.Host.KV.Get(ctx, "note")
		if err != nil {
			return nil, err
		}
		rc, _, err := call.Host.Files.Get(ctx, "notes/note.txt")
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		buf := new(strings.Builder)
		if _, err := io.Copy(buf, rc); err != nil {
			return nil, err
		}
		return string(e.Value) + "|" + buf.String(), nil
	})
`

// KV, files and artifacts written through a real tool on the real host are
// all still there after a SIGKILL and a restart.
func TestServicesSurviveRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "services")
	if err := newAgent(dir); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "agent", "tools", "stash.go"), []byte(strings.Replace(serviceTool, `"strings"`, "\"io\"\n\t\"strings\"", 1)), 0o644)
	s := startServer(t, dir)
	_, v, _ := s.request(t, "POST", "/session", s.token, `{}`)
	sess := v["sessionId"].(string)
	status, v, _ := s.request(t, "POST", "/tools/stash", s.token, `{"input":{"op":"put","text":"kept"},"sessionId":"`+sess+`"}`)
	if status != 200 || v["result"] != "stored" {
		t.Fatalf("put: %d %v", status, v)
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()

	s2 := startServer(t, dir)
	status, v, _ = s2.request(t, "POST", "/tools/stash", s2.token, `{"input":{"op":"get"}}`)
	if status != 200 || v["result"] != "kept|kept" {
		t.Errorf("after restart: %d %v", status, v)
	}
	_, v, _ = s2.request(t, "GET", "/session/"+sess+"/artifacts", s2.token, "")
	if list, _ := v["artifacts"].([]any); len(list) != 1 || list[0].(map[string]any)["name"] != "note.html" {
		t.Errorf("artifacts: %v", v)
	}
	req, _ := http.NewRequest("GET", s2.base+"/session/"+sess+"/artifacts/note.html", nil)
	req.Header.Set("Authorization", "Bearer "+s2.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html" || string(body) != "<p>kept</p>" {
		t.Errorf("artifact: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if status, v, _ := s2.request(t, "GET", "/session/"+sess+"/artifacts/missing.txt", s2.token, ""); status != 404 || v["error"].(map[string]any)["code"] != "artifact_not_found" {
		t.Errorf("missing artifact: %d %v", status, v)
	}
	if kinds := storedKinds(t, s2, sess); !strings.Contains(strings.Join(kinds, " "), "artifact.created") {
		t.Errorf("no artifact.created on the stream: %v", kinds)
	}
}
