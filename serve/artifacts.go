package serve

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentsdk/agentsdk/tool"
)

func artifactError(err error) *apiError {
	switch {
	case errors.Is(err, tool.ErrFileNotFound):
		return &apiError{Status: http.StatusNotFound, Code: "artifact_not_found", Message: err.Error()}
	case errors.Is(err, tool.ErrNotConfigured):
		return &apiError{Status: http.StatusBadRequest, Code: "sessions_unavailable", Message: err.Error()}
	case strings.HasPrefix(err.Error(), "artifacts: files: "):
		return &apiError{Status: http.StatusBadRequest, Code: "bad_name", Message: err.Error()}
	}
	return sessionError(err)
}

// listArtifacts answers GET /session/<id>/artifacts.
func (s *Server) listArtifacts(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.host.Session(r.Context(), id); err != nil {
		writeError(w, sessionError(err))
		return
	}
	list, err := s.host.Artifacts(r.Context(), id)
	if err != nil {
		writeError(w, artifactError(err))
		return
	}
	if list == nil {
		list = []tool.FileInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "artifacts": list})
}

// getArtifact answers GET /session/<id>/artifacts/<name>: the content, with
// the content type it was stored with.
func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.host.Session(r.Context(), id); err != nil {
		writeError(w, sessionError(err))
		return
	}
	rc, info, err := s.host.Artifact(r.Context(), id, r.PathValue("name"))
	if err != nil {
		writeError(w, artifactError(err))
		return
	}
	defer rc.Close()
	w.Header().Set("Content-Type", info.ContentType)
	w.Header().Set("Content-Length", strconv.FormatInt(info.Size, 10))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Disposition", "attachment")
	w.WriteHeader(http.StatusOK)
	io.Copy(w, rc)
}
