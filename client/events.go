package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/agentsdk/agentsdk/api"
)

// maxEventLine bounds one line of an event stream.
const maxEventLine = 64 << 20

// reconnectDelay is the wait before the second reconnection of a dropped
// stream; it doubles for each further one (the first is at once).
const reconnectDelay = 500 * time.Millisecond

// Events follows a session's event stream, yielding its events after seq
// after (0 for all) as they come, until ctx ends or the loop stops; it
// never ends by itself. When the connection drops it reconnects, resuming
// with Last-Event-ID after the last event yielded, so no event is missed
// or repeated (Options.Reconnects bounds the tries in a row). An error
// ends the sequence: an error answer ([*StatusError]), the host out of
// reach, or a stream that cannot be read.
func (c *Client) Events(ctx context.Context, sessionID string, after int64) iter.Seq2[api.Event, error] {
	return func(yield func(api.Event, error) bool) {
		c.follow(ctx, sessionID, after, yield)
	}
}

// follow is the loop of Events: connect, read until the stream drops,
// reconnect after the last event yielded.
func (c *Client) follow(ctx context.Context, sessionID string, last int64, yield func(api.Event, error) bool) {
	failures := 0 // drops and failed reconnections in a row
	var cause error
	for reconnecting := false; ; reconnecting = true {
		if reconnecting {
			if failures > c.reconnects {
				yield(api.Event{}, fmt.Errorf("following the events of session %s: the stream dropped and did not resume: %w", sessionID, cause))
				return
			}
			if !sleep(ctx, backoff(failures)) {
				return
			}
		}
		resp, err := c.openStream(ctx, sessionID, last)
		if ctx.Err() != nil {
			if err == nil {
				resp.Body.Close()
			}
			return
		}
		if err != nil {
			if !reconnecting || !retryable(err) {
				yield(api.Event{}, err)
				return
			}
			failures, cause = failures+1, err
			continue
		}
		progress, stop, err := readStream(sessionID, resp.Body, &last, yield)
		resp.Body.Close()
		if stop || ctx.Err() != nil {
			return
		}
		if progress {
			failures = 0
		}
		if err == nil {
			err = ErrStreamEnded
		}
		failures, cause = failures+1, err
	}
}

// retryable says whether reconnecting may mend err: the host out of reach
// or a 5xx answer (a proxy's, a host restarting).
func retryable(err error) bool {
	var status *StatusError
	if errors.As(err, &status) {
		return status.Status >= 500
	}
	var reach *url.Error
	return errors.As(err, &reach)
}

// ErrStreamEnded is wrapped by the error of an event stream the host ended
// (it shut down) and that did not resume: with Options.Reconnects negative,
// the first time it ends.
var ErrStreamEnded = errors.New("the host ended the stream")

// errNotStream is the error of a 2xx answer that is not an event stream.
var errNotStream = errors.New("the answer is not an event stream")

// openStream connects to a session's event stream, resuming after seq
// last.
func (c *Client) openStream(ctx context.Context, sessionID string, last int64) (*http.Response, error) {
	h := http.Header{"Accept": {"text/event-stream"}}
	if last != 0 {
		h.Set("Last-Event-ID", strconv.FormatInt(last, 10))
	}
	resp, err := c.send(ctx, c.stream, "events", []string{sessionID}, nil, nil, h)
	if err != nil {
		return nil, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		resp.Body.Close()
		return nil, fmt.Errorf("following the events of session %s: %w (Content-Type %q)", sessionID, errNotStream, resp.Header.Get("Content-Type"))
	}
	return resp, nil
}

// readStream yields the events of one connection after seq *last, moving
// *last on. progress says whether anything came, even a heartbeat; stop
// whether the sequence is over (the loop stopped, or an error that
// reconnecting cannot mend was yielded); err why the stream ended.
func readStream(sessionID string, body io.Reader, last *int64, yield func(api.Event, error) bool) (progress, stop bool, err error) {
	r := newSSEReader(body)
	for {
		ev, err := r.next()
		if err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				yield(api.Event{}, fmt.Errorf("following the events of session %s: a line is longer than %d bytes", sessionID, maxEventLine))
				return true, true, nil
			}
			if err == io.EOF {
				err = nil
			}
			return r.lines > 0, false, err
		}
		var e api.Event
		if err := json.Unmarshal(ev.data, &e); err != nil {
			yield(api.Event{}, fmt.Errorf("following the events of session %s: decoding event %s: %w", sessionID, ev.id, err))
			return true, true, nil
		}
		if e.Seq <= *last {
			continue
		}
		*last = e.Seq
		if !yield(e, nil) {
			return true, true, nil
		}
	}
}

// backoff is the wait before a reconnection, after failures drops and
// failed tries in a row.
func backoff(failures int) time.Duration {
	if failures <= 1 {
		return 0
	}
	return reconnectDelay << min(failures-2, 4)
}

// sleep waits d, or returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// sseEvent is one event of a Server-Sent Events stream.
type sseEvent struct {
	id    string // the last event ID so far
	event string
	data  []byte
}

// sseReader reads Server-Sent Events as the HTML standard parses them:
// lines ending in CRLF, LF or CR; "field: value" or "field:value";
// comments (": ping"); data spread over several lines, joined with LF.
type sseReader struct {
	sc      *bufio.Scanner
	lines   int
	id      string
	event   string
	data    []byte
	skipLF  bool // the last line ended with CR: a LF next is part of it
	scanned int  // how much of the line being read has no CR or LF
}

func newSSEReader(r io.Reader) *sseReader {
	s := &sseReader{sc: bufio.NewScanner(r)}
	s.sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	s.sc.Split(s.splitLines)
	return s
}

// next returns the next event; io.EOF at the end of the stream.
func (r *sseReader) next() (sseEvent, error) {
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if r.lines++; r.lines == 1 {
			line = bytes.TrimPrefix(line, []byte("\uFEFF"))
		}
		if len(line) == 0 {
			if len(r.data) == 0 {
				r.event = ""
				continue
			}
			ev := sseEvent{id: r.id, event: r.event, data: r.data[:len(r.data)-1]}
			r.event, r.data = "", nil
			return ev, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			r.data = append(append(r.data, value...), '\n')
		case "event":
			r.event = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.id = string(value)
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		return sseEvent{}, err
	}
	return sseEvent{}, io.EOF
}

// splitLines splits lines ending in CRLF, LF or CR, without waiting for
// the byte after a CR. It scans each byte once, however long the line.
func (r *sseReader) splitLines(data []byte, atEOF bool) (int, []byte, error) {
	if r.skipLF && len(data) > 0 {
		r.skipLF = false
		if data[0] == '\n' {
			return 1, nil, nil
		}
	}
	i := indexEOL(data[r.scanned:])
	if i < 0 {
		if atEOF && len(data) > 0 {
			r.scanned = 0
			return len(data), data, nil
		}
		r.scanned = len(data) // the next call has the same start, and more
		return 0, nil, nil
	}
	i += r.scanned
	r.scanned = 0
	switch {
	case data[i] == '\n':
		return i + 1, data[:i], nil
	case i+1 < len(data) && data[i+1] == '\n':
		return i + 2, data[:i], nil
	case i+1 == len(data):
		r.skipLF = true
	}
	return i + 1, data[:i], nil
}

// indexEOL returns the index of the first CR or LF in b, or -1.
func indexEOL(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	end := len(b)
	if lf >= 0 {
		end = lf
	}
	if cr := bytes.IndexByte(b[:end], '\r'); cr >= 0 {
		return cr
	}
	return lf
}
