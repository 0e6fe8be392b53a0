package gateway

import (
	"encoding/json"
	"net/http"
)

// WriteJSON writes body as a JSON response with the given status. It is the one writer of JSON for the
// non-gateway handlers too (probes, 404s), so every body has the same content type.
func WriteJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if status == http.StatusNoContent {
		return
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // bodies are JSON for API clients, never inlined into HTML
	_ = enc.Encode(body)
}
