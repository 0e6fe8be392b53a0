package app_test

import (
	"net/http"
	"testing"
)

// TestPublicOpenAPI checks the public routes' operations: no credential (security []), no 401, and
// their documented answers.
func TestPublicOpenAPI(t *testing.T) {
	t.Parallel()
	s := startService(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Security  *[]any                    `json:"security"`
			Produces  []string                  `json:"produces"`
			Responses map[string]map[string]any `json:"responses"`
		} `json:"paths"`
	}
	s.Must("GET", "/openapi.json", nil, nil, http.StatusOK).Decode(t, &doc)
	for _, c := range []struct {
		path, method string
		statuses     []string
	}{
		{"/v1/coverage-summary", "get", []string{"200"}},
		{"/api/analytics/events", "post", []string{"200", "422", "429"}},
		{"/claim/intent", "post", []string{"200", "404", "422", "429"}},
		{"/claim/start", "post", []string{"200", "404", "422", "429", "503"}},
		{"/claim", "get", []string{"200"}},
		{"/claim/start/{namespace}/{name}", "get", []string{"200", "422"}},
		{"/claim/callback", "get", []string{"200", "400"}},
	} {
		op, ok := doc.Paths[c.path][c.method]
		if !ok {
			t.Errorf("%s %s: not documented", c.method, c.path)
			continue
		}
		if op.Security == nil || len(*op.Security) != 0 {
			t.Errorf("%s %s: security %v, want []", c.method, c.path, op.Security)
		}
		if _, ok := op.Responses["401"]; ok {
			t.Errorf("%s %s: documents a 401", c.method, c.path)
		}
		for _, status := range c.statuses {
			if _, ok := op.Responses[status]; !ok {
				t.Errorf("%s %s: no %s answer documented", c.method, c.path, status)
			}
		}
	}
}
