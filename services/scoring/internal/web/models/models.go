// Package models serves the plain HTTP route of the model cards: the reliability diagrams that
// GET /v1/models links to (README "Models").
package models

import (
	"net/http"
	"strings"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

// ReliabilityDiagrams serves the model cards' reliability diagrams (PNG), embedded in the binary, at
// GET /v1/models/reliability/{name}. They are validation evidence, public like GET /openapi.json.
func ReliabilityDiagrams(models *model.Set) http.Handler {
	pngs := map[string][]byte{}
	for _, c := range models.Cards() {
		if len(c.ReliabilityPNGData) > 0 {
			pngs[c.ReliabilityPNG] = c.ReliabilityPNGData
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		b, ok := pngs[name]
		if !ok || strings.Contains(name, "/") {
			gateway.WriteJSON(w, http.StatusNotFound, gateway.NotFoundBody)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Header().Set("Cache-Control", "public, max-age=86400, immutable")
		_, _ = w.Write(b)
	})
}
