package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// chunkSize is the most one row of file_chunks holds: a put's and a
// reader's buffer. host's BenchmarkFiles (10 MiB, PostgreSQL on loopback)
// put and got 70 and 210 MB/s with 64 KiB chunks, 85 and 500 with 256 KiB,
// 86 and 515 with 1 MiB: past 256 KiB the round trips no longer count.
const chunkSize = 256 << 10

// blobStore is the SQL store of a dialect whose schema keeps file contents
// (Dialect.FileContents): a file's row in files names the generation of
// its chunks in file_chunks.
type blobStore struct{ *sqlStore }

var _ Blobs = (*blobStore)(nil)

func (s *blobStore) PutBlob(ctx context.Context, p PutBlobParams) (tool.FileInfo, error) {
	info := tool.FileInfo{Name: p.Name, ContentType: p.ContentType, UpdatedAt: s.now().UTC().Truncate(time.Microsecond)}
	// A generation is never reused, so a reader that follows one reads
	// one version. A random one needs no counter; two puts drawing the
	// same would collide on file_chunks' key and one would fail, never
	// mix.
	gen := rand.Int64()
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var err error
		if info.Size, info.SHA256, err = s.putChunks(ctx, tx, p, gen); err != nil {
			return err
		}
		// The upsert locks the file's row until commit, ordering puts of
		// one name: the DELETE after it sees the chunks of any put that
		// committed first, and removes them with the old generation's.
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO files (namespace, name, size, content_type, sha256, updated_at, generation) VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (namespace, name) DO UPDATE SET size = excluded.size, content_type = excluded.content_type, sha256 = excluded.sha256,
				updated_at = excluded.updated_at, generation = excluded.generation`),
			p.Namespace, p.Name, info.Size, info.ContentType, info.SHA256, micros(info.UpdatedAt), gen); err != nil {
			return fmt.Errorf("writing metadata: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM file_chunks WHERE namespace = ? AND name = ? AND generation <> ?`),
			p.Namespace, p.Name, gen); err != nil {
			return fmt.Errorf("deleting the old version: %w", err)
		}
		return nil
	})
	if err != nil {
		return tool.FileInfo{}, fmt.Errorf("storing file %q: %w", p.Name, err)
	}
	return info, nil
}

// putChunks writes p.Content as generation gen's chunks, a chunk read and
// written at a time, and returns its size and SHA-256. It reads at most one
// byte past p.MaxBytes.
func (s *blobStore) putChunks(ctx context.Context, tx *sql.Tx, p PutBlobParams, gen int64) (int64, string, error) {
	sum := sha256.New()
	buf := make([]byte, chunkSize)
	var size int64
	for idx := 0; ; idx++ {
		want := int64(len(buf))
		if p.MaxBytes > 0 {
			want = min(want, p.MaxBytes-size+1)
		}
		n, err := io.ReadFull(p.Content, buf[:want])
		size += int64(n)
		if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
			return 0, "", fmt.Errorf("reading the content: %w", err)
		}
		if p.MaxBytes > 0 && size > p.MaxBytes {
			return 0, "", fmt.Errorf("%w: the limit is %d bytes", tool.ErrFileTooLarge, p.MaxBytes)
		}
		if n > 0 {
			sum.Write(buf[:n])
			if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO file_chunks (namespace, name, generation, idx, data) VALUES (?, ?, ?, ?, ?)`),
				p.Namespace, p.Name, gen, idx, buf[:n]); err != nil {
				return 0, "", fmt.Errorf("writing chunk %d: %w", idx, err)
			}
		}
		if err != nil { // io.EOF or io.ErrUnexpectedEOF: the content ended
			return size, hex.EncodeToString(sum.Sum(nil)), nil
		}
	}
}

func (s *blobStore) OpenBlob(ctx context.Context, ns, name string) (io.ReadCloser, tool.FileInfo, error) {
	var m tool.FileInfo
	var at int64
	var gen sql.NullInt64
	err := s.read.QueryRowContext(ctx, s.q(`SELECT name, size, content_type, sha256, updated_at, generation FROM files WHERE namespace = ? AND name = ?`),
		ns, name).Scan(&m.Name, &m.Size, &m.ContentType, &m.SHA256, &at, &gen)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, tool.FileInfo{}, fmt.Errorf("file %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, tool.FileInfo{}, fmt.Errorf("reading file metadata: %w", err)
	}
	if !gen.Valid {
		// Metadata put with PutFileMeta: its contents are elsewhere.
		return nil, tool.FileInfo{}, fmt.Errorf("file %q: %w: its contents are not in the store", name, ErrNotFound)
	}
	m.UpdatedAt = fromMicros(at)
	return &blobReader{ctx: ctx, s: s, ns: ns, name: name, gen: gen.Int64, size: m.Size}, m, nil
}

func (s *blobStore) DeleteBlob(ctx context.Context, ns, name string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM files WHERE namespace = ? AND name = ?`), ns, name); err != nil {
			return err
		}
		// Chunks go with their row (ON DELETE CASCADE); this catches those
		// of a put that committed while the DELETE above waited for it.
		_, err := tx.ExecContext(ctx, s.q(`DELETE FROM file_chunks WHERE namespace = ? AND name = ?`), ns, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("deleting file %q: %w", name, err)
	}
	return nil
}

// blobReader reads one generation of a file, a chunk a query: it holds no
// connection between reads, and one that is left unread costs the database
// nothing. The chunks of a generation never change; when a put or a delete
// removes them, the next fetch finds none and fails with ErrConflict.
type blobReader struct {
	// ctx is OpenBlob's: the reader's queries run under it, as an
	// io.Reader cannot take one of its own.
	ctx      context.Context
	s        *blobStore
	ns, name string
	gen      int64
	size     int64  // the file's, from its metadata
	fetched  int64  // what the chunks fetched so far held
	idx      int    // the next chunk
	rest     []byte // what the reader has not given of the last chunk
	chunk    []byte // the last chunk's storage, reused
	closed   bool
}

func (r *blobReader) Read(p []byte) (int, error) {
	if r.closed {
		return 0, os.ErrClosed
	}
	for len(r.rest) == 0 {
		if r.fetched == r.size {
			return 0, io.EOF
		}
		if err := r.fetch(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.rest)
	r.rest = r.rest[n:]
	return n, nil
}

// fetch reads the next chunk into r.rest.
func (r *blobReader) fetch() error {
	rows, err := r.s.read.QueryContext(r.ctx, r.s.q(`SELECT data FROM file_chunks WHERE namespace = ? AND name = ? AND generation = ? AND idx = ?`),
		r.ns, r.name, r.gen, r.idx)
	if err != nil {
		return fmt.Errorf("reading file %q: %w", r.name, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reading file %q: %w", r.name, err)
		}
		return fmt.Errorf("reading file %q: %w: it was replaced or deleted while being read", r.name, ErrConflict)
	}
	var data sql.RawBytes // the driver's memory, valid until Close
	if err := rows.Scan(&data); err != nil {
		return fmt.Errorf("reading file %q: %w", r.name, err)
	}
	if len(data) == 0 || int64(len(data)) > r.size-r.fetched {
		return fmt.Errorf("reading file %q: chunk %d holds %d bytes, %d are left of the file", r.name, r.idx, len(data), r.size-r.fetched)
	}
	r.chunk = append(r.chunk[:0], data...)
	r.rest = r.chunk
	r.fetched += int64(len(data))
	r.idx++
	return rows.Close()
}

func (r *blobReader) Close() error {
	r.closed, r.rest, r.chunk = true, nil, nil
	return nil
}
