package serve

import (
	"net/http"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/host"
	"github.com/agentsdk/agentsdk/store"
)

// usage answers GET /usage?from=&to=&by=: what model calls consumed.
func (s *Server) usage(w http.ResponseWriter, r *http.Request) {
	q := host.UsageQuery{By: store.UsageGrouping(r.URL.Query().Get("by"))}
	var err error
	if q.From, err = queryTime(r, "from"); err != nil {
		writeError(w, err)
		return
	}
	if q.To, err = queryTime(r, "to"); err != nil {
		writeError(w, err)
		return
	}
	if q.From.IsZero() {
		q.From = time.Unix(0, 0)
	}
	rep, err := s.host.Usage(r.Context(), q)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// queryTime reads a query parameter holding an instant (RFC 3339) or a
// date (YYYY-MM-DD, its start in UTC); zero when absent.
func queryTime(r *http.Request, name string) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, api.Errorf(api.CodeBadQuery, "%s=%q: want an RFC 3339 time (2026-12-01T09:00:00Z) or a date (2026-12-01)", name, v)
}
