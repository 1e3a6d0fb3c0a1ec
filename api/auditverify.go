package api

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"slices"
)

// AuditProblem says how an audit log is broken.
type AuditProblem string

// The problems [VerifyAudit] finds.
const (
	// AuditChanged: an entry's contents do not hash to its hash.
	AuditChanged AuditProblem = "changed"
	// AuditMissing: an entry is gone (a gap in the seqs, or the log ends
	// before its head).
	AuditMissing AuditProblem = "missing"
	// AuditReordered: an entry is out of its place.
	AuditReordered AuditProblem = "reordered"
	// AuditUnlinked: an entry's previous hash is not the hash of the entry
	// before it (the chain was rewritten from there).
	AuditUnlinked AuditProblem = "unlinked"
	// AuditBadSignature: an entry's signature does not verify, or it is
	// not signed by a trusted key.
	AuditBadSignature AuditProblem = "signature"
)

// AuditBreak is the first place where an audit log fails verification:
// the entry named by Seq and what is wrong with it.
type AuditBreak struct {
	Seq     int64
	Problem AuditProblem
	Message string
}

func (b *AuditBreak) Error() string { return b.Message }

// AuditVerifyOptions tune [VerifyAudit]; nil means none.
type AuditVerifyOptions struct {
	// Head, if set, is the log's head as the store keeps it: a log whose
	// last entries were removed ends before it.
	Head *AuditHead
	// Trusted, if any, are the public keys one of which must have signed
	// every entry. Without them, signatures are checked against the key
	// each entry names, which proves only that the entries were not
	// changed since someone holding that key signed them.
	Trusted []ed25519.PublicKey
}

// AuditReport is what [VerifyAudit] found in a log that holds.
type AuditReport struct {
	// Entries counts the entries; Last is the last one's seq and hash.
	Entries int
	Last    AuditHead
	// Signed counts the signed entries; Signers are their keys (base64),
	// each once, in the order first seen.
	Signed  int
	Signers []string
}

// VerifyAudit checks an audit log from its first entry, in the order
// given: seqs 1, 2, 3… without gaps, each entry's hash its contents'
// ([AuditEntry.ComputeHash]), each PrevHash the hash before it, each
// signature (if any) good. It returns an *[AuditBreak] naming the first
// entry that was changed, removed or reordered.
func VerifyAudit(entries []AuditEntry, opts *AuditVerifyOptions) (AuditReport, error) {
	var o AuditVerifyOptions
	if opts != nil {
		o = *opts
	}
	var rep AuditReport
	var prev AuditHead
	for i, e := range entries {
		if want := prev.Seq + 1; e.Seq != want {
			return rep, outOfPlace(entries, i, prev.Seq)
		}
		if got := e.ComputeHash(); got != e.Hash {
			if s, ok := movedFrom(e, entries); ok {
				return rep, &AuditBreak{Seq: e.Seq, Problem: AuditReordered,
					Message: fmt.Sprintf("entry %d was reordered: it holds what was entry %d (its hash is that of its contents at seq %d)", e.Seq, s, s)}
			}
			return rep, &AuditBreak{Seq: e.Seq, Problem: AuditChanged,
				Message: fmt.Sprintf("entry %d was changed: its hash is %s, its contents hash to %s", e.Seq, e.Hash, got)}
		}
		if e.PrevHash != prev.Hash {
			msg := fmt.Sprintf("entry %d does not follow entry %d: its previous hash is %s, entry %d's hash is %s (entries were removed or the chain rewritten from here)",
				e.Seq, prev.Seq, short(e.PrevHash), prev.Seq, short(prev.Hash))
			if prev.Seq == 0 {
				msg = fmt.Sprintf("entry %d does not begin the log: its previous hash is %s, not empty", e.Seq, short(e.PrevHash))
			}
			return rep, &AuditBreak{Seq: e.Seq, Problem: AuditUnlinked, Message: msg}
		}
		if err := checkSignature(e, o.Trusted); err != nil {
			return rep, err
		}
		if e.Sig != "" {
			rep.Signed++
			if !slices.Contains(rep.Signers, e.Signer) {
				rep.Signers = append(rep.Signers, e.Signer)
			}
		}
		rep.Entries++
		prev = AuditHead{Seq: e.Seq, Hash: e.Hash}
	}
	rep.Last = prev
	if h := o.Head; h != nil {
		switch {
		case h.Seq > prev.Seq:
			return rep, &AuditBreak{Seq: prev.Seq + 1, Problem: AuditMissing,
				Message: fmt.Sprintf("entry %d is missing: the log's head is entry %d, its last entry is %d", prev.Seq+1, h.Seq, prev.Seq)}
		case h.Seq == prev.Seq && h.Hash != prev.Hash:
			return rep, &AuditBreak{Seq: prev.Seq, Problem: AuditChanged,
				Message: fmt.Sprintf("entry %d was changed: the log's head records its hash as %s, it is %s", prev.Seq, short(h.Hash), short(prev.Hash))}
		}
	}
	return rep, nil
}

// outOfPlace explains entries[i], which does not carry the seq after
// prevSeq.
func outOfPlace(entries []AuditEntry, i int, prevSeq int64) *AuditBreak {
	e, want := entries[i], prevSeq+1
	later := slices.IndexFunc(entries[i:], func(x AuditEntry) bool { return x.Seq == want })
	switch {
	case e.Seq > want && later >= 0:
		return &AuditBreak{Seq: want, Problem: AuditReordered,
			Message: fmt.Sprintf("entry %d was reordered: it comes after entry %d, not after entry %d", want, entries[i+later-1].Seq, prevSeq)}
	case e.Seq > want && prevSeq == 0:
		return &AuditBreak{Seq: want, Problem: AuditMissing, Message: fmt.Sprintf("entry %d is missing (the log begins at entry %d)", want, e.Seq)}
	case e.Seq > want:
		return &AuditBreak{Seq: want, Problem: AuditMissing, Message: fmt.Sprintf("entry %d is missing (%d is followed by %d)", want, prevSeq, e.Seq)}
	case slices.ContainsFunc(entries[:i], func(x AuditEntry) bool { return x.Seq == e.Seq }):
		return &AuditBreak{Seq: e.Seq, Problem: AuditReordered, Message: fmt.Sprintf("entry %d appears twice (again after entry %d)", e.Seq, prevSeq)}
	default:
		return &AuditBreak{Seq: e.Seq, Problem: AuditReordered, Message: fmt.Sprintf("entry %d was reordered: it comes after entry %d", e.Seq, prevSeq)}
	}
}

// movedFrom finds the seq whose contents e holds, if its hash is theirs
// at another seq: a row given another row's seq. It tries the seqs a log
// of this length has and those its entries carry (not every number up
// to the largest: a file's seqs are anyone's to make up).
func movedFrom(e AuditEntry, entries []AuditEntry) (int64, bool) {
	try := func(s int64) bool {
		if s == e.Seq {
			return false
		}
		m := e
		m.Seq = s
		return m.ComputeHash() == e.Hash
	}
	for s := int64(1); s <= int64(len(entries))+1; s++ {
		if try(s) {
			return s, true
		}
	}
	for _, x := range entries {
		if try(x.Seq) {
			return x.Seq, true
		}
	}
	return 0, false
}

// checkSignature checks e's signature, if it has one, and that a trusted
// key made it, if any are given.
func checkSignature(e AuditEntry, trusted []ed25519.PublicKey) error {
	if e.Sig == "" && e.Signer == "" {
		if len(trusted) > 0 {
			return &AuditBreak{Seq: e.Seq, Problem: AuditBadSignature, Message: fmt.Sprintf("entry %d is not signed", e.Seq)}
		}
		return nil
	}
	pub, err := base64.StdEncoding.DecodeString(e.Signer)
	sig, serr := base64.StdEncoding.DecodeString(e.Sig)
	if err != nil || serr != nil || len(pub) != ed25519.PublicKeySize || !ed25519.Verify(ed25519.PublicKey(pub), []byte(e.Hash), sig) {
		return &AuditBreak{Seq: e.Seq, Problem: AuditBadSignature, Message: fmt.Sprintf("entry %d's signature does not verify against its signer %s", e.Seq, e.Signer)}
	}
	if len(trusted) > 0 && !slices.ContainsFunc(trusted, func(k ed25519.PublicKey) bool { return k.Equal(ed25519.PublicKey(pub)) }) {
		return &AuditBreak{Seq: e.Seq, Problem: AuditBadSignature, Message: fmt.Sprintf("entry %d is signed by %s, which is not a trusted key", e.Seq, e.Signer)}
	}
	return nil
}

// short is a hash cut to its first 16 digits, for messages ("" says
// empty).
func short(h string) string {
	switch {
	case h == "":
		return `""`
	case len(h) > 16:
		return h[:16] + "…"
	}
	return h
}
