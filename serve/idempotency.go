package serve

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/store"
)

// Idempotent retries. A POST that starts something (a tool call, a
// session, a message, an eval batch: the routes that are
// api.Route.Idempotent, whose handlers New wraps) may carry an
// Idempotency-Key. The first request
// with a key runs, and its answer is kept (in the agent's store, so across
// restarts and hosts) for IdempotencyTTL; a retry with the same key and the
// same request gets that answer again, with Idempotent-Replayed: true,
// running nothing. The same key with another request (method, path, body,
// or the representation asked for: Accept: text/event-stream or not) is
// refused with 422 idempotency_key_reused; a retry while the first
// still runs waits up to idempotencyWait for it, then gets 409
// idempotency_in_progress. An answer of 5xx is not kept: a retry runs
// again. A first request still running after idempotencyLease counts as
// abandoned (its host died): a retry then runs again.
const (
	// IdempotencyHeader carries a request's Idempotency-Key
	// (api.IdempotencyHeader).
	IdempotencyHeader = api.IdempotencyHeader
	// ReplayedHeader marks an answer given again to a retry.
	ReplayedHeader = "Idempotent-Replayed"
	// IdempotencyTTLDefault is how long answers are kept by default.
	IdempotencyTTLDefault = 24 * time.Hour
	// idempotencyWait is how long a retry waits for the first request.
	idempotencyWait = 10 * time.Second
	// idempotencyLease is how long a first request may run before a retry
	// counts it as abandoned: longer than any call's approval wait and
	// tool timeout.
	idempotencyLease = 15 * time.Minute
	// maxIdempotencyKey is the longest key taken.
	maxIdempotencyKey = api.MaxIdempotencyKey
)

// idempotently wraps the handler of a route that is api.Route.Idempotent
// (New does, as it mounts the routes).
func (s *Server) idempotently(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.idempotent(w, r, next) }
}

// idempotent runs next for r at most once per Idempotency-Key; without one
// it just runs it.
func (s *Server) idempotent(w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	key := r.Header.Get(IdempotencyHeader)
	if key == "" {
		next(w, r)
		return
	}
	if !validIdempotencyKey(key) {
		writeError(w, api.Errorf(api.CodeBadIdempotencyKey, "%s: use 1 to %d printable ASCII characters", IdempotencyHeader, maxIdempotencyKey))
		return
	}
	body, err := s.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	sum := sha256.New()
	io.WriteString(sum, r.Method+" "+r.URL.Path+"\n")
	if wantsStream(r) {
		// The representation is part of the request: an SSE answer is
		// never replayed to a request for JSON, nor JSON to one for a
		// stream (idempotency_key_reused). Only what the handlers read of
		// Accept counts, so every Accept that gets JSON hashes alike, as
		// before this line (keys kept by an older host still match).
		io.WriteString(sum, "accept: text/event-stream\n")
	}
	sum.Write(body)
	keys := s.host.Idempotency()
	p := store.BeginIdempotentParams{Scope: principalOf(r).ID, Key: key, Hash: hex.EncodeToString(sum.Sum(nil)),
		TTL: s.idempotencyTTL(), Lease: idempotencyLease}
	deadline := time.Now().Add(idempotencyWait)
	for {
		rec, claimed, err := keys.BeginIdempotent(r.Context(), p)
		switch {
		case err != nil:
			writeError(w, err)
			return
		case claimed:
		case rec.Hash != p.Hash:
			writeError(w, api.ErrIdempotencyKeyReused)
			return
		case rec.Done:
			replay(w, rec.Answer)
			return
		case time.Now().After(deadline):
			writeError(w, api.ErrIdempotencyInProgress)
			return
		default:
			select {
			case <-time.After(100 * time.Millisecond):
				continue
			case <-r.Context().Done():
				return
			}
		}
		break
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	rec := &capture{ResponseWriter: w, status: http.StatusOK}
	next(rec, r)
	// Kept even if the client went away: the retry is coming.
	ctx := context.WithoutCancel(r.Context())
	if rec.status >= 500 {
		keys.ForgetIdempotent(ctx, p.Scope, p.Key)
		return
	}
	answer := store.IdempotentAnswer{Status: rec.status, ContentType: rec.Header().Get("Content-Type"),
		CallID: rec.Header().Get(CallIDHeader), Body: rec.body.Bytes()}
	if err := keys.FinishIdempotent(ctx, p.Scope, p.Key, answer); err != nil {
		s.logger.Error("keeping an idempotent answer", "key", key, "err", err)
	}
}

// replay writes a kept answer again.
func replay(w http.ResponseWriter, a store.IdempotentAnswer) {
	h := w.Header()
	if a.ContentType != "" {
		h.Set("Content-Type", a.ContentType)
	}
	if a.CallID != "" {
		h[CallIDHeader] = []string{a.CallID}
	}
	h.Set(ReplayedHeader, "true")
	h.Set("Content-Length", strconv.Itoa(len(a.Body)))
	w.WriteHeader(a.Status)
	w.Write(a.Body)
}

// validIdempotencyKey: 1 to 255 printable ASCII characters.
func validIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > maxIdempotencyKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// capture writes an answer through while keeping a copy.
type capture struct {
	http.ResponseWriter
	status int
	wrote  bool
	body   bytes.Buffer
}

func (c *capture) WriteHeader(code int) {
	if !c.wrote {
		c.status, c.wrote = code, true
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *capture) Write(b []byte) (int, error) {
	c.wrote = true
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

func (c *capture) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// idempotencyTTL is how long answers are kept: Options.IdempotencyTTL.
func (s *Server) idempotencyTTL() time.Duration {
	if s.idemTTL > 0 {
		return s.idemTTL
	}
	return IdempotencyTTLDefault
}
