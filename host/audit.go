package host

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// Audit appends records to the host's audit log (the store's, shared by
// every host on it), signed with Options.AuditKey if it is set, and
// returns them as stored. What the host decides itself is recorded where
// it happens (a decision in the transaction that stores it, see
// [Approvals.Resolve]; a key's with [Host.AuditParams]); Audit is for what
// happens elsewhere: a sign-in. Record it right after what it records
// succeeded: an entry for what then failed would be a false record.
func (h *Host) Audit(ctx context.Context, recs ...api.AuditRecord) ([]api.AuditEntry, error) {
	out, err := h.log.AppendAudit(context.WithoutCancel(ctx), h.AuditParams(recs...))
	return out, storeError(err, nil)
}

// AuditLog returns up to limit entries of the audit log after the seq
// after, in seq order, and the log's head when they were read.
func (h *Host) AuditLog(ctx context.Context, after int64, limit int) ([]api.AuditEntry, api.AuditHead, error) {
	out, head, err := h.log.ListAudit(ctx, after, limit)
	return out, head, storeError(err, nil)
}

// AuditParams are recs as the store appends them, signed with
// Options.AuditKey if it is set: for a store write that appends its own
// audit records in its transaction (a key created or revoked).
func (h *Host) AuditParams(recs ...api.AuditRecord) store.AppendAuditParams {
	p := store.AppendAuditParams{Records: recs}
	if key := h.opts.AuditKey; key != nil {
		p.Sign = func(hash string) (string, string) { return api.SignAudit(key, hash) }
	}
	return p
}

// decisionAudit is what the audit log records of a person's decision of
// parked: approval.decided, and budget.raised when it approves a raise of
// a usage limit.
func decisionAudit(parked api.Approval, d Decision) []api.AuditRecord {
	status := api.ApprovalDenied
	if d.Approved {
		status = api.ApprovalApproved
	}
	via := d.Via
	if via == "" {
		via = "host"
	}
	detail := api.AuditDecision{Tool: parked.Tool, Status: status, Reason: d.Reason, Via: via, SessionID: parked.SessionID,
		TurnID: parked.TurnID, RequestedBy: parked.RequestedBy, UserAgent: d.UserAgent, Email: d.Email}
	if d.Approved && d.Input != nil {
		detail.Input = d.Input // an approver's edit: what runs
	}
	b, _ := json.Marshal(detail)
	recs := []api.AuditRecord{{Kind: api.AuditApprovalDecided, Principal: d.By, Subject: parked.CallID, Detail: b}}
	if d.Approved && parked.Tool == raiseTool {
		detail.Input = parked.Input
		b, _ := json.Marshal(detail)
		recs = append(recs, api.AuditRecord{Kind: api.AuditBudgetRaised, Principal: d.By, Subject: parked.CallID, Detail: b})
	}
	return recs
}

// AuditKeyFile is where a state directory keeps the host's audit signing
// key: an ed25519 seed in base64, mode 0600; its public key is beside it
// in AuditKeyFile + ".pub".
func AuditKeyFile(stateDir string) string { return filepath.Join(stateDir, "audit-key") }

// LoadAuditKey reads the audit signing key at path (see [AuditKeyFile]),
// creating it and its .pub file when there is none.
func LoadAuditKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		seed := make([]byte, ed25519.SeedSize)
		rand.Read(seed)
		key := ed25519.NewKeyFromSeed(seed)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("creating the audit key: %w", err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			return LoadAuditKey(path) // another process made it first
		}
		if err != nil {
			return nil, fmt.Errorf("creating the audit key: %w", err)
		}
		_, err = f.WriteString(base64.StdEncoding.EncodeToString(seed) + "\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.WriteFile(path+".pub", []byte(base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))+"\n"), 0o644)
		}
		if err != nil {
			return nil, fmt.Errorf("creating the audit key: %w", err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the audit key: %w", err)
	}
	seed, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("reading the audit key: %s is not a base64 ed25519 seed of %d bytes", path, ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}
