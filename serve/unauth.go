package serve

import (
	"net/http"
	"sync/atomic"

	"github.com/agentsdk/agentsdk/api"
)

// A request admitted without a credential still has its body read before
// anything else: a signed channel route's verifier (channel.Verify,
// channel.HMACSHA256) needs it whole, and the playground's sign-in form
// holds the token. Read under the bearer's limits (--body-timeout, 30 s;
// --max-body-bytes, 4 MiB), a client without the token could hold a
// connection per slow body for as long, and so fill --max-conns with
// requests in progress that no new connection may take the place of
// (issue 26, item 1). So such a body is read under limits of its own: its
// route's size, checked against Content-Length before a byte is read; a
// short timeout, Options.UnauthBodyTimeout; and a few at once,
// Options.MaxUnauthBodies, one more being refused at once (503
// over_capacity, its body unread, its connection closed and free for the
// next).

// maxPublicBody bounds the body of a public route: the sign-in form's, and
// of the routes that take none (/healthz, the playground's pages), no
// more than a form's worth is read.
const maxPublicBody = maxSigninBody

// unauthBodies is how the bodies of requests admitted without a credential
// are read.
type unauthBodies struct {
	rule    bodyRule         // Options.UnauthBodyTimeout, and maxPublicBody unless the route says otherwise
	limits  map[string]int64 // each route's size limit, by mounted pattern
	ceiling int64            // the bearer's size limit, over every route's
	readers chan struct{}    // a place per body read at once; nil: no limit
	refused atomic.Int64     // bodies refused for want of a place
}

func newUnauthBodies(o Options, bearer bodyRule) *unauthBodies {
	u := &unauthBodies{limits: map[string]int64{}, ceiling: bearer.max}
	u.rule = bodyRule{max: min(maxPublicBody, bearer.max), timeout: orDefault(o.UnauthBodyTimeout, UnauthBodyTimeoutDefault),
		timeoutName: "the limit of a body sent without the host's token"}
	if bearer.timeout > 0 && (u.rule.timeout == 0 || bearer.timeout < u.rule.timeout) {
		u.rule.timeout = bearer.timeout
	}
	if n := orDefault(o.MaxUnauthBodies, MaxUnauthBodiesDefault); n > 0 {
		u.readers = make(chan struct{}, n)
	}
	return u
}

// limit sets the size limit of a route admitted without a credential, at
// most the bearer's.
func (u *unauthBodies) limit(pattern string, max int64) {
	u.limits[pattern] = min(max, u.ceiling)
}

// admitUnauth reads the body of r, a request admitted without a
// credential, under the limits of such bodies, or refuses r: 413 at once
// for a declared length over its route's limit, 503 over_capacity at once
// when as many such bodies as allowed are being read, 408 for a body that
// misses the timeout. The verifier, or the form's handler, then runs.
func (s *Server) admitUnauth(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return true
	}
	rule := s.unauth.rule
	_, pattern := s.mux.Handler(r)
	if max, ok := s.unauth.limits[pattern]; ok {
		rule.max = max
	}
	if r.ContentLength > rule.max {
		refuse(w, r, api.AsError(&http.MaxBytesError{Limit: rule.max}), refusalGrace)
		return false
	}
	if s.unauth.readers != nil {
		select {
		case s.unauth.readers <- struct{}{}:
			defer func() { <-s.unauth.readers }()
		default:
			if n := s.unauth.refused.Add(1); n == 1 || n%1000 == 0 {
				s.logger.Warn("refusing bodies sent without the host's token: as many as allowed are being read", "max_unauth_bodies", cap(s.unauth.readers), "path", r.URL.Path, "refused", n)
			}
			w.Header().Set("Retry-After", "1")
			refuse(w, r, api.Errorf(api.CodeOverCapacity, "the host is reading as many request bodies sent without its token as it allows; retry later"), refusalGrace)
			return false
		}
	}
	return s.admitBody(w, r, rule)
}
