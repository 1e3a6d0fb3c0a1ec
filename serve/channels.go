package serve

import (
	"fmt"
	"net/http"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/channel"
)

// ChannelPath returns where a channel's routes are mounted:
// /<slug>/channels/<id>.
func ChannelPath(slug, channelID string) string { return "/" + slug + "/channels/" + channelID }

// mountChannels mounts the routes of the host's channels. A route with the
// host's bearer token is admitted like the API's; a route with a verifier
// of its own is admitted without the token, its body read under the
// limits of such bodies (unauth.go: its own size, a short timeout, a few at
// once), and its verifier run on the body before the handler: a refusal is
// 401 and nothing runs.
func (s *Server) mountChannels(known *http.ServeMux) (err error) {
	defer func() {
		if v := recover(); v != nil { // ServeMux panics on a pattern it cannot take
			err = fmt.Errorf("mounting channel routes: %v", v)
		}
	}()
	for _, c := range s.host.Channels() {
		for _, rt := range c.Routes() {
			pattern := rt.Method + " " + ChannelPath(s.slug, c.ID()) + rt.Path
			h := s.channelRoute(c, rt)
			s.mux.Handle(pattern, h)
			known.Handle(pattern, h)
			s.patterns = append(s.patterns, pattern)
			if !rt.Auth.IsBearer() {
				s.verified[pattern] = true
				s.unauth.limit(pattern, routeLimit(rt))
			}
		}
	}
	return nil
}

// verifiedRoute reports whether r is for a channel route with a verifier
// of its own (which the handler runs, in place of the token).
func (s *Server) verifiedRoute(r *http.Request) bool {
	if len(s.verified) == 0 {
		return false
	}
	_, pattern := s.mux.Handler(r)
	return s.verified[pattern]
}

// routeLimit is the size limit of a channel route's body.
func routeLimit(rt channel.Route) int64 {
	if rt.MaxBodyBytes == 0 {
		return channel.MaxBodyBytesDefault
	}
	return rt.MaxBodyBytes
}

func (s *Server) channelRoute(c *channel.Channel, rt channel.Route) http.HandlerFunc {
	limit := routeLimit(rt)
	return func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if pre, ok := r.Body.(*prereadBody); ok {
			body = pre.data
		}
		if int64(len(body)) > limit {
			writeError(w, api.AsError(&http.MaxBytesError{Limit: limit}))
			return
		}
		if !rt.Auth.IsBearer() {
			if err := rt.Auth.Check(r, body); err != nil {
				s.logger.Warn("refused a channel request", "channel", c.ID(), "path", r.URL.Path, "err", err)
				w.Header().Set("Connection", "close")
				writeError(w, &api.Error{Code: api.CodeUnauthorized, Message: "the request failed the channel's verification: " + err.Error()})
				return
			}
		}
		rt.Handler(s.host.Handle(), w, r)
	}
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) {
	list, err := s.host.ListSchedules(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ScheduleList{OK: true, Schedules: list})
}

func (s *Server) runSchedule(w http.ResponseWriter, r *http.Request) {
	run, err := s.host.RunSchedule(r.Context(), r.PathValue("name"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, api.ScheduleRunResponse{OK: true, ScheduleRun: run})
}
