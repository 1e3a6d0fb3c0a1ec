package host

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// artifacts is call.Artifacts for one session: files under the session's
// prefix, announced on its stream.
type artifacts struct {
	h         *Host
	sessionID string
	turnID    string
	callID    string
}

// artifactFiles keeps every session's artifacts, each under its session's
// id.
func (h *Host) artifactFiles() filesService {
	return h.files("artifacts", h.opts.Namespace+":artifacts")
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
	if err := a.h.emit(ctx, a.sessionID, a.turnID, api.ArtifactCreated{
		Name: name, Size: info.Size, ContentType: info.ContentType, SHA256: info.SHA256, CallID: a.callID,
	}); err != nil {
		return info, err
	}
	return info, nil
}

func (a artifacts) Get(ctx context.Context, name string) (io.ReadCloser, tool.FileInfo, error) {
	return a.h.Sessions().Artifact(ctx, a.sessionID, name)
}

func (a artifacts) List(ctx context.Context) ([]tool.FileInfo, error) {
	return a.h.Sessions().Artifacts(ctx, a.sessionID)
}

// Artifact opens a session's artifact. The error is an *api.Error:
// bad_name, artifact_not_found (wrapping tool.ErrFileNotFound) or internal.
func (s Sessions) Artifact(ctx context.Context, sessionID, name string) (io.ReadCloser, tool.FileInfo, error) {
	if err := tool.CheckFileName(name); err != nil {
		return nil, tool.FileInfo{}, api.Errorf(api.CodeBadName, "artifacts: %w", err)
	}
	rc, info, err := s.h.artifactFiles().Get(ctx, sessionID+"/"+name)
	if err != nil {
		return nil, tool.FileInfo{}, artifactError(err)
	}
	info.Name = name
	return rc, info, nil
}

// Artifacts lists a session's artifacts.
func (s Sessions) Artifacts(ctx context.Context, sessionID string) ([]tool.FileInfo, error) {
	var all []tool.FileInfo
	for cursor := ""; ; {
		page, next, err := s.h.artifactFiles().List(ctx, sessionID+"/", &tool.FileListOptions{Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, artifactError(err)
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

func artifactError(err error) error {
	if errors.Is(err, tool.ErrFileNotFound) {
		return api.Wrap(api.CodeArtifactNotFound, err)
	}
	return api.Wrap(api.CodeInternal, err)
}

// onChannel returns a session that must be on channelID.
func (s backend) onChannel(ctx context.Context, channelID, sessionID string) (api.Session, error) {
	sess, err := s.h.session(ctx, sessionID)
	if err != nil {
		return api.Session{}, err
	}
	if sess.Channel != channelID {
		return api.Session{}, api.Errorf(api.CodeSessionNotFound, "session not found: %s is on channel %s, not %s", sessionID, sess.Channel, channelID)
	}
	return sess, nil
}
