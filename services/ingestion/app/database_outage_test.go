package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/ingestion/app"
)

// TestDatabaseOutageAnswers503 cuts the service off its database: reading and registering sources
// answer 503 with Retry-After and {"detail": "...", "error": "service_unavailable"} until the
// database is back.
func TestDatabaseOutageAnswers503(t *testing.T) {
	t.Parallel()
	proxy, dbURL := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	s := startService(t, map[string]string{app.EnvPrefix + "DATABASE_URL": dbURL})
	s.admin("GET", "/v1/sources", nil, http.StatusOK)

	proxy.Cut()
	for _, call := range []struct {
		method, path string
	}{
		{"GET", "/v1/sources"},
		{"GET", "/v1/change-events"},
	} {
		r := s.call(call.method, call.path, nil, adminToken)
		if r.Status != http.StatusServiceUnavailable {
			t.Fatalf("%s %s while the database is cut: got %d %s, want 503", call.method, call.path, r.Status, r.Body)
		}
		if got := r.Header.Get("Retry-After"); got != "5" {
			t.Errorf("%s %s: Retry-After %q, want 5", call.method, call.path, got)
		}
		body := r.Object(t)
		if body["error"] != apierror.UnavailableCode || body["detail"] != apierror.UnavailableMessage {
			t.Errorf("%s %s: body %s, want detail %q and error %s", call.method, call.path, r.Body, apierror.UnavailableMessage, apierror.UnavailableCode)
		}
	}

	proxy.Restore()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.call("GET", "/v1/sources", nil, adminToken)
		if r.Status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the database came back: got %d %s, want 200", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
