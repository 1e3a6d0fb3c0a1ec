package storetest

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// AuditLog reads a store's whole audit log, a page at a time, and its head.
func AuditLog(t *testing.T, s store.Audit) ([]api.AuditEntry, api.AuditHead) {
	t.Helper()
	var all []api.AuditEntry
	var head api.AuditHead
	for after, first := int64(0), true; ; first = false {
		page, h, err := s.ListAudit(ctx, after, 7)
		if err != nil {
			t.Fatal(err)
		}
		if first {
			head = h
		}
		if len(page) == 0 {
			return all, head
		}
		all = append(all, page...)
		after = page[len(page)-1].Seq
	}
}

func record(kind api.AuditKind, subject, detail string) api.AuditRecord {
	return api.AuditRecord{Kind: kind, Principal: "tester", Subject: subject, Detail: json.RawMessage(detail)}
}

func testAudit(t *testing.T, s store.Store) {
	if got, head, err := s.ListAudit(ctx, 0, 10); err != nil || len(got) != 0 || head != (api.AuditHead{}) {
		t.Fatalf("an empty log: %+v %+v %v", got, head, err)
	}
	_, key, _ := ed25519.GenerateKey(nil)
	sign := func(h string) (string, string) { return api.SignAudit(key, h) }
	got, err := s.AppendAudit(ctx, store.AppendAuditParams{Records: []api.AuditRecord{
		record(api.AuditSignIn, "pg1", `{ "via" : "playground", "html": "<b>" }`),
		{Kind: api.AuditSignOut, Principal: "bad\xffutf8", Subject: "pg1"},
	}, Sign: sign})
	if err != nil || len(got) != 2 {
		t.Fatalf("AppendAudit = %+v, %v", got, err)
	}
	first := got[0]
	if first.Seq != 1 || first.PrevHash != "" || first.Hash != first.ComputeHash() || first.Time.IsZero() ||
		string(first.Detail) != `{"via":"playground","html":"\u003cb\u003e"}` || first.Sig == "" {
		t.Errorf("the first entry: %+v (%s)", first, first.Detail)
	}
	if second := got[1]; second.Seq != 2 || second.PrevHash != first.Hash || string(second.Detail) != `{}` || second.Principal != "bad\uFFFDutf8" {
		t.Errorf("the second entry: %+v", second)
	}
	for _, bad := range []api.AuditRecord{{Principal: "no kind"}, record(api.AuditSignIn, "x", `[1]`), record(api.AuditSignIn, "x", `{`), record(api.AuditSignIn, "x", `null`)} {
		if _, err := s.AppendAudit(ctx, store.AppendAuditParams{Records: []api.AuditRecord{bad}}); !errors.Is(err, store.ErrBadAudit) {
			t.Errorf("AppendAudit(%+v) = %v, want ErrBadAudit", bad, err)
		}
	}

	// Appends from many goroutines at once make one chain without gaps.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := s.AppendAudit(ctx, store.AppendAuditParams{Records: []api.AuditRecord{
				record(api.AuditApprovalDecided, fmt.Sprintf("call%d", i), `{"via":"http"}`)}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()

	// An approval's decision appends its entries with it, once: a losing
	// decision appends nothing, nor does a decision that fails.
	mustSession(t, s, "s")
	if _, err := s.CreateApproval(ctx, approval("c1", "s", time.Now().Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	decide := func(by string, rec api.AuditRecord) error {
		_, _, err := s.ResolveApproval(ctx, store.ResolveApprovalParams{CallID: "c1", Approved: true, By: by,
			Events: []api.Event{ev(api.KindApprovalResolved, map[string]string{"callId": "c1"})},
			Audit:  store.AppendAuditParams{Records: []api.AuditRecord{rec}}})
		return err
	}
	if err := decide("x", api.AuditRecord{Principal: "no kind"}); !errors.Is(err, store.ErrBadAudit) {
		t.Errorf("a decision with a bad audit record: %v", err)
	}
	if a, err := s.Approval(ctx, "c1"); err != nil || a.Status != api.ApprovalPending {
		t.Errorf("a decision whose audit failed was stored: %+v %v", a, err)
	}
	if evs, _ := s.Events(ctx, "s", 0, 10); len(evs) != 0 {
		t.Errorf("a decision whose audit failed appended events: %+v", evs)
	}
	if err := decide("alice", record(api.AuditApprovalDecided, "c1", `{"via":"http"}`)); err != nil {
		t.Fatal(err)
	}
	if err := decide("bob", record(api.AuditApprovalDecided, "c1", `{"via":"http"}`)); !errors.Is(err, store.ErrAlreadyResolved) {
		t.Errorf("a second decision: %v", err)
	}

	all, head := AuditLog(t, s)
	rep, err := api.VerifyAudit(all, &api.AuditVerifyOptions{Head: &head})
	if err != nil || rep.Entries != 23 || head.Seq != 23 || rep.Signed != 2 {
		t.Fatalf("VerifyAudit = %+v, %v (head %+v)", rep, err, head)
	}
	if last := all[len(all)-1]; last.Kind != api.AuditApprovalDecided || last.Subject != "c1" {
		t.Errorf("the decision's entry: %+v", last)
	}
	if _, err := api.VerifyAudit(all, &api.AuditVerifyOptions{Trusted: []ed25519.PublicKey{key.Public().(ed25519.PublicKey)}}); err == nil {
		t.Error("VerifyAudit with a trusted key passed entries it did not sign")
	}

	// Pages: after a seq, at most limit; what it returns is a copy.
	page, _, err := s.ListAudit(ctx, 20, 2)
	if err != nil || len(page) != 2 || page[0].Seq != 21 || page[1].Seq != 22 {
		t.Errorf("ListAudit(20, 2) = %+v, %v", page, err)
	}
	page[0].Detail[0] = 'X'
	again, _, _ := s.ListAudit(ctx, 20, 1)
	if len(again) != 1 || again[0].Detail[0] != '{' {
		t.Errorf("ListAudit returned the store's own detail: %s", again[0].Detail)
	}
}
