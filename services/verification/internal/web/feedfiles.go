// Package web serves the verification service's plain HTTP handlers (not gRPC): data-feed downloads.
package web

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/feeds"
)

// FeedFiles serves artifact contents at feeds.FilePath{id} to holders of a signed URL.
type FeedFiles struct {
	Store  feeds.Store
	Blobs  feeds.Blobs
	Signer *feeds.Signer
	Log    *slog.Logger
}

func (f *FeedFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id, err := uuid.Parse(strings.TrimPrefix(r.URL.Path, feeds.FilePath))
	if err != nil {
		gateway.WriteJSON(w, http.StatusNotFound, gateway.NotFoundBody)
		return
	}
	if err := f.Signer.Verify(id, r.URL.Query()); err != nil {
		gateway.WriteJSON(w, http.StatusForbidden, map[string]any{"detail": err.Error()})
		return
	}
	a, err := f.Store.ArtifactByID(r.Context(), id)
	if errors.Is(err, fault.ErrNotFound) {
		gateway.WriteJSON(w, http.StatusNotFound, gateway.NotFoundBody)
		return
	}
	if err != nil {
		f.Log.ErrorContext(r.Context(), "data feed download failed", "artifact_id", id, "error", err)
		gateway.WriteJSON(w, http.StatusInternalServerError, map[string]any{"detail": "Internal Server Error"})
		return
	}
	body, err := f.Blobs.Open(r.Context(), a.BlobKey)
	if err != nil {
		f.Log.ErrorContext(r.Context(), "data feed blob missing", "artifact_id", id, "error", err)
		gateway.WriteJSON(w, http.StatusInternalServerError, map[string]any{"detail": "Internal Server Error"})
		return
	}
	defer body.Close()
	w.Header().Set("Content-Type", feeds.ContentType(a.Format))
	w.Header().Set("Content-Disposition", `attachment; filename="`+a.Dataset+"-"+a.CreatedAt.UTC().Format("20060102T150405Z")+"."+a.Format+`"`)
	w.Header().Set("ETag", `"`+a.SHA256+`"`)
	w.Header().Set("Cache-Control", "private, max-age=60")
	_, _ = io.Copy(w, body)
}
