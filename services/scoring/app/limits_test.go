package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
)

// TestBodyCaps: SCORING_MAX_BODY_BYTES caps a body before it is decoded or authenticated, with the
// service's error body, while the batch route keeps its larger cap.
func TestBodyCaps(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"SCORING_MAX_BODY_BYTES": "4096"})
	post := func(path string, size int) (int, string) {
		t.Helper()
		body := `{"workflow":"healthcare.denial","payload":{"pad":"` + strings.Repeat("x", size) + `"}}`
		resp, err := http.Post(s.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if code, body := post("/v1/score", 8192); code != http.StatusRequestEntityTooLarge || body != `{"detail":"Request body too large"}` {
		t.Errorf("POST /v1/score over the cap: %d %s, want 413 with the service's error body", code, body)
	}
	if code, body := post("/v1/score", 100); code != http.StatusUnauthorized {
		t.Errorf("POST /v1/score under the cap without a credential: %d %s, want 401", code, body)
	}
	if code, body := post("/v1/score/batch", 8192); code != http.StatusUnauthorized {
		t.Errorf("POST /v1/score/batch over the default cap, under its own: %d %s, want 401", code, body)
	}
	// A body of unknown length over even the batch route's cap, without a credential: refused with
	// the same 401 before it is read (read first, it would be a 413).
	_, small := post("/v1/score/batch", 10)
	if r := s.Do("POST", "/v1/score/batch", servicetest.Unsized(16<<20), nil); r.Status != http.StatusUnauthorized || strings.TrimSpace(string(r.Body)) != small {
		t.Errorf("anonymous unsized body over the cap: %d %s, want 401 %s", r.Status, r.Body, small)
	}
}
