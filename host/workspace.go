package host

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentsdk/agentsdk/internal/agenttool"
	"github.com/agentsdk/agentsdk/tool"
)

// workspace is the directory a call works in: its session's, which stays,
// or for a call outside any session a scratch directory of its own, removed
// when the call returns. It is created on first use with the agent tools
// materialised in it, and made again if a handler removed it.
type workspace struct {
	root    string // the state root
	id      string // the session's id, or the scratch call's
	tools   *tool.Set
	scratch bool
	dir     string // set by open (computed there: off the hot path of calls that never ask)

	mu      sync.Mutex
	made    bool // the directory was made (a scratch one is removed)
	created bool // materialised once
	closed  bool // a scratch workspace after its call returned
}

// WorkspaceDir returns a session's workspace directory.
func (s Sessions) WorkspaceDir(sessionID string) string {
	return (&workspace{root: s.h.opts.StateRoot, id: sessionID}).path()
}

// sessionWorkspace returns the workspace of a call in a session.
func (h *Host) sessionWorkspace(sessionID string) *workspace {
	return &workspace{root: h.opts.StateRoot, id: sessionID, tools: h.tools}
}

// scratchWorkspace returns the workspace of a call outside any session:
// <StateRoot>/tool-calls/<callID>.
func (h *Host) scratchWorkspace(callID string) *workspace {
	return &workspace{root: h.opts.StateRoot, id: callID, tools: h.tools, scratch: true}
}

// path returns the directory: <root>/tool-calls/<id> for a scratch
// workspace, <root>/sessions/<id>/workspace for a session's.
func (w *workspace) path() string {
	if w.scratch {
		return filepath.Join(w.root, "tool-calls", w.id)
	}
	return filepath.Join(w.root, "sessions", w.id, "workspace")
}

// open returns the directory, creating it if need be.
func (w *workspace) open() (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return "", fmt.Errorf("%w: the call has returned and its scratch workspace is gone", tool.ErrNoWorkspace)
	}
	if w.dir == "" {
		w.dir = w.path()
	}
	// MkdirAll each time, so the directory exists even if the handler
	// removed it since it last asked.
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return "", fmt.Errorf("creating workspace: %w", err)
	}
	w.made = true
	if !w.created {
		if err := agenttool.Materialize(w.dir, w.tools); err != nil {
			return "", fmt.Errorf("creating workspace: %w", err)
		}
		w.created = true
	}
	return w.dir, nil
}

// close removes a scratch workspace, if it was created, and refuses it
// from then on; a session's stays.
func (w *workspace) close(logger *slog.Logger) {
	if !w.scratch {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if !w.made {
		return
	}
	if err := os.RemoveAll(w.dir); err != nil {
		logger.Warn("removing scratch workspace", "dir", w.dir, "err", err)
	}
}

// runsDir is where the host records the agent tool runs it has running:
// a host started after it died ends them ([agenttool.Reap]).
func (h *Host) runsDir() string { return filepath.Join(h.opts.StateRoot, "agent-tool-runs") }

// startScripts ends what the agent tool runs of dead hosts on this state
// directory left running, and says at startup if scripts cannot be
// confined to their session's workspace here.
func (h *Host) startScripts() {
	if n, err := agenttool.Reap(h.runsDir()); n > 0 || err != nil {
		h.logger.Info("ended the agent tool runs a dead host left running", "runs", n, "err", err)
	}
	for _, t := range h.tools.Tools() {
		if t.Execution() == tool.Agent {
			if why := agenttool.Isolation(); why != "" {
				h.logger.Warn(why)
			}
			return
		}
	}
}
