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
	s := startService(t, nil)
	r := s.call("GET", "/openapi.json", nil, "")
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/openapi.json without a token: got %d %q, want 200 application/json", r.Status, r.Header.Get("Content-Type"))
	}
	apidoc.CheckRoutes(t, r.Body, s.Platform.Server.Routes())
}
