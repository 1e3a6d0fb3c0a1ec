package sampletools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// NotifyInput is notify's input.
type NotifyInput struct {
	PR string `json:"pr"`
}

// notify uses every service a tool reaches: KV, Files, artifacts,
// reminders, the workspace, Otel, Send and GetSession.
var _ = tool.Define(tool.Config{Description: "Tell the review channel about a pull request."},
	func(ctx context.Context, call *tool.Call, in NotifyInput) (map[string]any, error) {
		seen, err := call.Host.KV.Get(ctx, "seen/"+in.PR)
		count := int64(0)
		if err == nil {
			count = seen.Version
		}
		if _, err := call.Host.KV.Set(ctx, "seen/"+in.PR, []byte(in.PR), nil); err != nil {
			return nil, err
		}
		if _, err := call.Host.Files.Put(ctx, "notes/"+in.PR+".txt", strings.NewReader("PR "+in.PR), &tool.FilePutOptions{ContentType: "text/plain"}); err != nil {
			return nil, err
		}
		dir, err := call.WorkspaceDir()
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "scratch.txt"), []byte(in.PR), 0o600); err != nil {
			return nil, err
		}
		sessionID, _, err := call.Send(ctx, "review", "Review PR "+in.PR, &tool.SendOptions{Key: "pr-" + in.PR})
		if err != nil {
			return nil, err
		}
		state, err := call.GetSession(ctx, "review", sessionID)
		if err != nil {
			return nil, err
		}
		call.Host.Otel.Count(ctx, "notify.sent", 1, nil)
		out := map[string]any{"session": state.ID, "before": count, "workspace": dir}
		_, err = call.Artifacts.Put(ctx, "summary.md", strings.NewReader("# PR "+in.PR), nil)
		out["artifact"] = errString(err)
		_, err = call.Host.Reminders.Set(ctx, "follow-up", time.Now().Add(time.Hour), "Check on PR "+in.PR)
		out["reminder"] = errString(err)
		out["tag"] = errString(call.Host.Otel.TagSession(ctx, "pr", in.PR))
		return out, nil
	})

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return fmt.Sprint(err)
}
