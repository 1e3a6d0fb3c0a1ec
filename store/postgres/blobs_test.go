package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/store/postgres"
	"github.com/agentsdk/agentsdk/tool"
)

const ns = "agent:files"

// openBlobs opens a store on the bundle's schema, as a host would: two
// calls are two hosts sharing the database.
func (tb *testBundle) openBlobs(t *testing.T) store.Store {
	t.Helper()
	s, err := postgres.Open(ctx, tb.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, ok := s.(store.Blobs); !ok {
		t.Fatalf("%T does not implement store.Blobs", s)
	}
	return s
}

// chunks counts a file's rows in file_chunks, of every generation.
func (tb *testBundle) chunks(t *testing.T, name string) int {
	t.Helper()
	var n int
	if err := tb.conn.QueryRow(ctx, `SELECT COUNT(*) FROM file_chunks WHERE namespace = $1 AND name = $2`, ns, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func put(t *testing.T, s store.Store, name string, content []byte) tool.FileInfo {
	t.Helper()
	info, err := s.(store.Blobs).PutBlob(ctx, store.PutBlobParams{Namespace: ns, Name: name, ContentType: "application/x-test", Content: bytes.NewReader(content)})
	if err != nil {
		t.Fatalf("PutBlob %s: %v", name, err)
	}
	return info
}

// get reads a file whole.
func get(t *testing.T, s store.Store, name string) ([]byte, tool.FileInfo) {
	t.Helper()
	rc, info, err := s.(store.Blobs).OpenBlob(ctx, ns, name)
	if err != nil {
		t.Fatalf("OpenBlob %s: %v", name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return b, info
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func random(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// counter is an endless reader of zeros that counts what it gave, and
// calls at (once) when it has given that many bytes.
type counter struct {
	n     int64
	after int64
	at    func()
}

func (c *counter) Read(p []byte) (int, error) {
	clear(p)
	c.n += int64(len(p))
	if c.at != nil && c.n >= c.after {
		c.at()
		c.at = nil
	}
	return len(p), nil
}

// A 10 MiB file goes in and out whole, in 256 KiB chunks, with its size
// and SHA-256; its metadata is the store's Files' as well.
func TestBlobRoundTrip(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.openBlobs(t)
	content := random(t, 10<<20)
	info := put(t, s, "reports/big.bin", content)
	if info.Name != "reports/big.bin" || info.Size != int64(len(content)) || info.SHA256 != sha(content) || info.ContentType != "application/x-test" || info.UpdatedAt.IsZero() {
		t.Errorf("PutBlob = %+v", info)
	}
	got, ginfo := get(t, s, "reports/big.bin")
	if !bytes.Equal(got, content) || ginfo != info {
		t.Errorf("OpenBlob gave %d bytes (sha256 %s), %+v; want %+v", len(got), sha(got), ginfo, info)
	}
	if n := tb.chunks(t, "reports/big.bin"); n != 40 {
		t.Errorf("%d chunks, want 40", n)
	}
	if m, err := s.FileMeta(ctx, ns, "reports/big.bin"); err != nil || m != info {
		t.Errorf("FileMeta = %+v, %v", m, err)
	}
	put(t, s, "reports/empty", nil)
	put(t, s, "other", []byte("x"))
	list, _, err := s.ListFileMeta(ctx, store.ListParams{Namespace: ns, Prefix: "reports/"})
	if err != nil || len(list) != 2 || list[0] != info || list[1].Name != "reports/empty" || list[1].Size != 0 {
		t.Errorf("ListFileMeta = %+v, %v", list, err)
	}
	if got, _ := get(t, s, "reports/empty"); len(got) != 0 {
		t.Errorf("the empty file holds %q", got)
	}
}

// The limit holds while the content streams: the put stops a byte past
// it, and the version before is intact.
func TestBlobTooLarge(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.openBlobs(t)
	old := put(t, s, "f", []byte("old"))
	for _, limit := range []int64{1, 1<<20 + 3, 3 << 20} {
		c := &counter{}
		_, err := s.(store.Blobs).PutBlob(ctx, store.PutBlobParams{Namespace: ns, Name: "f", Content: c, MaxBytes: limit})
		if !errors.Is(err, tool.ErrFileTooLarge) {
			t.Errorf("limit %d: PutBlob = %v, want ErrFileTooLarge", limit, err)
		}
		if c.n != limit+1 {
			t.Errorf("limit %d: read %d bytes of the content, want %d", limit, c.n, limit+1)
		}
	}
	// At the limit exactly: stored.
	exact := random(t, 1<<20)
	if _, err := s.(store.Blobs).PutBlob(ctx, store.PutBlobParams{Namespace: ns, Name: "exact", Content: bytes.NewReader(exact), MaxBytes: 1 << 20}); err != nil {
		t.Errorf("a file at the limit: %v", err)
	}
	if got, info := get(t, s, "f"); string(got) != "old" || info != old {
		t.Errorf("after refused puts, f holds %q, %+v", got, info)
	}
	if n := tb.chunks(t, "f"); n != 1 {
		t.Errorf("f has %d chunks, want 1", n)
	}
}

// A reader reads one version: replaced or deleted under it, it fails with
// ErrConflict, having given only that version's bytes.
func TestBlobReplacedWhileRead(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.openBlobs(t)
	v1, v2 := bytes.Repeat([]byte("1"), 1<<20), bytes.Repeat([]byte("2"), 1<<20+5)
	put(t, s, "f", v1)

	for _, change := range []struct {
		name string
		do   func(t *testing.T)
	}{
		{"replaced", func(t *testing.T) { put(t, s, "f", v2) }},
		{"deleted", func(t *testing.T) {
			if err := s.(store.Blobs).DeleteBlob(ctx, ns, "f"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(change.name, func(t *testing.T) {
			put(t, s, "f", v1)
			rc, info, err := s.(store.Blobs).OpenBlob(ctx, ns, "f")
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			head := make([]byte, 300<<10) // past the first chunk
			if _, err := io.ReadFull(rc, head); err != nil {
				t.Fatal(err)
			}
			change.do(t)
			rest, err := io.ReadAll(rc)
			if !errors.Is(err, store.ErrConflict) {
				t.Errorf("reading on: %v, want ErrConflict", err)
			}
			if got := append(head, rest...); !bytes.Equal(got, v1[:len(got)]) || info.SHA256 != sha(v1) {
				t.Errorf("the reader gave bytes of another version")
			}
		})
	}
	// A reader opened before a replacement that read it all first has v1.
	put(t, s, "f", v1)
	rc, _, _ := s.(store.Blobs).OpenBlob(ctx, ns, "f")
	all, err := io.ReadAll(rc)
	put(t, s, "f", v2)
	if err != nil || !bytes.Equal(all, v1) {
		t.Errorf("read before the replacement: %d bytes, %v", len(all), err)
	}
	if got, _ := get(t, s, "f"); !bytes.Equal(got, v2) {
		t.Errorf("after the replacement, f holds %d bytes", len(got))
	}
	if n := tb.chunks(t, "f"); n != 5 {
		t.Errorf("f has %d chunks after its replacement, want v2's 5", n)
	}
}

// Puts, reads and deletes of one name at once, from two hosts: every read
// gives one whole version or fails with ErrConflict after a prefix of one,
// and at the end the file's chunks are its last version's only.
func TestBlobConcurrent(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	hosts := []store.Store{tb.openBlobs(t), tb.openBlobs(t)}
	byHash := map[string][]byte{}
	for i := range 4 {
		v := random(t, 300<<10*(i+1))
		byHash[sha(v)] = v
	}
	var all [][]byte
	for _, v := range byHash {
		all = append(all, v)
	}
	put(t, hosts[0], "f", all[0])
	var whole, conflicts atomic.Int64
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			s := hosts[w%2]
			for i := range 5 {
				v := all[(w+i)%len(all)]
				if _, err := s.(store.Blobs).PutBlob(ctx, store.PutBlobParams{Namespace: ns, Name: "f", Content: bytes.NewReader(v)}); err != nil {
					t.Errorf("PutBlob: %v", err)
				}
				if w == 0 && i == 2 {
					if err := s.(store.Blobs).DeleteBlob(ctx, ns, "f"); err != nil {
						t.Errorf("DeleteBlob: %v", err)
					}
				}
			}
		})
		wg.Go(func() {
			s := hosts[(w+1)%2]
			for range 10 {
				rc, info, err := s.(store.Blobs).OpenBlob(ctx, ns, "f")
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				if err != nil {
					t.Errorf("OpenBlob: %v", err)
					return
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				v, ok := byHash[info.SHA256]
				if err == nil {
					whole.Add(1)
				} else {
					conflicts.Add(1)
				}
				switch {
				case !ok:
					t.Errorf("metadata of no version: %+v", info)
				case err == nil && !bytes.Equal(got, v):
					t.Errorf("read %d bytes that are not the version its metadata names", len(got))
				case err != nil && (!errors.Is(err, store.ErrConflict) || !bytes.Equal(got, v[:len(got)])):
					t.Errorf("a read failed with %v after %d bytes (of the version: %v)", err, len(got), bytes.Equal(got, v[:len(got)]))
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d whole reads, %d failed with a conflict", whole.Load(), conflicts.Load())
	got, info := get(t, hosts[0], "f")
	if sha(got) != info.SHA256 {
		t.Errorf("the last version's content does not match its metadata")
	}
	var gens, stray int
	if err := tb.conn.QueryRow(ctx, `SELECT COUNT(DISTINCT c.generation), COUNT(*) FILTER (WHERE c.generation <> f.generation)
		FROM file_chunks c JOIN files f USING (namespace, name) WHERE c.name = 'f'`).Scan(&gens, &stray); err != nil || gens != 1 || stray != 0 {
		t.Errorf("chunks of %d generations, %d stray (%v); want the last version's only", gens, stray, err)
	}
}

// Deleting a file deletes its chunks, through Blobs or through Files;
// deleting it again is no error.
func TestBlobDelete(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.openBlobs(t)
	put(t, s, "a", random(t, 600<<10))
	put(t, s, "b", random(t, 600<<10))
	if err := s.(store.Blobs).DeleteBlob(ctx, ns, "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.(store.Blobs).DeleteBlob(ctx, ns, "a"); err != nil {
		t.Errorf("deleting an absent file: %v", err)
	}
	if err := s.DeleteFileMeta(ctx, ns, "b"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, _, err := s.(store.Blobs).OpenBlob(ctx, ns, name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("OpenBlob of deleted %s: %v", name, err)
		}
		if _, err := s.FileMeta(ctx, ns, name); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("FileMeta of deleted %s: %v", name, err)
		}
		if n := tb.chunks(t, name); n != 0 {
			t.Errorf("deleted %s has %d chunks", name, n)
		}
	}
	if list, _, err := s.ListFileMeta(ctx, store.ListParams{Namespace: ns}); err != nil || len(list) != 0 {
		t.Errorf("ListFileMeta = %+v, %v", list, err)
	}
	// Metadata put without contents (a host that kept them on disk) has
	// none to open.
	if err := s.PutFileMeta(ctx, ns, tool.FileInfo{Name: "meta-only", Size: 1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.(store.Blobs).OpenBlob(ctx, ns, "meta-only"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("OpenBlob of metadata without contents: %v", err)
	}
}

// Two hosts, each with a store of its own on one schema, read each other's
// files, replacements and deletions.
func TestBlobTwoHosts(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a, b := tb.openBlobs(t), tb.openBlobs(t)
	content := random(t, 1<<20+1)
	info := put(t, a, "shared", content)
	if got, ginfo := get(t, b, "shared"); !bytes.Equal(got, content) || ginfo != info {
		t.Errorf("B read %d bytes, %+v", len(got), ginfo)
	}
	put(t, b, "shared", []byte("from B"))
	if got, _ := get(t, a, "shared"); string(got) != "from B" {
		t.Errorf("A read %q after B replaced it", got)
	}
	if err := a.(store.Blobs).DeleteBlob(ctx, ns, "shared"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.(store.Blobs).OpenBlob(ctx, ns, "shared"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("B opened a file A deleted: %v", err)
	}
}

// A put whose context ends mid-stream writes nothing: a new file does not
// appear, an old one keeps its version, and no chunk is left behind.
func TestBlobCancelled(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.openBlobs(t)
	old := put(t, s, "old", []byte("old"))
	for _, name := range []string{"new", "old"} {
		t.Run(name, func(t *testing.T) {
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			c := &counter{after: 1 << 20, at: cancel}
			_, err := s.(store.Blobs).PutBlob(cctx, store.PutBlobParams{Namespace: ns, Name: name, Content: io.LimitReader(c, 4<<20)})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("PutBlob = %v, want context.Canceled", err)
			}
			if c.n > 1<<20+256<<10 {
				t.Errorf("read %d bytes after the context ended at 1 MiB", c.n)
			}
		})
	}
	if _, err := s.FileMeta(ctx, ns, "new"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a cancelled new file exists: %v", err)
	}
	if got, info := get(t, s, "old"); string(got) != "old" || info != old {
		t.Errorf("a cancelled replacement changed the file: %q, %+v", got, info)
	}
	if n := tb.chunks(t, "new") + tb.chunks(t, "old"); n != 1 {
		t.Errorf("%d chunks, want old's 1", n)
	}
}

// A reader stops when its context ends.
func TestBlobReaderContext(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	s := tb.openBlobs(t)
	put(t, s, "f", random(t, 1<<20))
	rctx, cancel := context.WithCancel(ctx)
	rc, _, err := s.(store.Blobs).OpenBlob(rctx, ns, "f")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := rc.Read(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.Copy(io.Discard, rc); !errors.Is(err, context.Canceled) {
		t.Errorf("reading after the context ended: %v", err)
	}
}
