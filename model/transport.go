package model

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RetryAfter reads how long an answer asks to wait before the request is
// tried again: retry-after-ms (milliseconds, which OpenAI and Anthropic
// send), else Retry-After in seconds or as an HTTP date (RFC 9110),
// counted from now. It is 0 when the answer says nothing usable, or names
// a time already past.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < float64(maxWait/time.Millisecond) {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < float64(maxWait/time.Second) {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxWait)
	}
	return 0
}

// maxWait bounds a Retry-After a provider sends: beyond it the figure is
// nonsense (and would overflow a Duration).
const maxWait = 24 * time.Hour

// IsBrokenConnection reports whether err is a connection that broke under
// a request: reset or closed by the other end before the answer was
// whole. Providers classify it [ReasonOverloaded], as a retry may well
// succeed.
func IsBrokenConnection(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE)
}
