package logwriter

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
	delay  time.Duration
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

// Every line is written, whole and in order per writer, with fewer writes
// than lines under load; Flush and Close leave nothing pending.
func TestWriter(t *testing.T) {
	out := &syncBuffer{delay: 100 * time.Microsecond}
	w := New(out)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				fmt.Fprintf(w, "g%d line %d\n", g, i)
			}
		}()
	}
	wg.Wait()
	w.Flush()
	out.mu.Lock()
	lines := strings.Split(strings.TrimSuffix(out.b.String(), "\n"), "\n")
	writes := out.writes
	out.mu.Unlock()
	if len(lines) != 4000 {
		t.Fatalf("%d lines written after Flush, want 4000", len(lines))
	}
	next := map[string]int{}
	for _, l := range lines {
		var g string
		var i int
		if _, err := fmt.Sscanf(l, "%s line %d", &g, &i); err != nil || next[g] != i {
			t.Fatalf("line %q out of order or torn (want %s line %d)", l, g, next[g])
		}
		next[g]++
	}
	if writes >= 4000 {
		t.Errorf("%d writes for 4000 lines: nothing was batched", writes)
	}
	fmt.Fprintln(w, "last")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.b.String(), "last\n") {
		t.Fatal("Close did not write the pending line")
	}
	fmt.Fprintln(w, "after close")
	if !strings.HasSuffix(out.b.String(), "after close\n") {
		t.Fatal("a write after Close was lost")
	}
}

type failing struct{}

func (failing) Write(p []byte) (int, error) { return 0, errors.New("disk full") }

func TestCloseReportsError(t *testing.T) {
	w := New(failing{})
	fmt.Fprintln(w, "x")
	if err := w.Close(); err == nil || err.Error() != "disk full" {
		t.Fatalf("Close = %v", err)
	}
}
