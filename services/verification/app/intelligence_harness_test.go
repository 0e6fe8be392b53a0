package app_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
	"github.com/trustlayer/trustlayer/services/verification/app"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
)

// registryStack is a service syncing a loopback registry, with the bearer key its reads send.
type registryStack struct {
	*stack
	reg  *registryfixture.Registry
	auth map[string]string
}

// startRegistry starts the service after prepare has published the registry's first listing, so
// that the sync loop's first poll (at start) is the baseline.
func startRegistry(t *testing.T, prepare func(*registryfixture.Registry)) *registryStack {
	t.Helper()
	return startRegistryWith(t, prepare, app.Boot)
}

// startRegistryWith is startRegistry with boot in place of app.Boot.
func startRegistryWith(t *testing.T, prepare func(*registryfixture.Registry), boot servicetest.Boot) *registryStack {
	t.Helper()
	reg, env := registry(t, prepare)
	s := startWith(t, boot, env)
	_, key := s.newKey("reader")
	return &registryStack{stack: s, reg: reg, auth: bearer(key)}
}

// call sends a request with the stack's bearer key.
func (s *registryStack) call(method, path string, body any) servicetest.Reply {
	s.t.Helper()
	return s.Do(method, path, body, s.auth)
}

// get fails the test unless GET path answers 200, and returns the object.
func (s *registryStack) get(path string) map[string]any {
	s.t.Helper()
	return s.Must(http.MethodGet, path, nil, s.auth, http.StatusOK).Object(s.t)
}

// items returns the items of a list answer.
func items(t *testing.T, m map[string]any) []map[string]any {
	t.Helper()
	raw, ok := m["items"].([]any)
	if !ok {
		t.Fatalf("answer %v has no items list", m)
	}
	out := make([]map[string]any, len(raw))
	for i, it := range raw {
		out[i] = it.(map[string]any)
	}
	return out
}

// wantValidation fails the test unless r is a FastAPI 422 whose first entry has this loc.
func wantValidation(t *testing.T, what string, r servicetest.Reply, loc ...any) {
	t.Helper()
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("%s: got %d %s, want 422", what, r.Status, r.Body)
	}
	var body struct {
		Detail []struct {
			Loc  []any  `json:"loc"`
			Msg  string `json:"msg"`
			Type string `json:"type"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil || len(body.Detail) == 0 {
		t.Fatalf("%s: got %s, want an HTTPValidationError", what, r.Body)
	}
	got, _ := json.Marshal(body.Detail[0].Loc)
	want, _ := json.Marshal(loc)
	if string(got) != string(want) || body.Detail[0].Msg == "" || body.Detail[0].Type == "" {
		t.Errorf("%s: got %s, want loc %s with msg and type", what, r.Body, want)
	}
}

// wantCoded fails the test unless r is status with {"detail":{"error":code,"message":...}}.
func wantCoded(t *testing.T, what string, r servicetest.Reply, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("%s: got %d %s, want %d", what, r.Status, r.Body, status)
	}
	detail, _ := r.Object(t)["detail"].(map[string]any)
	if detail["error"] != code || detail["message"] == "" {
		t.Errorf("%s: got %s, want detail.error %s with a message", what, r.Body, code)
	}
}
