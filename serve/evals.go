package serve

import (
	"context"
	"net/http"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// Evals runs the agent's eval batches behind the routes /v1/evals:
// package evals's *Service (evals.New), which runs them on the host.
type Evals interface {
	// Run validates an eval and starts its batch; principal is who asked.
	Run(ctx context.Context, req api.EvalRunRequest, principal string) (api.EvalBatch, error)
	// List lists batches, newest first, without their cases, and the
	// cursor of the next page.
	List(ctx context.Context, p store.Page) ([]api.EvalBatch, string, error)
	// Get returns a batch with its cases' results.
	Get(ctx context.Context, id string) (api.EvalBatch, error)
}

// noEvals are the evals of a server given none: every route answers
// no_jobs (503), saying how to configure them.
type noEvals struct{}

func (noEvals) err() error {
	return api.Errorf(api.CodeNoJobs, "evals: this server runs no evals: build it with serve.Options.Evals (evals.New, on a host whose store runs durable jobs)")
}

func (n noEvals) Run(context.Context, api.EvalRunRequest, string) (api.EvalBatch, error) {
	return api.EvalBatch{}, n.err()
}

func (n noEvals) List(context.Context, store.Page) ([]api.EvalBatch, string, error) {
	return nil, "", n.err()
}

func (n noEvals) Get(context.Context, string) (api.EvalBatch, error) {
	return api.EvalBatch{}, n.err()
}

func (s *Server) runEval(w http.ResponseWriter, r *http.Request) {
	body, err := s.readBody(w, r)
	var req api.EvalRunRequest
	if err == nil {
		err = decodeJSON(body, &req)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	b, err := s.evals.Run(r.Context(), req, principalOf(r).ID)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.EvalBatchResponse{OK: true, EvalBatch: b})
}

func (s *Server) listEvals(w http.ResponseWriter, r *http.Request) {
	limit, err := queryInt(r, "limit", 50, 1, 1000)
	if err != nil {
		writeError(w, err)
		return
	}
	page, next, err := s.evals.List(r.Context(), store.Page{Limit: int(limit), Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		writeError(w, err)
		return
	}
	if page == nil {
		page = []api.EvalBatch{}
	}
	writeJSON(w, http.StatusOK, api.EvalList{OK: true, Batches: page, Next: next})
}

func (s *Server) getEval(w http.ResponseWriter, r *http.Request) {
	b, err := s.evals.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.EvalBatchResponse{OK: true, EvalBatch: b})
}
