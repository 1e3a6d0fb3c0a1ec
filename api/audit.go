package api

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"
)

// AuditKind names what an [AuditEntry] records.
type AuditKind string

// The kinds of audit entries the host writes today (README's Audit table
// lists each). Others may follow: a verifier treats a kind as a string.
const (
	// AuditApprovalDecided: a person approved or denied a parked call.
	// Subject is the call id; Detail is an [AuditDecision].
	AuditApprovalDecided AuditKind = "approval.decided"
	// AuditApprovalVoted: a person approved a call whose tool needs more
	// approvers (a quorum), and it is not yet decided. Subject is the call
	// id; Detail is an [AuditDecision].
	AuditApprovalVoted AuditKind = "approval.voted"
	// AuditBudgetRaised: an approved raise_usage_limit call, which scales
	// a usage limit for its turn. Subject is the call id; Detail is an
	// [AuditDecision] whose Input says which limit and how.
	AuditBudgetRaised AuditKind = "budget.raised"
	// AuditSignIn: someone signed in to the playground. Subject is the
	// playground session's public id; Detail is an [AuditSignInDetail].
	AuditSignIn AuditKind = "signin"
	// AuditSignOut: a playground session was ended by its holder.
	AuditSignOut AuditKind = "signout"
	// AuditKeyCreated and AuditKeyRevoked: an API key was made or revoked
	// (Subject: the key's id).
	AuditKeyCreated AuditKind = "key.created"
	AuditKeyRevoked AuditKind = "key.revoked"
)

// AuditRecord is what a caller appends to the audit log: the store gives
// it its seq, time and hashes ([AuditEntry]).
type AuditRecord struct {
	Kind AuditKind
	// Principal is who acted: "bearer-token", "key:<id>", "oidc:<sub>",
	// an admin's "<principal>:<onBehalfOf>", "slack:U123", …
	Principal string
	// Subject is what was acted on: a call id, a session id, a key id.
	Subject string
	// Detail is a JSON object saying more ("" or nil: {}).
	Detail json.RawMessage
}

// AuditEntry is one entry of the audit log, as the store keeps it and
// GET /v1/audit and `agent-sdk audit export` show it. Hash is
// [AuditEntry.ComputeHash]; PrevHash is the hash of the entry before it
// ("" for the first), so that changing, removing or reordering an entry
// breaks the chain from there on. Signer and Sig, if set, are the host's
// ed25519 public key and its signature of Hash (both base64, standard
// encoding), so that a copy of the log can be checked against keys known
// from elsewhere.
type AuditEntry struct {
	Seq       int64           `json:"seq"`
	Time      time.Time       `json:"time"`
	Kind      AuditKind       `json:"kind"`
	Principal string          `json:"principal"`
	Subject   string          `json:"subject"`
	Detail    json.RawMessage `json:"detail"`
	PrevHash  string          `json:"prevHash"`
	Hash      string          `json:"hash"`
	Signer    string          `json:"signer,omitempty"`
	Sig       string          `json:"sig,omitempty"`
}

// AuditHead is the last entry's seq and hash (0 and "" for an empty
// log): the store keeps it beside the log, so that removing the last
// entries shows too.
type AuditHead struct {
	Seq  int64  `json:"seq"`
	Hash string `json:"hash"`
}

// AuditDecision is the detail of an approval.decided (or budget.raised)
// entry.
type AuditDecision struct {
	Tool   string         `json:"tool"`
	Status ApprovalStatus `json:"status"`
	Reason string         `json:"reason,omitempty"`
	// Via is how the decision came: "http", "cli" (HTTP with the CLI's
	// User-Agent, as the client says), "playground" (the playground's
	// cookie), or a channel's id ("slack").
	Via         string `json:"via"`
	SessionID   string `json:"sessionId,omitempty"`
	TurnID      string `json:"turnId,omitempty"`
	RequestedBy string `json:"requestedBy,omitempty"`
	// UserAgent is the HTTP client's, as it said.
	UserAgent string `json:"userAgent,omitempty"`
	// Email is the decider's, when its principal is an OIDC token's
	// (oidc:<sub>) that says one.
	Email string `json:"email,omitempty"`
	// Input is the call's input, for a budget.raised entry; for an
	// approver's edit, the input that runs instead of the one asked for.
	Input json.RawMessage `json:"input,omitempty"`
}

// AuditSignInDetail is the detail of a signin entry.
type AuditSignInDetail struct {
	Via       string `json:"via"`
	Remote    string `json:"remote,omitempty"`
	UserAgent string `json:"userAgent,omitempty"`
	// Email is the principal's, when it is an OIDC token's that says one.
	Email string `json:"email,omitempty"`
}

// AuditTimeFormat is how an entry's time enters its hash: UTC, to the
// microsecond (what the store keeps).
const AuditTimeFormat = "2006-01-02T15:04:05.000000Z"

// auditHashVersion begins every hashed encoding, naming its version.
const auditHashVersion = "agentsdk-audit-v1"

// ComputeHash is the entry's hash as the store computes it: SHA-256, in
// lower-case hex, over netstrings (<length>:<bytes>,) of, in order,
// "agentsdk-audit-v1", the seq in decimal, the time in AuditTimeFormat,
// the kind, the principal, the subject, the detail's bytes as stored
// (compact JSON) and the previous entry's hash. Signer, Sig and Hash
// itself are not hashed.
func (e AuditEntry) ComputeHash() string {
	h := sha256.New()
	buf := make([]byte, 0, 256)
	for _, f := range [...]string{auditHashVersion, strconv.FormatInt(e.Seq, 10), e.Time.UTC().Format(AuditTimeFormat),
		string(e.Kind), e.Principal, e.Subject, string(e.Detail), e.PrevHash} {
		buf = strconv.AppendInt(buf[:0], int64(len(f)), 10)
		buf = append(buf, ':')
		buf = append(buf, f...)
		buf = append(buf, ',')
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// SignAudit returns the signer and signature fields of an entry whose
// hash is hash, signed with key.
func SignAudit(key ed25519.PrivateKey, hash string) (signer, sig string) {
	pub := key.Public().(ed25519.PublicKey)
	return base64.StdEncoding.EncodeToString(pub), base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(hash)))
}

// AuditList is the body of GET /v1/audit: entries after a seq, in seq
// order, and the log's head when they were read. Next is the seq to ask
// after for the next page (0 after the last).
type AuditList struct {
	OK      bool         `json:"ok"`
	Entries []AuditEntry `json:"entries"`
	Head    AuditHead    `json:"head"`
	Next    int64        `json:"next,omitempty"`
}

// CLIUserAgent is the User-Agent agent-sdk's CLI sends: a decision that
// comes with it is recorded as made "via" the CLI (as the client says:
// any client can send it).
const CLIUserAgent = "agent-sdk-cli"
