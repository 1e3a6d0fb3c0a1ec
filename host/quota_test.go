package host_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
)

// A principal may create MaxSessions sessions an hour and hold MaxPending
// parked calls; past that it is refused with quota_exceeded, and others
// are not.
func TestQuotas(t *testing.T) {
	gated, err := tool.New("deploy", tool.Config{Description: "Deploy.", NeedsApproval: tool.Always},
		func(ctx context.Context, call *tool.Call, in struct{}) (any, error) { return "deployed", nil })
	if err != nil {
		t.Fatal(err)
	}
	set, _ := tool.NewSet(gated)
	h, err := host.New(set, &host.Options{StateRoot: t.TempDir(), MaxSessions: 2, MaxPending: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ctx := context.Background()
	for range 2 {
		if _, _, err := h.Sessions().Create(ctx, host.SessionOptions{Principal: "ana"}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = h.Sessions().Create(ctx, host.SessionOptions{Principal: "ana"})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeQuotaExceeded || ae.Code.Status() != 429 {
		t.Fatalf("a third session for ana: %v", err)
	}
	if _, _, err := h.Sessions().Create(ctx, host.SessionOptions{Principal: "bob"}); err != nil {
		t.Errorf("bob's first session: %v", err)
	}

	call := func(principal string) error {
		_, err := h.CallTool(ctx, "deploy", nil, &host.CallOptions{Principal: principal})
		return err
	}
	var pending *host.ApprovalPendingError
	if err := call("ana"); !errors.As(err, &pending) {
		t.Fatalf("ana's first gated call: %v", err)
	}
	anas := pending.CallID
	if err := call("ana"); !errors.As(err, &ae) || ae.Code != api.CodeQuotaExceeded {
		t.Errorf("ana's second parked call: %v", err)
	}
	if err := call("bob"); !errors.As(err, &pending) {
		t.Errorf("bob's gated call: %v", err)
	}
	// Once ana's call is decided, she may park another.
	if _, err := h.Approvals().Resolve(ctx, anas, host.Decision{Approved: false, By: "boss"}); err != nil {
		t.Fatal(err)
	}
	if err := call("ana"); !errors.As(err, &pending) {
		t.Errorf("ana's gated call after the first was decided: %v", err)
	}
}
