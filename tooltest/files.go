package tooltest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentsdk/agentsdk/tool"
)

// Files is call.Host.Files (and the session's artifacts) in memory,
// answering as a host's does: the same checks of names, the size limit
// (tool.ErrFileTooLarge, nothing stored), the content type
// (application/octet-stream unless given), the SHA-256, and pages in name
// order. An absent file's error matches tool.ErrFileNotFound.
type Files struct {
	what  string // "files" or "artifacts", as errors say
	max   int64
	now   func() time.Time
	mu    sync.Mutex
	files map[string]storedFile
}

type storedFile struct {
	info    tool.FileInfo
	content []byte
}

var _ tool.Files = (*Files)(nil)

func newFiles(what string, max int64, now func() time.Time) *Files {
	return &Files{what: what, max: max, now: now, files: map[string]storedFile{}}
}

// Put stores r's content under name, replacing any file there, once r is
// read to its end.
func (f *Files) Put(ctx context.Context, name string, r io.Reader, opts *tool.FilePutOptions) (tool.FileInfo, error) {
	if err := f.check(name); err != nil {
		return tool.FileInfo{}, err
	}
	contentType := "application/octet-stream"
	if opts != nil && opts.ContentType != "" {
		contentType = opts.ContentType
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, ctxReader{ctx, io.LimitReader(r, f.max+1)})
	if err == nil && n > f.max {
		err = fmt.Errorf("%w: the limit is %d bytes", tool.ErrFileTooLarge, f.max)
	}
	if err != nil {
		return tool.FileInfo{}, fmt.Errorf("%s: storing file %q: %w", f.what, name, err)
	}
	sum := sha256.Sum256(buf.Bytes())
	info := tool.FileInfo{Name: name, Size: n, ContentType: contentType, SHA256: hex.EncodeToString(sum[:]), UpdatedAt: f.now().UTC()}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[name] = storedFile{info: info, content: buf.Bytes()}
	return info, nil
}

// Get opens a file; the caller closes it.
func (f *Files) Get(ctx context.Context, name string) (io.ReadCloser, tool.FileInfo, error) {
	sf, err := f.lookup(name)
	if err != nil {
		return nil, tool.FileInfo{}, err
	}
	return io.NopCloser(bytes.NewReader(sf.content)), sf.info, nil
}

// Stat describes a file.
func (f *Files) Stat(ctx context.Context, name string) (tool.FileInfo, error) {
	sf, err := f.lookup(name)
	return sf.info, err
}

// List describes the files whose names start with prefix, in name order,
// and returns the cursor of the next page ("" after the last).
func (f *Files) List(ctx context.Context, prefix string, opts *tool.FileListOptions) ([]tool.FileInfo, string, error) {
	var o tool.FileListOptions
	if opts != nil {
		o = *opts
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var names []string
	for name := range f.files {
		if strings.HasPrefix(name, prefix) && (o.Cursor == "" || name > o.Cursor) {
			names = append(names, name)
		}
	}
	names, next := pageOf(names, o.Limit)
	var out []tool.FileInfo // nil when empty, as from a host
	for _, name := range names {
		out = append(out, f.files[name].info)
	}
	return out, next, nil
}

// Delete removes a file; an absent file is no error.
func (f *Files) Delete(ctx context.Context, name string) error {
	if err := f.check(name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.files, name)
	return nil
}

// Content returns a file's content, or an error matching
// tool.ErrFileNotFound: what a test looks at after a call.
func (f *Files) Content(name string) ([]byte, error) {
	sf, err := f.lookup(name)
	return bytes.Clone(sf.content), err
}

// Names returns the files' names, sorted.
func (f *Files) Names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := make([]string, 0, len(f.files))
	for name := range f.files {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func (f *Files) lookup(name string) (storedFile, error) {
	if err := f.check(name); err != nil {
		return storedFile{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sf, ok := f.files[name]
	if !ok {
		return storedFile{}, fmt.Errorf("%s: file %q: %w", f.what, name, tool.ErrFileNotFound)
	}
	return sf, nil
}

func (f *Files) check(name string) error {
	err := tool.CheckFileName(name)
	if err != nil && f.what != "files" {
		return fmt.Errorf("%s: %w", f.what, err)
	}
	return err
}

// sessionArtifacts is call.Artifacts in a session: the kit's Artifacts.
type sessionArtifacts struct{ f *Files }

func (a sessionArtifacts) Put(ctx context.Context, name string, r io.Reader, opts *tool.FilePutOptions) (tool.FileInfo, error) {
	return a.f.Put(ctx, name, r, opts)
}

func (a sessionArtifacts) Get(ctx context.Context, name string) (io.ReadCloser, tool.FileInfo, error) {
	return a.f.Get(ctx, name)
}

func (a sessionArtifacts) List(ctx context.Context) ([]tool.FileInfo, error) {
	var all []tool.FileInfo
	for cursor := ""; ; {
		page, next, err := a.f.List(ctx, "", &tool.FileListOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// ctxReader stops a copy when its context ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
