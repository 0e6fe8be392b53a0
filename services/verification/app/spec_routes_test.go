package app_test

import (
	"net/http"
	"strings"
	"testing"
)

// Route-level rules over HTTP: the public routes answer without any credential and with their
// content types, the bearer areas answer 401 with a plain-string detail, and a route that does not
// exist is 404 with or without a credential.

func TestSpecPublicRoutesWithoutCredentials(t *testing.T) {
	t.Parallel()
	s := startService(t)
	for _, tt := range []struct {
		method, path string
		body         any
		contentType  string
	}{
		{"GET", "/v1/build", nil, "application/json"},
		{"GET", "/v1/coverage-summary", nil, "application/json"},
		{"GET", "/claim", nil, "text/html"},
		{"GET", "/claim?server=com.example/weather&source=badge", nil, "text/html"},
		{"POST", "/api/analytics/events", map[string]any{"name": "claim_page_viewed", "page": "/claim"}, "application/json"},
	} {
		r := s.Do(tt.method, tt.path, tt.body, nil)
		if r.Status != http.StatusOK {
			t.Errorf("%s %s without a credential: %d %s, want 200", tt.method, tt.path, r.Status, r.Body)
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.contentType) {
			t.Errorf("%s %s: Content-Type %q, want %s", tt.method, tt.path, ct, tt.contentType)
		}
	}
}

func TestSpecBearerAreasUnauthorized(t *testing.T) {
	t.Parallel()
	s := startService(t)
	for _, tt := range []struct {
		method, path string
		header       map[string]string
	}{
		{"GET", "/v1/agent-reliability/runs", nil},
		{"GET", "/v1/agent-reliability/overview", nil},
		{"POST", "/v1/agent-reliability/repositories", nil},
		{"POST", "/v1/agent-reliability/scheduled-scans/enqueue-due", nil},
		{"GET", "/v1/agent-reliability/runs", bearer("vk_abcdefghijklmnopqrstuvwxyz")},
		{"POST", "/v1/intelligence/enforcement/policies", nil},
		{"GET", "/v1/intelligence/changes", nil},
		{"GET", "/v1/intelligence/changes", bearer("not-a-key")},
	} {
		r := s.Do(tt.method, tt.path, map[string]any{}, tt.header)
		if r.Status != http.StatusUnauthorized {
			t.Errorf("%s %s: %d, want 401", tt.method, tt.path, r.Status)
			continue
		}
		if d, ok := r.Object(t)["detail"].(string); !ok || d == "" {
			t.Errorf("%s %s: 401 body %s, want a plain-string detail", tt.method, tt.path, r.Body)
		}
	}
}

func TestSpecUnknownRoutes(t *testing.T) {
	t.Parallel()
	s := startService(t)
	_, key := s.newKey("Wanderers")
	for _, path := range []string{
		"/v1/no-such-route",
		"/v1/agent-reliability/no-such-route",
		"/v1/intelligence/enforcement/no-such-route",
		"/v1/intelligence/no-such-route/a/b/c",
		"/no-such-page",
	} {
		for _, h := range []map[string]string{nil, bearer(key)} {
			if r := s.Do("GET", path, nil, h); r.Status != http.StatusNotFound {
				t.Errorf("GET %s (credential %v): %d, want 404", path, h != nil, r.Status)
			}
		}
	}
}
