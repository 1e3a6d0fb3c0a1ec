package agentmain

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/agentsdk/agentsdk/host"
)

// handover is what a parent process hands a host it starts: agent-sdk
// serve --watch keeps the listening socket and passes it to each host it
// builds (--listen-fd), so the port answers throughout a swap; the new
// host says it serves on --ready-fd, and the old one is then told to
// drain. --parent-fd is a pipe the parent holds open: when it closes (the
// parent is gone, even by kill -9), the host drains and exits rather than
// serving on, orphaned.
type handover struct {
	listener net.Listener
	ready    *os.File
	parent   *os.File
}

// openHandover opens the descriptors the flags name (0: none).
func openHandover(listenFD, readyFD, parentFD int) (*handover, error) {
	var h handover
	if listenFD > 0 {
		f := os.NewFile(uintptr(listenFD), "listener")
		ln, err := net.FileListener(f) // a duplicate, close-on-exec
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("--listen-fd %d: %w", listenFD, err)
		}
		h.listener = ln
	}
	for _, fd := range []struct {
		n    int
		name string
		to   **os.File
	}{{readyFD, "--ready-fd", &h.ready}, {parentFD, "--parent-fd", &h.parent}} {
		if fd.n <= 0 {
			continue
		}
		syscall.CloseOnExec(fd.n) // not for the tools' processes
		*fd.to = os.NewFile(uintptr(fd.n), fd.name)
		if *fd.to == nil {
			return nil, fmt.Errorf("%s %d: not an open file", fd.name, fd.n)
		}
	}
	return &h, nil
}

// serving tells the parent that the host accepts connections.
func (h *handover) serving() {
	if h.ready != nil {
		fmt.Fprintln(h.ready, "serving")
		h.ready.Close()
	}
}

// orphaned returns a context cancelled, as ctx is, and also when the
// parent's pipe closes.
func (h *handover) orphaned(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if h.parent != nil {
		go func() {
			io.Copy(io.Discard, h.parent)
			cancel()
		}()
	}
	return ctx, cancel
}

// handedOver reports whether the host serves a socket handed over by
// serve --watch.
func (h *handover) handedOver() bool { return h.listener != nil }

// finishTurns waits, once a handed-over host has stopped serving (the new
// build serves on the socket), for the turns it runs to end or park, up
// to timeout: an edit should not interrupt a turn. What still runs then
// is interrupted by closing the host (turn.failed, interrupted).
func finishTurns(h *host.Host, timeout time.Duration, logger *slog.Logger) {
	running := h.RunningTurns()
	if len(running) == 0 {
		return
	}
	logger.Info("waiting for the running turns to end before exiting: the new build serves", "turns", len(running), "timeout", timeout)
	deadline := time.Now().Add(timeout)
	for len(running) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		running = h.RunningTurns()
	}
	if len(running) > 0 {
		logger.Warn("interrupting the turns still running", "sessions", running)
	}
}
