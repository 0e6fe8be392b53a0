package app_test

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// setRevokedSilently sets or clears a key's revocation without firing migration 00005's triggers
// (session_replication_role replica skips them), as a change no replica hears about. The tests use
// it to see whether a replica answers from its cache of keys or from the database.
func (s *stack) setRevokedSilently(keyID string, revoked bool) {
	s.t.Helper()
	ctx := context.Background()
	conn, err := s.Pool.Acquire(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		s.t.Fatal(err)
	}
	defer func() { _, _ = conn.Exec(ctx, `RESET session_replication_role`) }()
	if _, err := conn.Exec(ctx, `UPDATE api_keys SET revoked_at = CASE WHEN $2 THEN now() END WHERE id = $1`, keyID, revoked); err != nil {
		s.t.Fatal(err)
	}
}

// whoami returns the status of GET /v1/intelligence/whoami with key.
func (s *stack) whoami(key string) int {
	s.t.Helper()
	return s.Do(http.MethodGet, "/v1/intelligence/whoami", nil, bearer(key)).Status
}

// keyID returns the id of the organization's only key.
func (s *stack) keyID(orgID string) string {
	s.t.Helper()
	var id string
	if err := s.Pool.QueryRow(context.Background(), `SELECT id FROM api_keys WHERE organization_id = $1`, orgID).Scan(&id); err != nil {
		s.t.Fatal(err)
	}
	return id
}

// cached waits until replica answers key from its cache: the key, used once, still works while the
// database says it is revoked (which no replica hears of). The cache is used only once the replica's
// listener listens, shortly after start. It leaves the key active in the database and cached.
func cached(t *testing.T, db, replica *stack, keyID, key string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if got := replica.whoami(key); got != http.StatusOK {
			t.Fatalf("whoami with an active key: got %d, want 200", got)
		}
		db.setRevokedSilently(keyID, true)
		got := replica.whoami(key)
		db.setRevokedSilently(keyID, false)
		if got == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the replica never answered a key from its cache")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRevokedKeyIsRefusedAtOnce: a key the replica has cached is refused by the very next request
// after its revocation route answers.
func TestRevokedKeyIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	s := startService(t)
	orgID, key := s.newKey("Acme")
	keyID := s.keyID(orgID)
	cached(t, s, s, keyID, key)

	if r := s.Do(http.MethodDelete, "/v1/intelligence/organizations/"+orgID+"/api-keys/"+keyID, nil, admin); r.Status != http.StatusNoContent {
		t.Fatalf("revoke: got %d %s, want 204", r.Status, r.Body)
	}
	if got := s.whoami(key); got != http.StatusUnauthorized {
		t.Errorf("whoami right after the revocation: got %d, want 401", got)
	}
}

// TestRevocationReachesOtherReplicas: two replicas share a database; a key cached by one and revoked
// through the other is refused by the first once the notification of migration 00005 arrives (a
// few milliseconds; the cache's TTL would take ten seconds).
func TestRevocationReachesOtherReplicas(t *testing.T) {
	t.Parallel()
	a := startService(t)
	b := startService(t, map[string]string{"VERIFICATION_DATABASE_URL": a.Pool.Config().ConnString()})
	orgID, key := a.newKey("Acme")
	keyID := a.keyID(orgID)
	cached(t, a, b, keyID, key)

	if r := a.Do(http.MethodDelete, "/v1/intelligence/organizations/"+orgID+"/api-keys/"+keyID, nil, admin); r.Status != http.StatusNoContent {
		t.Fatalf("revoke through a: got %d %s, want 204", r.Status, r.Body)
	}
	if got := a.whoami(key); got != http.StatusUnauthorized {
		t.Errorf("a, right after the revocation: got %d, want 401", got)
	}
	deadline := time.Now().Add(20 * time.Second)
	for b.whoami(key) != http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatal("b never refused the revoked key")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
