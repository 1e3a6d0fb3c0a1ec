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
// artifacts): contents on disk under root, metadata in the store under ns.
type filesService struct {
	store store.Files
	root  string
	ns    string
	max   int64
}

// files returns the file service keeping contents under <StateRoot>/dir.
func (h *Host) files(dir, ns string) filesService {
	return filesService{store: h.opts.Store, root: filepath.Join(h.opts.StateRoot, dir), ns: ns, max: h.opts.MaxFileBytes}
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

func (f filesService) path(name string) string {
	return filepath.Join(f.root, filepath.FromSlash(name))
}

func (f filesService) Put(ctx context.Context, name string, r io.Reader, opts *tool.FilePutOptions) (tool.FileInfo, error) {
	if err := tool.CheckFileName(name); err != nil {
		return tool.FileInfo{}, err
	}
	contentType := "application/octet-stream"
	if opts != nil && opts.ContentType != "" {
		contentType = opts.ContentType
	}
	path := f.path(name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return tool.FileInfo{}, fmt.Errorf("files: storing %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return tool.FileInfo{}, fmt.Errorf("files: storing %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, sum), io.LimitReader(ctxReader{ctx, r}, f.max+1))
	if err == nil && n > f.max {
		err = fmt.Errorf("files: %s: %w: the limit is %d bytes", name, tool.ErrFileTooLarge, f.max)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if errors.Is(err, tool.ErrFileTooLarge) {
			return tool.FileInfo{}, err
		}
		return tool.FileInfo{}, fmt.Errorf("files: storing %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return tool.FileInfo{}, fmt.Errorf("files: storing %s: %w", name, err)
	}
	info := tool.FileInfo{Name: name, Size: n, ContentType: contentType, SHA256: hex.EncodeToString(sum.Sum(nil)), UpdatedAt: time.Now().UTC()}
	if err := f.store.PutFileMeta(ctx, f.ns, info); err != nil {
		return tool.FileInfo{}, fmt.Errorf("files: storing %s: %w", name, err)
	}
	return info, nil
}

func (f filesService) Stat(ctx context.Context, name string) (tool.FileInfo, error) {
	if err := tool.CheckFileName(name); err != nil {
		return tool.FileInfo{}, err
	}
	info, err := f.store.FileMeta(ctx, f.ns, name)
	if errors.Is(err, store.ErrNotFound) {
		return tool.FileInfo{}, fmt.Errorf("files: %s: %w", name, tool.ErrFileNotFound)
	}
	if err != nil {
		return tool.FileInfo{}, fmt.Errorf("files: %w", err)
	}
	return info, nil
}

func (f filesService) Get(ctx context.Context, name string) (io.ReadCloser, tool.FileInfo, error) {
	info, err := f.Stat(ctx, name)
	if err != nil {
		return nil, tool.FileInfo{}, err
	}
	file, err := os.Open(f.path(name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, tool.FileInfo{}, fmt.Errorf("files: %s: %w (its content is missing from %s)", name, tool.ErrFileNotFound, f.root)
	}
	if err != nil {
		return nil, tool.FileInfo{}, fmt.Errorf("files: %w", err)
	}
	return file, info, nil
}

func (f filesService) List(ctx context.Context, prefix string, opts *tool.FileListOptions) ([]tool.FileInfo, string, error) {
	var o tool.FileListOptions
	if opts != nil {
		o = *opts
	}
	list, next, err := f.store.ListFileMeta(ctx, store.ListParams{Namespace: f.ns, Prefix: prefix, Page: store.Page{Limit: o.Limit, Cursor: o.Cursor}})
	if err != nil {
		return nil, "", fmt.Errorf("files: %w", err)
	}
	return list, next, nil
}

func (f filesService) Delete(ctx context.Context, name string) error {
	if err := tool.CheckFileName(name); err != nil {
		return err
	}
	if err := f.store.DeleteFileMeta(ctx, f.ns, name); err != nil {
		return fmt.Errorf("files: %w", err)
	}
	if err := os.Remove(f.path(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("files: %w", err)
	}
	return nil
}
