package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/verification/app"
)

// TestDatabaseOutageAnswers503 cuts the service off its database: a route that reads and one that
// writes answer 503 service_unavailable with Retry-After, in the service's error shape, until the
// database is back.
func TestDatabaseOutageAnswers503(t *testing.T) {
	t.Parallel()
	proxy, dbURL := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	s := startService(t, map[string]string{app.EnvPrefix + "DATABASE_URL": dbURL})
	orgID, _ := s.newKey("acme")

	proxy.Cut()
	for _, call := range []struct {
		method, path string
		body         any
		header       map[string]string
	}{
		{"POST", "/v1/intelligence/organizations", map[string]any{"name": "during"}, admin},
		{"GET", "/v1/intelligence/organizations/" + orgID + "/api-keys", nil, admin},
		// A key this replica has not seen is looked up by the authentication, before any handler.
		{"GET", "/v1/intelligence/whoami", nil, bearer("vk_" + strings.Repeat("a", 43))},
	} {
		r := s.Do(call.method, call.path, call.body, call.header)
		if r.Status != http.StatusServiceUnavailable {
			t.Fatalf("%s %s while the database is cut: got %d %s, want 503", call.method, call.path, r.Status, r.Body)
		}
		if got := r.Header.Get("Retry-After"); got != "5" {
			t.Errorf("%s %s: Retry-After %q, want 5", call.method, call.path, got)
		}
		detail, _ := r.Object(t)["detail"].(map[string]any)
		if detail["error"] != apierror.UnavailableCode || detail["message"] != apierror.UnavailableMessage {
			t.Errorf("%s %s: body %s, want detail.error %s and its message", call.method, call.path, r.Body, apierror.UnavailableCode)
		}
	}

	proxy.Restore()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.Do("POST", "/v1/intelligence/organizations", map[string]any{"name": "after"}, admin)
		if r.Status == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the database came back: got %d %s, want 201", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
