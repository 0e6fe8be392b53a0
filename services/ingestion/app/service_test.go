package app_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestAdminTokenGate(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	for _, path := range []string{"/v1/sources", "/v1/change-events", "/v1/sources/0190a0b0-0000-7000-8000-000000000000"} {
		for _, token := range []string{"", "wrong-token-of-some-length"} {
			r := s.call("GET", path, nil, token)
			if r.Status != http.StatusUnauthorized {
				t.Errorf("GET %s with token %q: got %d, want 401", path, token, r.Status)
				continue
			}
			if d, _ := r.Object(t)["detail"].(string); !strings.Contains(d, "X-Admin-Token") {
				t.Errorf("GET %s: 401 body %s should name the header", path, r.Body)
			}
		}
	}
	if r := s.call("POST", "/v1/sources", map[string]any{}, ""); r.Status != http.StatusUnauthorized {
		t.Errorf("POST /v1/sources without token: got %d, want 401 (before validation)", r.Status)
	}
	s.admin("GET", "/v1/sources", nil, http.StatusOK)
	for _, path := range []string{"/v1/build", "/healthz", "/readyz"} {
		if r := s.call("GET", path, nil, ""); r.Status != http.StatusOK {
			t.Errorf("GET %s without token: got %d, want 200", path, r.Status)
		}
	}
}
