// Package logwriter takes the writing of log lines off the path of the
// requests that log them: a [Writer] copies each line into a buffer, and a
// goroutine of its own writes what has gathered in one write, Delay after
// the first line of a batch. A busy host writes its lines a few syscalls a
// second instead of one a request; a line is on its way Delay after it was
// logged. Nothing is dropped: a writer that falls too far behind makes
// Write wait.
package logwriter

import (
	"io"
	"sync"
	"time"
)

// MaxPendingDefault is how much a Writer holds before Write waits.
const MaxPendingDefault = 1 << 20

// Delay is how long a Writer gathers lines before it writes them.
const Delay = 5 * time.Millisecond

// Writer batches writes to an io.Writer. It is safe for concurrent use.
// Close it to write what is left.
type Writer struct {
	w   io.Writer
	max int

	mu      sync.Mutex
	more    sync.Cond // signalled when buf has data, or on close
	room    sync.Cond // signalled when a batch has been written
	buf     []byte    // lines not yet handed to the writing goroutine
	writing bool      // the goroutine is writing a batch
	closed  bool
	err     error // the first write error, returned by Close
	done    chan struct{}
}

// New starts a Writer to w.
func New(w io.Writer) *Writer {
	b := &Writer{w: w, max: MaxPendingDefault, done: make(chan struct{})}
	b.more.L, b.room.L = &b.mu, &b.mu
	go b.loop()
	return b
}

// Write copies p to be written; it waits only while MaxPendingDefault bytes
// are pending. After Close it writes p directly.
func (b *Writer) Write(p []byte) (int, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return b.w.Write(p)
	}
	for len(b.buf) > b.max && !b.closed {
		b.room.Wait()
	}
	if len(b.buf) == 0 {
		b.more.Signal() // the first line of a batch
	}
	b.buf = append(b.buf, p...)
	b.mu.Unlock()
	return len(p), nil
}

func (b *Writer) loop() {
	defer close(b.done)
	var spare []byte
	b.mu.Lock()
	for {
		for len(b.buf) == 0 && !b.closed {
			b.more.Wait()
		}
		if len(b.buf) == 0 { // closed, and everything written
			b.mu.Unlock()
			return
		}
		if !b.closed {
			// Gather the lines logged meanwhile.
			b.writing = true
			b.mu.Unlock()
			time.Sleep(Delay)
			b.mu.Lock()
		}
		batch := b.buf
		b.buf, b.writing = spare[:0], true
		b.mu.Unlock()
		_, err := b.w.Write(batch)
		b.mu.Lock()
		if err != nil && b.err == nil {
			b.err = err
		}
		b.writing = false
		if cap(batch) <= 4*b.max { // keep the buffer, unless a burst grew it huge
			spare = batch
		} else {
			spare = nil
		}
		b.room.Broadcast()
	}
}

// Flush waits until everything written so far has been written out.
func (b *Writer) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for (len(b.buf) > 0 || b.writing) && !b.closed {
		b.room.Wait()
	}
}

// Close writes what is pending, stops the goroutine, and returns the first
// write error; writes after it go straight to the underlying writer.
func (b *Writer) Close() error {
	b.mu.Lock()
	b.closed = true
	b.more.Signal()
	b.room.Broadcast()
	b.mu.Unlock()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
