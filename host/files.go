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

// MaxFileBytesDefault bounds one file of call.Host.Files and artifacts.
const MaxFileBytesDefault = 256 << 20

// filesService is call.Host.Files: contents on disk under root, metadata
// in the store under ns.
type filesService struct {
	store store.Store
	root  string
	ns    string
	max   int64
}

func fileInfo(m store.FileMeta) tool.FileInfo {
	return tool.FileInfo{Name: m.Name, Size: m.Size, ContentType: m.ContentType, SHA256: m.SHA256, UpdatedAt: m.UpdatedAt}
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
	m := store.FileMeta{Name: name, Size: n, ContentType: contentType, SHA256: hex.EncodeToString(sum.Sum(nil)), UpdatedAt: time.Now().UTC()}
	if err := f.store.PutFileMeta(ctx, f.ns, m); err != nil {
		return tool.FileInfo{}, fmt.Errorf("files: storing %s: %w", name, err)
	}
	return fileInfo(m), nil
}

func (f filesService) Stat(ctx context.Context, name string) (tool.FileInfo, error) {
	if err := tool.CheckFileName(name); err != nil {
		return tool.FileInfo{}, err
	}
	m, err := f.store.FileMeta(ctx, f.ns, name)
	if errors.Is(err, store.ErrNotFound) {
		return tool.FileInfo{}, fmt.Errorf("files: %s: %w", name, tool.ErrFileNotFound)
	}
	if err != nil {
		return tool.FileInfo{}, fmt.Errorf("files: %w", err)
	}
	return fileInfo(m), nil
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
	metas, next, err := f.store.ListFileMeta(ctx, f.ns, prefix, store.Page{Limit: o.Limit, Cursor: o.Cursor})
	if err != nil {
		return nil, "", fmt.Errorf("files: %w", err)
	}
	out := make([]tool.FileInfo, len(metas))
	for i, m := range metas {
		out[i] = fileInfo(m)
	}
	return out, next, nil
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

// artifacts is call.Artifacts for one session: files under the session's
// prefix, announced on its stream.
type artifacts struct {
	h         *Host
	sessionID string
	turnID    string
	callID    string
}

// EventArtifactCreated announces an artifact on its session's stream.
const EventArtifactCreated = "artifact.created"

func (h *Host) artifactFiles() filesService {
	return filesService{store: h.store, root: filepath.Join(h.stateRoot, "artifacts"), ns: h.namespace + ":artifacts", max: h.maxFileBytes}
}

func (a artifacts) Put(ctx context.Context, name string, r io.Reader, opts *tool.FilePutOptions) (tool.FileInfo, error) {
	if err := tool.CheckFileName(name); err != nil {
		return tool.FileInfo{}, fmt.Errorf("artifacts: %w", err)
	}
	info, err := a.h.artifactFiles().Put(ctx, a.sessionID+"/"+name, r, opts)
	if err != nil {
		return tool.FileInfo{}, err
	}
	info.Name = name
	if err := a.h.append(ctx, a.sessionID, a.turnID, store.Event{Kind: EventArtifactCreated, Data: data(map[string]any{
		"name": name, "size": info.Size, "contentType": info.ContentType, "sha256": info.SHA256, "callId": a.callID,
	})}); err != nil {
		return info, err
	}
	return info, nil
}

func (a artifacts) Get(ctx context.Context, name string) (io.ReadCloser, tool.FileInfo, error) {
	return a.h.Artifact(ctx, a.sessionID, name)
}

func (a artifacts) List(ctx context.Context) ([]tool.FileInfo, error) {
	return a.h.Artifacts(ctx, a.sessionID)
}

// Artifact opens a session's artifact.
func (h *Host) Artifact(ctx context.Context, sessionID, name string) (io.ReadCloser, tool.FileInfo, error) {
	if _, err := h.sessions(); err != nil {
		return nil, tool.FileInfo{}, err
	}
	if err := tool.CheckFileName(name); err != nil {
		return nil, tool.FileInfo{}, fmt.Errorf("artifacts: %w", err)
	}
	rc, info, err := h.artifactFiles().Get(ctx, sessionID+"/"+name)
	info.Name = name
	return rc, info, err
}

// Artifacts lists a session's artifacts.
func (h *Host) Artifacts(ctx context.Context, sessionID string) ([]tool.FileInfo, error) {
	if _, err := h.sessions(); err != nil {
		return nil, err
	}
	var all []tool.FileInfo
	for cursor := ""; ; {
		page, next, err := h.artifactFiles().List(ctx, sessionID+"/", &tool.FileListOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, f := range page {
			f.Name = f.Name[len(sessionID)+1:]
			all = append(all, f)
		}
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// sessionService is Call.Send and Call.GetSession.
type sessionService struct{ h *Host }

func (s sessionService) Send(ctx context.Context, channelID, message string, opts *tool.SendOptions) (string, error) {
	var o tool.SendOptions
	if opts != nil {
		o = *opts
	}
	if o.SessionID != "" {
		sess, err := s.h.Session(ctx, o.SessionID)
		if err != nil {
			return "", err
		}
		if sess.Channel != channelID {
			return "", fmt.Errorf("%w: %s is on channel %s, not %s", ErrSessionNotFound, o.SessionID, sess.Channel, channelID)
		}
		_, err = s.h.Send(ctx, o.SessionID, message)
		return o.SessionID, err
	}
	sess, _, err := s.h.CreateSession(ctx, SessionOptions{Channel: channelID, Principal: o.Principal, Message: message})
	return sess.ID, err
}

func (s sessionService) GetSession(ctx context.Context, channelID, sessionID string) (tool.SessionState, error) {
	sess, err := s.h.Session(ctx, sessionID)
	if err != nil {
		return tool.SessionState{}, err
	}
	if sess.Channel != channelID {
		return tool.SessionState{}, fmt.Errorf("%w: %s is on channel %s, not %s", ErrSessionNotFound, sessionID, sess.Channel, channelID)
	}
	return tool.SessionState{
		Session:   tool.Session{ID: sess.ID, Channel: sess.Channel, Mode: sess.Mode, Principal: sess.Principal},
		CreatedAt: sess.CreatedAt, LastSeq: sess.LastSeq, RunningTurn: sess.RunningTurn,
	}, nil
}
