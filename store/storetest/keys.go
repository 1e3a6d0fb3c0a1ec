package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// A key is stored with its hash and read back as it was; listing is
// oldest first without hashes; revoking keeps the first time; touching
// moves last used forward only; an unknown key is ErrNotFound.
func testKeys(t *testing.T, s store.Store) {
	created := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	expires := created.Add(90 * 24 * time.Hour)
	a := store.KeyRecord{Key: api.Key{ID: "k1", Name: "ci bot", Roles: []string{"operator", "approver"}, CreatedAt: created, ExpiresAt: &expires},
		Hash: bytes.Repeat([]byte{0xab}, 32)}
	b := store.KeyRecord{Key: api.Key{ID: "k0", Name: "reader", Roles: []string{"reader"}, CreatedAt: created.Add(time.Second)}, Hash: []byte{1, 2, 3}}
	for _, k := range []store.KeyRecord{a, b} {
		if err := s.CreateKey(ctx, store.CreateKeyParams{Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateKey(ctx, store.CreateKeyParams{Key: a}); !errors.Is(err, store.ErrExists) {
		t.Errorf("creating k1 again = %v, want ErrExists", err)
	}
	got, err := s.Key(ctx, "k1")
	if err != nil || got.Name != "ci bot" || !slices.Equal(got.Roles, a.Roles) || !bytes.Equal(got.Hash, a.Hash) ||
		!got.CreatedAt.Equal(created) || got.ExpiresAt == nil || !got.ExpiresAt.Equal(expires) || got.RevokedAt != nil || got.LastUsedAt != nil {
		t.Fatalf("Key(k1) = %+v, %v", got, err)
	}
	if _, err := s.Key(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Key(nope) = %v, want ErrNotFound", err)
	}
	list, err := s.ListKeys(ctx)
	if err != nil || len(list) != 2 || list[0].ID != "k1" || list[1].ID != "k0" || list[1].ExpiresAt != nil {
		t.Fatalf("ListKeys = %+v, %v", list, err)
	}
	used := created.Add(time.Hour)
	if err := s.TouchKey(ctx, "k1", used); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchKey(ctx, "k1", used.Add(-time.Minute)); err != nil { // older: kept as it was
		t.Fatal(err)
	}
	if got, _ := s.Key(ctx, "k1"); got.LastUsedAt == nil || !got.LastUsedAt.Equal(used) {
		t.Errorf("last used = %v, want %v", got.LastUsedAt, used)
	}
	revoked := created.Add(2 * time.Hour)
	k, err := s.RevokeKey(ctx, store.RevokeKeyParams{ID: "k1", At: revoked})
	if err != nil || k.RevokedAt == nil || !k.RevokedAt.Equal(revoked) || k.Usable(revoked) {
		t.Fatalf("RevokeKey = %+v, %v", k, err)
	}
	if k, err := s.RevokeKey(ctx, store.RevokeKeyParams{ID: "k1", At: revoked.Add(time.Hour)}); err != nil || !k.RevokedAt.Equal(revoked) {
		t.Errorf("revoking again = %+v, %v; want the first time kept", k, err)
	}
	if got, _ := s.Key(ctx, "k1"); got.RevokedAt == nil {
		t.Error("Key(k1) after revoking has no revokedAt")
	}
	if _, err := s.RevokeKey(ctx, store.RevokeKeyParams{ID: "nope", At: revoked}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RevokeKey(nope) = %v, want ErrNotFound", err)
	}
	if !b.Usable(time.Now()) || a.Usable(expires) {
		t.Error("Usable: a key without expiry must be usable, one at its expiry not")
	}
}

// A key's creation and revocation append their audit records in the
// transaction that makes them: a key whose record is refused is not
// created, nor revoked; a key that exists already, or is revoked already,
// appends nothing.
func testKeysAudit(t *testing.T, s store.Store) {
	rec := func(kind api.AuditKind, id string) store.AppendAuditParams {
		return store.AppendAuditParams{Records: []api.AuditRecord{{Kind: kind, Principal: "admin", Subject: id, Detail: json.RawMessage(`{"name":"ci"}`)}}}
	}
	bad := store.AppendAuditParams{Records: []api.AuditRecord{{Principal: "no kind"}}}
	k := func(id string) store.KeyRecord {
		return store.KeyRecord{Key: api.Key{ID: id, Name: "ci", Roles: []string{"operator"}}, Hash: []byte{1}}
	}
	entries := func() []string {
		t.Helper()
		list, _, err := s.ListAudit(ctx, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range list {
			out = append(out, string(e.Kind)+" "+e.Subject)
		}
		return out
	}

	if err := s.CreateKey(ctx, store.CreateKeyParams{Key: k("ka"), Audit: rec(api.AuditKeyCreated, "ka")}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateKey(ctx, store.CreateKeyParams{Key: k("kb"), Audit: bad}); !errors.Is(err, store.ErrBadAudit) {
		t.Errorf("a key with a bad audit record: %v, want ErrBadAudit", err)
	}
	if _, err := s.Key(ctx, "kb"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the key whose audit record was refused: %v, want it not created", err)
	}
	if err := s.CreateKey(ctx, store.CreateKeyParams{Key: k("ka"), Audit: rec(api.AuditKeyCreated, "ka")}); !errors.Is(err, store.ErrExists) {
		t.Errorf("creating ka again: %v, want ErrExists", err)
	}

	at := time.Now()
	var saw []api.Key
	if _, err := s.RevokeKey(ctx, store.RevokeKeyParams{ID: "ka", At: at, AuditFor: func(api.Key) store.AppendAuditParams { return bad }}); !errors.Is(err, store.ErrBadAudit) {
		t.Errorf("a revocation with a bad audit record: %v, want ErrBadAudit", err)
	}
	if got, _ := s.Key(ctx, "ka"); got.RevokedAt != nil {
		t.Errorf("the key whose revocation's record was refused is revoked: %+v", got)
	}
	auditFor := func(k api.Key) store.AppendAuditParams { saw = append(saw, k); return rec(api.AuditKeyRevoked, k.ID) }
	if got, err := s.RevokeKey(ctx, store.RevokeKeyParams{ID: "ka", At: at, AuditFor: auditFor}); err != nil || got.RevokedAt == nil {
		t.Fatalf("revoking ka: %+v %v", got, err)
	}
	if _, err := s.RevokeKey(ctx, store.RevokeKeyParams{ID: "ka", At: at.Add(time.Minute), AuditFor: auditFor}); err != nil {
		t.Fatal(err)
	}
	if len(saw) != 1 || saw[0].Name != "ci" || saw[0].RevokedAt == nil {
		t.Errorf("AuditFor saw %+v, want the key once, as revoked", saw)
	}
	if got, want := entries(), []string{"key.created ka", "key.revoked ka"}; !slices.Equal(got, want) {
		t.Errorf("the audit log: %q, want %q", got, want)
	}
}

// Sessions and approvals list by principal: another principal's are left
// out, pages and all.
func testListByPrincipal(t *testing.T, s store.Store) {
	for i, p := range []string{"alice", "bob", "alice", "bob", "alice"} {
		if _, err := s.CreateSession(ctx, api.Session{ID: "s" + string(rune('0'+i)), Channel: "http", Mode: api.ModeLocal, Principal: p,
			CreatedAt: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for cursor := ""; ; {
		page, next, err := s.ListSessions(ctx, store.ListSessionsParams{Principal: "alice", Page: store.Page{Limit: 2, Cursor: cursor}})
		if err != nil {
			t.Fatal(err)
		}
		for _, sess := range page {
			got = append(got, sess.ID)
		}
		if cursor = next; next == "" {
			break
		}
	}
	if !slices.Equal(got, []string{"s4", "s2", "s0"}) {
		t.Errorf("alice's sessions = %v, want [s4 s2 s0]", got)
	}
	if all, _, _ := s.ListSessions(ctx, store.ListSessionsParams{}); len(all) != 5 {
		t.Errorf("every session: %d, want 5", len(all))
	}
	later := time.Now().Add(time.Hour)
	for _, c := range []struct{ id, by string }{{"c1", "alice"}, {"c2", "bob"}, {"c3", "alice"}} {
		a := approval(c.id, "", later)
		a.RequestedBy = c.by
		if _, err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	list, _, err := s.ListApprovals(ctx, store.ListApprovalsParams{RequestedBy: "bob"})
	if err != nil || len(list) != 1 || list[0].CallID != "c2" {
		t.Errorf("bob's approvals = %+v, %v", list, err)
	}
	if list, _, _ := s.ListApprovals(ctx, store.ListApprovalsParams{RequestedBy: "alice", Status: api.ApprovalPending}); len(list) != 2 {
		t.Errorf("alice's pending approvals: %d, want 2", len(list))
	}
}
