package client

import (
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestSSEReader(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 1<<20)
	for _, tt := range []struct {
		name, stream string
		want         []sseEvent
	}{
		{"one event", "id: 1\nevent: message\ndata: {}\n\n", []sseEvent{{"1", "message", []byte("{}")}}},
		{"data over lines", "data: a\ndata:\ndata: b\n\n", []sseEvent{{"", "", []byte("a\n\nb")}}},
		{"comments and heartbeats", ": ping\n\n:\n: hi\ndata: x\n\n: ping\n\n", []sseEvent{{"", "", []byte("x")}}},
		{"no space after the colon", "data:x\ndata:  y\n\n", []sseEvent{{"", "", []byte("x\n y")}}},
		{"CRLF", "id: 2\r\ndata: a\r\n\r\ndata: b\r\n\r\n", []sseEvent{{"2", "", []byte("a")}, {"2", "", []byte("b")}}},
		{"CR", "data: a\r\rdata: b\r\r", []sseEvent{{"", "", []byte("a")}, {"", "", []byte("b")}}},
		{"a byte order mark", "\uFEFFdata: a\n\n", []sseEvent{{"", "", []byte("a")}}},
		{"a field without a colon", "data\n\n", []sseEvent{{"", "", []byte("")}}},
		{"an event type without data", "event: x\n\ndata: a\n\n", []sseEvent{{"", "", []byte("a")}}},
		{"other fields", "retry: 10\nfoo: bar\nid: 7\ndata: a\n\n", []sseEvent{{"7", "", []byte("a")}}},
		{"an id with NUL", "id: 3\ndata: a\n\nid: 4\x00\ndata: b\n\n", []sseEvent{{"3", "", []byte("a")}, {"3", "", []byte("b")}}},
		{"an unfinished event", "data: a\n\ndata: b\n", []sseEvent{{"", "", []byte("a")}}},
		{"a long line", "data: " + long + "\n\n", []sseEvent{{"", "", []byte(long)}}},
		{"nothing", "", nil},
	} {
		for _, mode := range []string{"whole", "byte by byte"} {
			t.Run(tt.name+"/"+mode, func(t *testing.T) {
				var r io.Reader = strings.NewReader(tt.stream)
				if mode == "byte by byte" {
					r = iotest.OneByteReader(r)
				}
				sr := newSSEReader(r)
				var got []sseEvent
				for {
					ev, err := sr.next()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, ev)
				}
				if !slices.EqualFunc(got, tt.want, func(a, b sseEvent) bool {
					return a.id == b.id && a.event == b.event && string(a.data) == string(b.data)
				}) {
					t.Errorf("events %q, want %q", got, tt.want)
				}
			})
		}
	}
}

func TestSSEReaderLimit(t *testing.T) {
	t.Parallel()
	sr := newSSEReader(io.MultiReader(strings.NewReader("data: "), iotest.OneByteReader(strings.NewReader("")), &endless{}))
	if _, err := sr.next(); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Errorf("a line over the limit: %v", err)
	}
}

// endless reads as x forever.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}
