package host_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/tool"
)

// A decision is in the audit log with who made it and how, signed with
// the host's key; an approved raise of a usage limit is a budget.raised
// entry too, a denied one is not.
func TestAuditDecisions(t *testing.T) {
	key, err := host.LoadAuditKey(filepath.Join(t.TempDir(), "state", "audit-key"))
	if err != nil {
		t.Fatal(err)
	}
	for _, approve := range []bool{true, false} {
		name := map[bool]string{true: "approved", false: "denied"}[approve]
		t.Run(name, func(t *testing.T) {
			opts := host.Options{AuditKey: key, Limits: host.UsageLimits{Session: host.UsageLimit{Cost: 10_000}, OnExceed: host.LimitApprove}}
			b := usageHost(t, "anthropic", "claude-sonnet-4-5", opts, budgetScript(2, "all done")...)
			ctx := context.Background()
			sess, turnID, err := b.host.Sessions().Create(ctx, host.SessionOptions{Message: "go", Principal: "alice"})
			if err != nil {
				t.Fatal(err)
			}
			req := decodeAll[api.ApprovalRequested](t, waitKind(t, b.host, sess.ID, api.KindApprovalRequested))[0]
			if approve {
				_, err = b.host.Handle().Decide(ctx, "slack", req.CallID, tool.Decision{Approved: true, User: "U0BOB"})
			} else {
				_, err = b.host.Approvals().Resolve(ctx, req.CallID, host.Decision{By: "bearer-token:carol", Reason: "no", Via: "cli", UserAgent: "agent-sdk-cli"})
			}
			if err != nil {
				t.Fatal(err)
			}
			b.waitTurn(t, sess.ID, turnID)
			entries, head, err := b.host.AuditLog(ctx, 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := api.VerifyAudit(entries, &api.AuditVerifyOptions{Head: &head, Trusted: []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}})
			if err != nil {
				t.Fatal(err)
			}
			want := []api.AuditKind{api.AuditApprovalDecided}
			principal, via, status := "slack:U0BOB", "slack", api.ApprovalApproved
			if approve {
				want = append(want, api.AuditBudgetRaised)
			} else {
				principal, via, status = "bearer-token:carol", "cli", api.ApprovalDenied
			}
			if rep.Entries != len(want) {
				t.Fatalf("%d entries, want %v: %+v", rep.Entries, want, entries)
			}
			for i, e := range entries {
				var d api.AuditDecision
				json.Unmarshal(e.Detail, &d)
				if e.Kind != want[i] || e.Principal != principal || e.Subject != req.CallID || d.Via != via || d.Status != status ||
					d.Tool != "raise_usage_limit" || d.SessionID != sess.ID || d.TurnID != turnID || d.RequestedBy != "alice" {
					t.Errorf("entry %d: %+v %s", e.Seq, e, e.Detail)
				}
				if e.Kind == api.AuditBudgetRaised && len(d.Input) == 0 {
					t.Errorf("budget.raised without the raise: %s", e.Detail)
				}
			}
			// Another entry, appended by what the host does not decide
			// itself, follows on the chain.
			more, err := b.host.Audit(ctx, api.AuditRecord{Kind: api.AuditKeyCreated, Principal: "bearer-token", Subject: "key_1"})
			if err != nil || len(more) != 1 || more[0].Seq != head.Seq+1 || more[0].PrevHash != head.Hash {
				t.Errorf("Audit = %+v, %v", more, err)
			}
		})
	}
}

// The audit key is made once, with its public half beside it, and read
// again; a file that is not a key is refused.
func TestLoadAuditKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "audit-key")
	k1, err := host.LoadAuditKey(path)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := host.LoadAuditKey(path)
	if err != nil || !k1.Equal(k2) {
		t.Fatalf("the key read again: %v", err)
	}
	pub, _ := os.ReadFile(path + ".pub")
	signer, _ := api.SignAudit(k1, "x")
	if strings.TrimSpace(string(pub)) != signer {
		t.Errorf("%s.pub holds %q, the key signs as %q", path, pub, signer)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("the key's mode: %v", fi.Mode())
	}
	os.WriteFile(path, []byte("not a key\n"), 0o600)
	if _, err := host.LoadAuditKey(path); err == nil || !strings.Contains(err.Error(), "not a base64 ed25519 seed") {
		t.Errorf("a broken key file: %v", err)
	}
}
