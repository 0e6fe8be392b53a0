package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/scoring/app"
)

// TestDatabaseOutageAnswers503 cuts the service off its database: a route that needs it answers 503
// with Retry-After and the service's error shape ({"detail": "...", "error": "service_unavailable"})
// until the database is back, while scoring with a key seen before the outage goes on (the key is
// cached, the usage buffered until the next flush).
func TestDatabaseOutageAnswers503(t *testing.T) {
	t.Parallel()
	proxy, dbURL := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	s := startService(t, map[string]string{app.EnvPrefix + "DATABASE_URL": dbURL})
	key := s.paidKey()
	if r := s.scoreDenial(key); r.Status != http.StatusOK {
		t.Fatalf("score before the outage: got %d %s, want 200", r.Status, r.Body)
	}

	proxy.Cut()
	if r := s.scoreDenial(key); r.Status != http.StatusOK {
		t.Errorf("score with a cached key while the database is cut: got %d %s, want 200", r.Status, r.Body)
	}
	r := s.Do("POST", "/v1/apikeys/issue", map[string]any{"plan": "paid"}, admin)
	if r.Status != http.StatusServiceUnavailable {
		t.Fatalf("issue a key while the database is cut: got %d %s, want 503", r.Status, r.Body)
	}
	if got := r.Header.Get("Retry-After"); got != "5" {
		t.Errorf("Retry-After %q, want 5", got)
	}
	body := r.Object(t)
	if body["error"] != apierror.UnavailableCode || body["detail"] != apierror.UnavailableMessage {
		t.Errorf("body %s, want detail %q and error %s", r.Body, apierror.UnavailableMessage, apierror.UnavailableCode)
	}

	proxy.Restore()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := s.Do("POST", "/v1/apikeys/issue", map[string]any{"plan": "paid"}, admin)
		if r.Status == http.StatusCreated {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the database came back: got %d %s, want 201", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
