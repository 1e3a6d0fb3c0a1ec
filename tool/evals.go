package tool

import (
	"context"
	"encoding/json"
	"fmt"
)

// Evals runs the agent's evals (call.Host.Evals): batches of cases, each
// a session of its own on the channel "eval" in which a message (or a
// conversation) is sent to the agent's model and the trajectory is then
// checked — the same as POST /v1/evals and `agent-sdk eval run`. A batch
// runs in the background as durable jobs, on a host whose store runs them
// (SQLite, PostgreSQL) and that runs package evals (evals.New registers it
// on the host; agent-sdk serve does); elsewhere every method answers an
// error wrapping ErrNotConfigured.
//
// The package tool cannot name the API's types, so an eval and a batch
// travel as JSON: Run takes an api.EvalRunRequest ({"name": …, "cases":
// [{"message": …, "checks": [{"called": …}, …]}, …], "concurrency": …})
// and Get returns an api.EvalBatch ({"id", "status", "score", "passed",
// "total", "cases": […]}); decode it into api.EvalBatch from a program
// that imports package api.
//
//	id, err := call.Host.Evals.Run(ctx, json.RawMessage(`{"name":"smoke","cases":[{"message":"Hi","checks":[{"contains":"Hello"}]}]}`))
//	…
//	b, err := call.Host.Evals.Get(ctx, id) // poll until "status" is "completed"
type Evals interface {
	// Run validates the eval and starts its batch, returning the batch's
	// id at once. An invalid eval is refused with an error that lists
	// every problem (the API's invalid_eval).
	Run(ctx context.Context, eval json.RawMessage) (batchID string, err error)
	// Get returns a batch with its cases' results, as JSON (an
	// api.EvalBatch); an unknown id is an error (the API's
	// eval_not_found).
	Get(ctx context.Context, batchID string) (json.RawMessage, error)
}

// NoEvals answers every call with Err: what a host without durable jobs
// gives, and the default.
type NoEvals struct{ Err error }

// Run returns the error.
func (n NoEvals) Run(context.Context, json.RawMessage) (string, error) { return "", n.Err }

// Get returns the error.
func (n NoEvals) Get(context.Context, string) (json.RawMessage, error) { return nil, n.Err }

var errEvalsNotConfigured = fmt.Errorf("evals: %w: run the tool in a host whose store runs durable jobs (agent-sdk serve, with SQLite or PostgreSQL), with evals registered (evals.New)", ErrNotConfigured)

// unconfiguredEvals is call.Host.Evals outside a host that runs evals,
// made once (an interface value of a struct allocates).
var unconfiguredEvals Evals = NoEvals{Err: errEvalsNotConfigured}
