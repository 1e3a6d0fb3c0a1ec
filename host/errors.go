package host

import (
	"errors"
	"fmt"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// storeError maps a store error to the API's, once, for every caller of the
// host: a missing record is notFound, a running turn session_busy, a
// foreign cursor bad_cursor; anything else is internal, with the store's
// error as its cause.
func storeError(err error, notFound *api.Error) error {
	switch {
	case err == nil:
		return nil
	case isAPIError(err):
		return err // already the API's (a quota, …)
	case errors.Is(err, store.ErrNotFound) && notFound != nil:
		return notFound
	case errors.Is(err, store.ErrBusy):
		return api.Wrap(api.CodeSessionBusy, errSessionBusy)
	case errors.Is(err, store.ErrBadCursor):
		return api.Wrap(api.CodeBadCursor, err)
	}
	return api.Wrap(api.CodeInternal, err)
}

var errSessionBusy = errors.New("session_busy: another turn is running in this session")

// sessionNotFound is the error for a session id nobody knows.
func sessionNotFound(id string) *api.Error {
	return api.Errorf(api.CodeSessionNotFound, "session not found: %s", id)
}

// approvalNotFound is the error for a call id no parked call has.
func approvalNotFound(callID string) *api.Error {
	return api.Errorf(api.CodeApprovalNotFound, "%s: %s", api.ErrApprovalNotFound.Message, callID)
}

// ApprovalPendingError is returned by CallTool when a gated call is still
// waiting for a decision after CallOptions.Wait: the call is parked, not
// refused; fetch its outcome later with CallOutcome.
type ApprovalPendingError struct {
	CallID   string
	Approval api.Approval
}

func (e *ApprovalPendingError) Error() string {
	return fmt.Sprintf("call %s is waiting for approval: approve it with agent-sdk approve %s, or deny it with agent-sdk deny %s --reason …", e.CallID, e.CallID, e.CallID)
}

func isAPIError(err error) bool {
	var ae *api.Error
	return errors.As(err, &ae)
}
