package app_test

import (
	"net/http"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/apidoc"
)

// TestOpenAPICoversEveryRoute reads the routes from the server itself (the gateway rules of every
// registered service and every plain handler), so that a route added without documentation, or
// documentation left behind by a removed route, fails here.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	t.Parallel()
	s := startService(t)
	r := s.Do("GET", "/openapi.json", nil, nil)
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/openapi.json without a credential: got %d %q, want 200 application/json", r.Status, r.Header.Get("Content-Type"))
	}
	doc := r.Object(t)
	if info, _ := doc["info"].(map[string]any); info["version"] == "" || info["title"] != "Verification service" {
		t.Errorf("info = %v, want the service's title and interface version", doc["info"])
	}
	apidoc.CheckRoutes(t, r.Body, s.Platform.Server.Routes())
}
