package app_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
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
	small := s.call("POST", "/v1/sources", map[string]any{}, "")
	if small.Status != http.StatusUnauthorized {
		t.Errorf("POST /v1/sources without token: got %d, want 401 (before validation)", small.Status)
	}
	// A body of unknown length over the body cap: the same 401, before it is read (else a 413).
	if r := s.call("POST", "/v1/sources", servicetest.Unsized(4<<20), ""); r.Status != http.StatusUnauthorized || string(r.Body) != string(small.Body) {
		t.Errorf("POST /v1/sources with an unsized body over the cap, without token: got %d %s, want 401 %s", r.Status, r.Body, small.Body)
	}
	s.admin("GET", "/v1/sources", nil, http.StatusOK)
	for _, path := range []string{"/v1/build", "/healthz", "/readyz"} {
		if r := s.call("GET", path, nil, ""); r.Status != http.StatusOK {
			t.Errorf("GET %s without token: got %d, want 200", path, r.Status)
		}
	}
}
