// Package harnessturn runs one turn of a session on a coding-agent
// harness (internal/harness): it starts the harness in the session's
// workspace, continues the harness's own session or starts one from the
// conversation so far, prompts it, and maps what it reports onto the
// session's stream — text, thoughts, its own tool calls, plans — and its
// permission requests onto parked calls. Where the events go and who
// decides is the Sink's: the host writes to its store and parks the calls
// there; a runner reports both to its host.
package harnessturn

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// Sink takes a harness turn's events and its permission requests.
type Sink interface {
	// Emit appends payloads to the turn's stream, in order, in one write.
	Emit(ctx context.Context, p ...api.Payload) error
	// Ask parks a harness call for a person's decision and waits for it.
	// ctx ends when the harness withdraws its request or the turn ends;
	// the sink then decides the call itself (Withdrawn). An error says
	// the call could not be parked: the harness is refused.
	Ask(ctx context.Context, q Request) (Decision, error)
}

// Request is a harness call that waits for a person: the call of the
// built-in tool harness_<kind> whose input holds the title, kind, files,
// raw input and diff the harness showed.
type Request struct {
	CallID, ModelCallID, Tool string
	Input                     json.RawMessage
}

// Verdict is how a parked harness call was decided.
type Verdict int

const (
	// Approved: the harness runs the call, and Decision.Record records
	// its result with the approval.
	Approved Verdict = iota
	// Rejected: denied or expired; the decision recorded its result.
	Rejected
	// Withdrawn: the request or the turn ended first; the sink recorded
	// the call's end.
	Withdrawn
)

// Decision is a parked harness call's decision.
type Decision struct {
	Verdict Verdict
	// Record records an approved call's result, once it has run.
	Record func(out tool.Output, took time.Duration) error
}
