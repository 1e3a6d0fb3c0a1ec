package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// Audit is the part of a Store that keeps the audit log: an append-only
// chain of [api.AuditEntry], each carrying the hash of the one before it
// (api.AuditEntry.ComputeHash), numbered 1, 2, 3… without gaps. Appends
// are serialised across every handle on the database (SQLite: its one
// write transaction; PostgreSQL: a row lock on the single row of
// audit_head, taken last in the transaction), so that concurrent hosts
// extend one chain.
type Audit interface {
	// AppendAudit appends p.Records, in order, and returns them as
	// stored (seq, time, hashes, signature). ErrBadAudit for a record
	// without a kind or with a detail that is not a JSON object.
	AppendAudit(ctx context.Context, p AppendAuditParams) ([]api.AuditEntry, error)
	// ListAudit returns up to limit entries with Seq > after, in seq
	// order (limit 1 to 1000; else 1000), and the log's head as it stood
	// before they were read: what a verifier needs to see that the last
	// entries were not removed.
	ListAudit(ctx context.Context, after int64, limit int) ([]api.AuditEntry, api.AuditHead, error)
}

// ErrBadAudit: an audit record the store refuses (no kind, a detail that
// is not a JSON object).
var ErrBadAudit = errors.New("invalid audit record")

// AppendAuditParams append entries to the audit log.
type AppendAuditParams struct {
	Records []api.AuditRecord
	// Sign, if set, signs each entry's hash: it returns the entry's
	// Signer and Sig (api.SignAudit). It is called inside the
	// transaction, so it must not use the store.
	Sign func(hash string) (signer, sig string)
}

// AuditEntries makes p's records the entries that follow head at now:
// each normalised as JSON would carry it (valid UTF-8, a compact detail
// with JSON's escapes), so that an entry read back from an export hashes
// as it did when it was stored.
func AuditEntries(p AppendAuditParams, head api.AuditHead, now time.Time) ([]api.AuditEntry, error) {
	out := make([]api.AuditEntry, 0, len(p.Records))
	for _, r := range p.Records {
		if r.Kind == "" {
			return nil, fmt.Errorf("%w: no kind", ErrBadAudit)
		}
		detail := r.Detail
		if len(detail) == 0 {
			detail = json.RawMessage(`{}`)
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(detail, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("%w: the detail of a %s entry is not a JSON object", ErrBadAudit, r.Kind)
		}
		canon, err := json.Marshal(detail) // compact, with the escapes json.Marshal writes
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadAudit, err)
		}
		e := api.AuditEntry{
			Seq: head.Seq + 1, Time: now, Kind: api.AuditKind(valid(string(r.Kind))), Principal: valid(r.Principal),
			Subject: valid(r.Subject), Detail: canon, PrevHash: head.Hash,
		}
		e.Hash = e.ComputeHash()
		if p.Sign != nil {
			e.Signer, e.Sig = p.Sign(e.Hash)
		}
		out = append(out, e)
		head = api.AuditHead{Seq: e.Seq, Hash: e.Hash}
	}
	return out, nil
}

// valid is s as JSON carries it: invalid UTF-8 replaced.
func valid(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// VoteAudit is what a decision's audit records become when it is an
// approval short of its quorum (decided false): approval.voted entries,
// without the records of the call's effect (a budget raise), which are
// written with the approval that decides it.
func VoteAudit(p AppendAuditParams, decided bool) AppendAuditParams {
	if decided {
		return p
	}
	var recs []api.AuditRecord
	for _, r := range p.Records {
		if r.Kind == api.AuditApprovalDecided {
			r.Kind = api.AuditApprovalVoted
			recs = append(recs, r)
		}
	}
	p.Records = recs
	return p
}
