package serve

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// healthEvery is how long a health check's result is reused: /healthz is
// probed often, and the check reads the store and makes a file.
const healthEvery = time.Second

// healthCache keeps the host's last health check (host.Host.Healthy).
type healthCache struct {
	mu  sync.Mutex
	at  time.Time
	err error
}

// checkHealth returns the host's health, checking again when the last check is
// older than healthEvery. Concurrent probes wait for one check.
func (s *Server) checkHealth(ctx context.Context) error {
	c := &s.health
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.at) >= healthEvery {
		c.err = s.host.Healthy(context.WithoutCancel(ctx))
		c.at = time.Now()
	}
	return c.err
}

// healthz answers liveness: 200 {"ok":true} while the host can reach its
// store and open a file in its state directory, else 503 unhealthy.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	if err := s.checkHealth(r.Context()); err != nil {
		writeError(w, api.Errorf(api.CodeUnhealthy, "unhealthy: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, api.OKResponse{OK: true})
}

// readyz answers readiness: what healthz does, and 503 once the server
// is shutting down, so that a load balancer sends it nothing new.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.closing:
		writeError(w, api.Errorf(api.CodeUnhealthy, "not ready: the server is shutting down"))
		return
	default:
	}
	s.healthz(w, r)
}
