// Package textlog is log/slog's text format, written faster for the flat
// records a host logs on every request: a [Handler] formats a record whose
// attributes are all strings, numbers, booleans and durations itself, byte
// for byte as slog.NewTextHandler(w, nil) would, and hands every other
// record, and every logger derived with With or WithGroup, to such a
// handler. It skips what slog's general path does for each record (a
// handle state from a pool, an iterator closure per attribute, the checks
// for groups, replacements and LogValuers), about half of the request
// line's cost.
package textlog

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Handler writes slog's text format with slog.HandlerOptions' defaults:
// level Info and up, no source, no replacements.
type Handler struct {
	w   io.Writer
	std slog.Handler // slog.NewTextHandler(w, nil): records and loggers this one does not format
}

// New returns a Handler writing to w, which must be safe for concurrent use
// and take each Write as a whole line (a *logwriter.Writer is, and so is an
// *os.File for lines this short).
func New(w io.Writer) *Handler {
	return &Handler{w: w, std: slog.NewTextHandler(w, nil)}
}

// Enabled reports whether level is Info or above, as slog's default.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo
}

// WithAttrs returns slog's own text handler with attrs.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler { return h.std.WithAttrs(attrs) }

// WithGroup returns slog's own text handler with the group.
func (h *Handler) WithGroup(name string) slog.Handler { return h.std.WithGroup(name) }

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Handle writes r as slog's text handler would: formatted here when every
// attribute is a string, integer, float, boolean or duration with a key,
// else by slog's handler.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	bp := buffers.Get().(*[]byte)
	b, ok := appendRecord((*bp)[:0], r)
	if !ok {
		buffers.Put(bp)
		return h.std.Handle(ctx, r)
	}
	return h.write(bp, b)
}

// write writes the line b, built in the pooled buffer bp, and returns the
// buffer to the pool, unless one long line grew it large.
func (h *Handler) write(bp *[]byte, b []byte) error {
	_, err := h.w.Write(b)
	if cap(b) <= 16<<10 {
		*bp = b
		buffers.Put(bp)
	}
	return err
}

// Request writes the line of a record at level Info with message "request"
// and the attributes method, path, status, duration and, when callID is
// not empty, call_id, exactly as Handle writes such a record: a host's
// request line, without building the record.
func (h *Handler) Request(t time.Time, method, path string, status int, d time.Duration, callID string) error {
	bp := buffers.Get().(*[]byte)
	b := append((*bp)[:0], "time="...)
	b = appendRFC3339Millis(b, t.Round(0))
	b = append(b, " level=INFO msg=request method="...)
	b = appendString(b, method)
	b = append(b, " path="...)
	b = appendString(b, path)
	b = append(b, " status="...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, " duration="...)
	b = append(b, d.String()...)
	if callID != "" {
		b = append(b, " call_id="...)
		b = appendString(b, callID)
	}
	return h.write(bp, append(b, '\n'))
}

// appendRecord appends r's line to b; false if an attribute is of a kind
// it leaves to slog.
func appendRecord(b []byte, r slog.Record) ([]byte, bool) {
	if !r.Time.IsZero() {
		b = append(b, "time="...)
		b = appendRFC3339Millis(b, r.Time.Round(0))
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = appendString(b, r.Level.String())
	b = append(b, " msg="...)
	b = appendString(b, r.Message)
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "" {
			ok = false // empty attrs are dropped, others kept: slog's call
			return false
		}
		v := a.Value
		switch v.Kind() {
		case slog.KindString:
			b = append(b, ' ')
			b = appendString(b, a.Key)
			b = append(b, '=')
			b = appendString(b, v.String())
		case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration:
			b = append(b, ' ')
			b = appendString(b, a.Key)
			b = append(b, '=')
			b = appendScalar(b, v)
		default:
			ok = false
		}
		return ok
	})
	return append(b, '\n'), ok
}

// appendScalar appends a number, boolean or duration as slog.Value does.
func appendScalar(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		return strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	}
	return append(b, v.Duration().String()...)
}

// appendString appends s, quoted if slog's text handler would quote it.
func appendString(b []byte, s string) []byte {
	if needsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

// needsQuoting is slog's rule: empty, or holding a space, '=', '"', an
// ASCII control character, or a rune that is invalid, a space or not
// printable.
func needsQuoting(s string) bool {
	if len(s) == 0 {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == ' ' || c == '=' || c == '"' || c < 0x20 {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// appendRFC3339Millis is slog's time format: RFC 3339 with exactly three
// digits of milliseconds. The text around the milliseconds is formatted
// once per second (and location) and reused: a log line's time is most of
// its formatting cost otherwise.
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	sec, loc := t.Unix(), t.Location()
	s := lastSecond.Load()
	if s == nil || s.unix != sec || s.loc != loc {
		s = formatSecond(t)
		lastSecond.Store(s)
	}
	if len(s.head) != len("2006-01-02T15:04:05") {
		// A year outside 0–9999: slog cuts its fraction at a fixed offset,
		// and so drops a digit other than the fourth.
		const prefixLen = len("2006-01-02T15:04:05.000")
		n := len(b)
		b = t.Truncate(time.Millisecond).Add(time.Millisecond/10).AppendFormat(b, time.RFC3339Nano)
		return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
	}
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, s.head...)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, s.zone...)
}

// second is a second's time as appendRFC3339Millis writes it, around its
// milliseconds.
type second struct {
	unix       int64
	loc        *time.Location
	head, zone string // "2006-01-02T15:04:05" and "Z07:00", as RFC3339Nano writes them
}

// lastSecond is the second last formatted.
var lastSecond atomic.Pointer[second]

// formatSecond formats t's second as slog does: RFC3339Nano of a time with
// a fourth fractional digit, so that the fraction is written with exactly
// four (".0001"), around which head and zone are cut.
func formatSecond(t time.Time) *second {
	f := string(t.Truncate(time.Second).Add(time.Millisecond/10).AppendFormat(nil, time.RFC3339Nano))
	dot := strings.LastIndex(f, ".0001")
	return &second{unix: t.Unix(), loc: t.Location(), head: f[:dot], zone: f[dot+len(".0001"):]}
}
