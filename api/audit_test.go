package api_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// chain makes n entries linked as a store links them, signed with key if
// it is set.
func chain(n int, key ed25519.PrivateKey) []api.AuditEntry {
	var out []api.AuditEntry
	prev := ""
	for i := range n {
		e := api.AuditEntry{Seq: int64(i + 1), Time: time.Date(2026, 12, 3, 12, 0, i, 1000, time.UTC), Kind: api.AuditApprovalDecided,
			Principal: "bearer-token:alice", Subject: fmt.Sprintf("call%d", i+1), Detail: json.RawMessage(`{"via":"http"}`), PrevHash: prev}
		e.Hash = e.ComputeHash()
		if key != nil {
			e.Signer, e.Sig = api.SignAudit(key, e.Hash)
		}
		prev = e.Hash
		out = append(out, e)
	}
	return out
}

// The hash is its documented encoding's: SHA-256 over netstrings.
func TestAuditHash(t *testing.T) {
	e := chain(1, nil)[0]
	const want = "17:agentsdk-audit-v1,1:1,27:2026-12-03T12:00:00.000001Z,16:approval.decided,18:bearer-token:alice,5:call1,14:{\"via\":\"http\"},0:,"
	if got := sha256Hex(want); e.Hash != got {
		t.Fatalf("hash %s, want SHA-256 of %q = %s", e.Hash, want, got)
	}
	// Every field counts, and fields do not run into each other.
	for name, change := range map[string]func(*api.AuditEntry){
		"seq":       func(e *api.AuditEntry) { e.Seq = 2 },
		"time":      func(e *api.AuditEntry) { e.Time = e.Time.Add(time.Microsecond) },
		"kind":      func(e *api.AuditEntry) { e.Kind = api.AuditSignIn },
		"boundary":  func(e *api.AuditEntry) { e.Principal = "bearer-token:alic"; e.Subject = "ecall1" },
		"detail":    func(e *api.AuditEntry) { e.Detail = json.RawMessage(`{"via":"cli"}`) },
		"prevHash":  func(e *api.AuditEntry) { e.PrevHash = "00" },
		"principal": func(e *api.AuditEntry) { e.Principal = "bearer-token:bob" },
	} {
		m := e
		change(&m)
		if m.ComputeHash() == e.Hash {
			t.Errorf("changing %s leaves the hash as it was", name)
		}
	}
	m := e
	m.Time = e.Time.In(time.FixedZone("x", 3600))
	if m.ComputeHash() != e.Hash {
		t.Error("the same instant in another zone hashes differently")
	}
}

func TestVerifyAudit(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	_, other, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	trusted := &api.AuditVerifyOptions{Trusted: []ed25519.PublicKey{pub}}
	same := func(l []api.AuditEntry) []api.AuditEntry { return l }
	tests := []struct {
		name    string
		edit    func([]api.AuditEntry) []api.AuditEntry
		opts    *api.AuditVerifyOptions
		problem api.AuditProblem
		message string
	}{
		{"Holds", same, nil, "", ""},
		{"HoldsTrusted", same, trusted, "", ""},
		{"HoldsAtHead", same, &api.AuditVerifyOptions{Head: &api.AuditHead{Seq: 5, Hash: chain(5, key)[4].Hash}}, "", ""},
		{"Empty", func([]api.AuditEntry) []api.AuditEntry { return nil }, nil, "", ""},
		{"Changed", func(l []api.AuditEntry) []api.AuditEntry { l[2].Subject = "call9"; return l }, nil, api.AuditChanged, "entry 3 was changed: its hash is"},
		{"Removed", func(l []api.AuditEntry) []api.AuditEntry { return slices.Delete(l, 3, 4) }, nil, api.AuditMissing, "entry 4 is missing (3 is followed by 5)"},
		{"RemovedFirst", func(l []api.AuditEntry) []api.AuditEntry { return l[1:] }, nil, api.AuditMissing, "entry 1 is missing (the log begins at entry 2)"},
		{"RemovedLast", func(l []api.AuditEntry) []api.AuditEntry { return l[:4] }, &api.AuditVerifyOptions{Head: &api.AuditHead{Seq: 5}}, api.AuditMissing,
			"entry 5 is missing: the log's head is entry 5, its last entry is 4"},
		{"HeadDisagrees", same, &api.AuditVerifyOptions{Head: &api.AuditHead{Seq: 5, Hash: "ab"}}, api.AuditChanged, "entry 5 was changed: the log's head"},
		{"LinesSwapped", func(l []api.AuditEntry) []api.AuditEntry { l[1], l[2] = l[2], l[1]; return l }, nil, api.AuditReordered,
			"entry 2 was reordered: it comes after entry 3, not after entry 1"},
		{"SeqsSwapped", func(l []api.AuditEntry) []api.AuditEntry {
			l[1].Seq, l[2].Seq = 3, 2
			l[1], l[2] = l[2], l[1]
			return l
		}, nil, api.AuditReordered,
			"entry 2 was reordered: it holds what was entry 3"},
		{"Twice", func(l []api.AuditEntry) []api.AuditEntry { return slices.Insert(l, 2, l[1]) }, nil, api.AuditReordered, "entry 2 appears twice"},
		{"Rewritten", func(l []api.AuditEntry) []api.AuditEntry {
			l[3].PrevHash = strings.Repeat("0", 64)
			l[3].Hash = l[3].ComputeHash()
			l[3].Signer, l[3].Sig = api.SignAudit(key, l[3].Hash)
			return l
		}, nil, api.AuditUnlinked, "entry 4 does not follow entry 3"},
		{"ResignedByAnother", func(l []api.AuditEntry) []api.AuditEntry {
			l[1].Signer, l[1].Sig = api.SignAudit(other, l[1].Hash)
			return l
		},
			trusted, api.AuditBadSignature, "entry 2 is signed by"},
		{"BadSignature", func(l []api.AuditEntry) []api.AuditEntry { l[1].Sig = l[0].Sig; return l }, nil, api.AuditBadSignature, "entry 2's signature does not verify"},
		{"Unsigned", func(l []api.AuditEntry) []api.AuditEntry { l[4].Signer, l[4].Sig = "", ""; return l }, trusted, api.AuditBadSignature, "entry 5 is not signed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := api.VerifyAudit(tt.edit(chain(5, key)), tt.opts)
			if tt.problem == "" {
				if err != nil {
					t.Fatalf("VerifyAudit = %v", err)
				}
				if rep.Entries > 0 && (rep.Signed != rep.Entries || len(rep.Signers) != 1) {
					t.Errorf("report %+v", rep)
				}
				return
			}
			var b *api.AuditBreak
			if !errors.As(err, &b) || b.Problem != tt.problem || !strings.Contains(b.Message, tt.message) {
				t.Fatalf("VerifyAudit = %v (%+v), want %s: %q", err, b, tt.problem, tt.message)
			}
		})
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func BenchmarkAuditHash(b *testing.B) {
	e := chain(1, nil)[0]
	for b.Loop() {
		e.ComputeHash()
	}
}

func BenchmarkSignAudit(b *testing.B) {
	_, key, _ := ed25519.GenerateKey(nil)
	e := chain(1, nil)[0]
	for b.Loop() {
		api.SignAudit(key, e.Hash)
	}
}

// A file's seqs are anyone's: a huge one is named, not counted up to.
func TestVerifyAuditHugeSeq(t *testing.T) {
	l := chain(3, nil)
	l[1].Hash, l[2].Seq = "x", 1<<62
	done := make(chan error, 1)
	go func() { _, err := api.VerifyAudit(l, nil); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "entry 2 was changed") {
			t.Errorf("VerifyAudit = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("VerifyAudit still runs after 10 s")
	}
}
