package host_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// fixedEvals is a call.Host.Evals that answers one batch id.
type fixedEvals struct{ tool.NoEvals }

func (fixedEvals) Run(context.Context, json.RawMessage) (string, error) { return "eval_fixed", nil }

// A subsystem's services reach call.Host, its sweep runs with the host's,
// and its job kinds are its own: a kind taken, a nameless subsystem and a
// Register after Start are refused. Go runs nothing once the host closes.
func TestSubsystem(t *testing.T) {
	t.Parallel()
	runEval, err := tool.New("run_eval", tool.Config{Description: "Runs an eval."}, func(ctx context.Context, call *tool.Call, in struct{}) (string, error) {
		return call.Host.Evals.Run(ctx, json.RawMessage(`{}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(runEval)
	if err != nil {
		t.Fatal(err)
	}
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), LeaseTTL: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	swept := make(chan struct{}, 1)
	job := func(context.Context, store.Tx, store.Job) error { return nil }
	err = h.Register(host.Subsystem{
		Name: "test",
		Jobs: map[string]store.JobHandler{"test.job": job},
		Sweep: func(ctx context.Context) {
			select {
			case swept <- struct{}{}:
			default:
			}
		},
		Services: func(s *tool.Services) { s.Evals = fixedEvals{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		sub  host.Subsystem
		want string
	}{
		{"no name", host.Subsystem{}, "it has no name"},
		{"a host's kind", host.Subsystem{Name: "other", Jobs: map[string]store.JobHandler{store.JobExpireApproval: job}}, `the host handles jobs of kind "approval.expire" itself`},
		{"another subsystem's kind", host.Subsystem{Name: "other", Jobs: map[string]store.JobHandler{"test.job": job}}, `test handles jobs of kind "test.job" already`},
	} {
		if err := h.Register(tc.sub); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want …%s", tc.name, err, tc.want)
		}
	}
	out, err := h.CallTool(context.Background(), "run_eval", map[string]any{}, nil)
	if err != nil || out.IsError || string(out.Result) != `"eval_fixed"` {
		t.Errorf("call.Host.Evals: %v %+v", err, out)
	}
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.Register(host.Subsystem{Name: "late"}); err == nil {
		t.Error("a Register after Start was accepted")
	}
	select {
	case <-swept:
	case <-time.After(10 * time.Second):
		t.Fatal("the subsystem's sweep did not run")
	}
	// A session with the id its caller chose; an id that is not a name is
	// refused.
	id := host.NewSessionID()
	if sess, _, err := h.Sessions().Create(context.Background(), host.SessionOptions{ID: id}); err != nil || sess.ID != id {
		t.Errorf("a session with a chosen id: %+v %v", sess, err)
	}
	if _, _, err := h.Sessions().Create(context.Background(), host.SessionOptions{ID: "../escape"}); api.AsError(err).Code != api.CodeBadRequest {
		t.Errorf("a session id with a path: %v", err)
	}
	ran := make(chan error, 1)
	if !h.Go("waiting for the host to close", func(ctx context.Context) { <-ctx.Done(); ran <- context.Cause(ctx) }) {
		t.Fatal("Go ran nothing on a running host")
	}
	h.Close()
	select {
	case err := <-ran:
		if err == nil {
			t.Error("Go's context ended without a cause")
		}
	default:
		t.Error("Close did not wait for Go's function")
	}
	if h.Go("after Close", func(context.Context) { t.Error("ran after Close") }) {
		t.Error("Go ran after Close")
	}
	if _, ok := h.ModelTool("run_eval"); !ok {
		t.Error("ModelTool does not find the agent's tool")
	}
	if id := host.NewSessionID(); !strings.HasPrefix(id, "sess_") || len(id) != 21 {
		t.Errorf("NewSessionID: %q", id)
	}
}
