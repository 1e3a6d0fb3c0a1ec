package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentsdk/agentsdk/store"
	"github.com/agentsdk/agentsdk/tool"
)

// filesService is call.Host.Files (and, under another namespace, the
// artifacts): metadata in the store under ns, contents where blobs keeps
// them. That is the store itself when it implements store.Blobs (on
// PostgreSQL: every host sharing it reads them), else the host's disk
// (diskBlobs).
type filesService struct {
	meta  store.Files
	blobs store.Blobs
	ns    string
	max   int64
}

// files returns the file service under ns, keeping contents in the store
// if it can, else under <StateRoot>/dir.
func (h *Host) files(dir, ns string) filesService {
	blobs, ok := h.opts.Store.(store.Blobs)
	if !ok {
		blobs = diskBlobs{meta: h.opts.Store, root: filepath.Join(h.opts.StateRoot, dir)}
	}
	return filesService{meta: h.opts.Store, blobs: blobs, ns: ns, max: h.opts.MaxFileBytes}
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

func (f filesService) Put(ctx context.Context, name string, r io.Reader, opts *tool.FilePutOptions) (tool.FileInfo, error) {
	if err := tool.CheckFileName(name); err != nil {
		return tool.FileInfo{}, err
	}
	contentType := "application/octet-stream"
	if opts != nil && opts.ContentType != "" {
		contentType = opts.ContentType
	}
	info, err := f.blobs.PutBlob(ctx, store.PutBlobParams{
		Namespace: f.ns, Name: name, ContentType: contentType, Content: ctxReader{ctx, r}, MaxBytes: f.max,
	})
	if err != nil {
		return tool.FileInfo{}, fmt.Errorf("files: %w", err)
	}
	return info, nil
}

func (f filesService) Stat(ctx context.Context, name string) (tool.FileInfo, error) {
	if err := tool.CheckFileName(name); err != nil {
		return tool.FileInfo{}, err
	}
	info, err := f.meta.FileMeta(ctx, f.ns, name)
	if err != nil {
		return tool.FileInfo{}, fileError(err)
	}
	return info, nil
}

func (f filesService) Get(ctx context.Context, name string) (io.ReadCloser, tool.FileInfo, error) {
	if err := tool.CheckFileName(name); err != nil {
		return nil, tool.FileInfo{}, err
	}
	rc, info, err := f.blobs.OpenBlob(ctx, f.ns, name)
	if err != nil {
		return nil, tool.FileInfo{}, fileError(err)
	}
	return rc, info, nil
}

// fileError is a store's error reading a file as a handler sees it: an
// absent file is tool.ErrFileNotFound.
func fileError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		err = notFound{err}
	}
	return fmt.Errorf("files: %w", err)
}

// notFound is the store's error for an absent file (which says why),
// matching tool.ErrFileNotFound too.
type notFound struct{ error }

func (e notFound) Is(target error) bool { return target == tool.ErrFileNotFound }

func (e notFound) Unwrap() error { return e.error }

func (f filesService) List(ctx context.Context, prefix string, opts *tool.FileListOptions) ([]tool.FileInfo, string, error) {
	var o tool.FileListOptions
	if opts != nil {
		o = *opts
	}
	list, next, err := f.meta.ListFileMeta(ctx, store.ListParams{Namespace: f.ns, Prefix: prefix, Page: store.Page{Limit: o.Limit, Cursor: o.Cursor}})
	if err != nil {
		return nil, "", fmt.Errorf("files: %w", err)
	}
	return list, next, nil
}

func (f filesService) Delete(ctx context.Context, name string) error {
	if err := tool.CheckFileName(name); err != nil {
		return err
	}
	if err := f.blobs.DeleteBlob(ctx, f.ns, name); err != nil {
		return fmt.Errorf("files: %w", err)
	}
	return nil
}

// diskBlobs keeps file contents on the host's disk under root, one file
// each at its name's path, and their metadata in the store: the files of a
// store that does not keep contents itself (SQLite, memory), which only
// this host reads.
type diskBlobs struct {
	meta store.Files
	root string
}

var _ store.Blobs = diskBlobs{}

func (d diskBlobs) path(name string) string {
	return filepath.Join(d.root, filepath.FromSlash(name))
}

// PutBlob writes the contents to a temporary file beside the file's path
// and renames it there once it is whole and synced, then records the
// metadata.
func (d diskBlobs) PutBlob(ctx context.Context, p store.PutBlobParams) (tool.FileInfo, error) {
	path := d.path(p.Name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return tool.FileInfo{}, fmt.Errorf("storing file %q: %w", p.Name, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return tool.FileInfo{}, fmt.Errorf("storing file %q: %w", p.Name, err)
	}
	defer os.Remove(tmp.Name())
	content := p.Content
	if p.MaxBytes > 0 {
		content = io.LimitReader(content, p.MaxBytes+1)
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, sum), content)
	if err == nil && p.MaxBytes > 0 && n > p.MaxBytes {
		err = fmt.Errorf("%w: the limit is %d bytes", tool.ErrFileTooLarge, p.MaxBytes)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return tool.FileInfo{}, fmt.Errorf("storing file %q: %w", p.Name, err)
	}
	info := tool.FileInfo{Name: p.Name, Size: n, ContentType: p.ContentType, SHA256: hex.EncodeToString(sum.Sum(nil)), UpdatedAt: time.Now().UTC()}
	if err := d.meta.PutFileMeta(ctx, p.Namespace, info); err != nil {
		return tool.FileInfo{}, fmt.Errorf("storing file %q: %w", p.Name, err)
	}
	return info, nil
}

func (d diskBlobs) OpenBlob(ctx context.Context, ns, name string) (io.ReadCloser, tool.FileInfo, error) {
	info, err := d.meta.FileMeta(ctx, ns, name)
	if err != nil {
		return nil, tool.FileInfo{}, err
	}
	file, err := os.Open(d.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, tool.FileInfo{}, fmt.Errorf("file %q: %w: its content is missing from %s", name, store.ErrNotFound, d.root)
	}
	if err != nil {
		return nil, tool.FileInfo{}, err
	}
	return file, info, nil
}

func (d diskBlobs) DeleteBlob(ctx context.Context, ns, name string) error {
	if err := d.meta.DeleteFileMeta(ctx, ns, name); err != nil {
		return err
	}
	if err := os.Remove(d.path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
