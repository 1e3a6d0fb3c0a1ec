package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"testing/iotest"

	"github.com/agentsdk/agentsdk/api"
)

// streamRead is what readStream did with one connection's stream.
type streamRead struct {
	seqs            []int64
	errs            []string
	last            int64
	progress, stop  bool
	err             string
	yieldsAfterStop int
}

func readAllStream(r io.Reader, after int64) streamRead {
	var out streamRead
	out.last = after
	stopped := false
	progress, stop, err := readStream("sess_1", r, &out.last, func(e api.Event, err error) bool {
		if stopped {
			out.yieldsAfterStop++
		}
		if err != nil {
			out.errs = append(out.errs, err.Error())
			stopped = true
			return false
		}
		out.seqs = append(out.seqs, e.Seq)
		return true
	})
	out.progress, out.stop = progress, stop
	if err != nil {
		out.err = err.Error()
	}
	return out
}

// FuzzReadStream fuzzes an event stream as the host (or anything between)
// might send it, resumed after a seq. The client yields events in
// strictly increasing seq after the resume point, moves the resume point
// to the last one it yielded, stops at the first error, and reads the
// same whether the bytes come at once or one by one.
func FuzzReadStream(f *testing.F) {
	ev := func(seq int64, data string) string {
		return fmt.Sprintf("id: %d\nevent: message\ndata: {\"sessionId\":\"sess_1\",\"seq\":%d,\"kind\":\"message\",\"data\":%s,\"time\":\"2026-11-30T12:00:00Z\"}\n\n", seq, seq, data)
	}
	for _, s := range []struct {
		stream string
		after  int64
	}{
		{ev(1, `{}`) + ev(2, `{"text":"hi"}`), 0},
		{ev(1, `{}`) + ev(2, `{}`) + ev(3, `{}`), 2},
		{ev(3, `{}`) + ev(2, `{}`) + ev(3, `{}`) + ev(4, `{}`), 0},
		{": ping\n\n" + ev(1, `{}`), 0},
		{"id: 5\r\ndata: {\"seq\":5}\r\n\r\n", 0},
		{"data: {\"seq\":1}\r\rdata: {\"seq\":2}\r\r", 0},
		{"data: {\"seq\":1}\r", 0},
		{"data: {\"seq\":\n\n", 0},
		{"data: {\"seq\":-1}\n\n", -5},
		{"data: {\"seq\":9223372036854775807}\n\ndata: {\"seq\":1}\n\n", 0},
		{"data: {\"seq\":1e3}\n\n", 0},
		{"data: not json\n\n" + ev(1, `{}`), 0},
		{"\uFEFFdata: {\"seq\":1}\n\n", 0},
		{"data\n\nid\ndata:{\"seq\":2}\n\n", 0},
		{"", 0}, {"\n\n\n", 0}, {"data: {\"seq\":1}", 0},
	} {
		f.Add([]byte(s.stream), s.after)
	}
	f.Fuzz(func(t *testing.T, stream []byte, after int64) {
		whole := readAllStream(bytes.NewReader(stream), after)
		prev := after
		for _, seq := range whole.seqs {
			if seq <= prev {
				t.Fatalf("stream %q after %d: seqs %v", stream, after, whole.seqs)
			}
			prev = seq
		}
		if whole.last != prev {
			t.Fatalf("stream %q after %d: resumes after %d, last yielded %d", stream, after, whole.last, prev)
		}
		if len(whole.errs) > 1 || whole.yieldsAfterStop > 0 || len(whole.errs) == 1 && !whole.stop {
			t.Fatalf("stream %q: errors %q, stop %v, %d yields after stopping", stream, whole.errs, whole.stop, whole.yieldsAfterStop)
		}
		byByte := readAllStream(iotest.OneByteReader(bytes.NewReader(stream)), after)
		if fmt.Sprint(whole) != fmt.Sprint(byByte) {
			t.Fatalf("stream %q reads as\n%+v\nat once, and\n%+v\nbyte by byte", stream, whole, byByte)
		}
	})
}

// FuzzReadError fuzzes an error answer: whatever its body and status, the
// error is a *StatusError carrying an *api.Error with a code.
func FuzzReadError(f *testing.F) {
	for _, s := range []struct {
		status int
		body   string
	}{
		{404, `{"ok":false,"error":{"code":"session_not_found","message":"no session"}}`},
		{409, `{"ok":false,"error":{"code":"already_resolved","message":"x","approval":{"callId":"c"}}}`},
		{400, `{"ok":false,"error":{"code":"invalid_input","message":"x","violations":[{"path":"input.a","message":"m"}]}}`},
		{502, `<html>Bad gateway</html>`}, {500, ``}, {401, `{"error":{}}`}, {418, `{"error":null}`}, {400, `[]`},
		{429, `{"ok":false,"error":{"code":"","message":"empty code"}}`}, {200, `{}`}, {0, ``}, {999, "\xff"},
	} {
		f.Add(s.status, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		resp := &http.Response{StatusCode: status, Body: io.NopCloser(bytes.NewReader(body))}
		e := readError(resp)
		if e == nil || e.Err == nil || e.Err.Code == "" || e.Status != status {
			t.Fatalf("readError(%d, %q) = %+v", status, body, e)
		}
		var apiErr *api.Error
		if !errors.As(e, &apiErr) || apiErr != e.Err {
			t.Fatalf("readError(%d, %q) does not unwrap to its *api.Error", status, body)
		}
		_ = e.Error()
	})
}
