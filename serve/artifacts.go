package serve

import (
	"io"
	"net/http"
	"strconv"

	"github.com/agentsdk/agentsdk/api"
	"github.com/agentsdk/agentsdk/tool"
)

// listArtifacts answers GET /session/<id>/artifacts.
func (s *Server) listArtifacts(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.host.Sessions().Get(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	list, err := s.host.Sessions().Artifacts(r.Context(), id)
	if err != nil {
		writeError(w, err)
		return
	}
	if list == nil {
		list = []tool.FileInfo{}
	}
	writeJSON(w, http.StatusOK, api.ArtifactList{OK: true, Artifacts: list})
}

// getArtifact answers GET /session/<id>/artifacts/<name>: the content, with
// the content type it was stored with.
func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if _, err := s.host.Sessions().Get(r.Context(), id); err != nil {
		writeError(w, err)
		return
	}
	rc, info, err := s.host.Sessions().Artifact(r.Context(), id, r.PathValue("name"))
	if err != nil {
		writeError(w, err)
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
