package evals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// toolService is call.Host.Evals (tool.Evals) on a service.
type toolService struct{ s *Service }

func (t toolService) Run(ctx context.Context, eval json.RawMessage) (string, error) {
	var req api.EvalRunRequest
	dec := json.NewDecoder(bytes.NewReader(eval))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return "", fmt.Errorf("evals: the eval is not an eval's JSON ({\"name\", \"cases\": […]}): %w", err)
	}
	b, err := t.s.Run(ctx, req, "tool")
	if err != nil {
		return "", toolError(err)
	}
	return b.ID, nil
}

func (t toolService) Get(ctx context.Context, batchID string) (json.RawMessage, error) {
	b, err := t.s.Get(ctx, batchID)
	if err != nil {
		return nil, toolError(err)
	}
	return json.Marshal(b)
}

// toolError is an error of call.Host.Evals: no_jobs is the service's
// tool.ErrNotConfigured.
func toolError(err error) error {
	if errors.Is(err, &api.Error{Code: api.CodeNoJobs}) {
		return fmt.Errorf("evals: %w: %w", tool.ErrNotConfigured, err)
	}
	return fmt.Errorf("evals: %w", err)
}
