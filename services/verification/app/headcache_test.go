package app_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
)

// setChangeCountSilently sets a server's change_count without firing migration 00007's triggers
// (session_replication_role replica skips them), as a change no replica hears about. The tests use
// it to see whether a replica answers the server state from its cache of heads or from the database.
func (s *stack) setChangeCountSilently(namespace, name string, count int) {
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
	if _, err := conn.Exec(ctx, `UPDATE intel_servers SET change_count = $3 WHERE namespace = $1 AND name = $2`, namespace, name, count); err != nil {
		s.t.Fatal(err)
	}
}

// serverState reads GET /v1/intelligence/servers/{path} and returns the status and, on 200, the
// version and change count.
func (s *stack) serverState(path, key string) (int, string, float64) {
	s.t.Helper()
	r := s.Do(http.MethodGet, "/v1/intelligence/servers/"+path, nil, bearer(key))
	if r.Status != http.StatusOK {
		return r.Status, "", 0
	}
	m := r.Object(s.t)
	v, _ := m["version"].(string)
	n, _ := m["change_count"].(float64)
	return r.Status, v, n
}

// headCached waits until replica answers the server state of io.example/weather from its cache of
// heads: a change of change_count that no replica hears of does not show. It leaves the database as
// it found it, and the head cached.
func headCached(t *testing.T, db, replica *stack, key string) {
	t.Helper()
	eventually(t, "the replica to answer from its cache of heads", func() bool {
		status, _, n := replica.serverState("io.example/weather", key)
		if status != http.StatusOK {
			t.Fatalf("server state: got %d, want 200", status)
		}
		db.setChangeCountSilently("io.example", "weather", int(n)+1000)
		_, _, got := replica.serverState("io.example/weather", key)
		db.setChangeCountSilently("io.example", "weather", int(n))
		return got == n
	})
}

// TestServerStateFollowsSyncOnEveryReplica: two replicas share a database, one of them syncing a
// registry. Both cache the server's head (and, for a server the registry does not list yet, that it
// does not exist), and both show a new version once the sync that recorded it commits: the trigger
// of migration 00007 notifies each replica, which forgets the server.
func TestServerStateFollowsSyncOnEveryReplica(t *testing.T) {
	t.Parallel()
	reg := registryfixture.New(t)
	reg.Publish(registryfixture.Server("io.example/weather", "1.0.0"))
	a := startService(t, map[string]string{
		"VERIFICATION_REGISTRY_URLS":          reg.URL,
		"VERIFICATION_REGISTRY_POLL_INTERVAL": "1s",
		"VERIFICATION_ALLOW_PRIVATE_CIDRS":    "127.0.0.0/8",
	})
	b := startService(t, map[string]string{"VERIFICATION_DATABASE_URL": a.Pool.Config().ConnString()})
	_, key := a.newKey("Intel")
	replicas := map[string]*stack{"a (syncing)": a, "b": b}

	for name, r := range replicas {
		eventually(t, name+" to read version 1.0.0", func() bool {
			_, v, _ := r.serverState("io.example/weather", key)
			return v == "1.0.0"
		})
		headCached(t, a, r, key)
		// An unknown server is answered 404 and remembered as unknown until it appears.
		if status, _, _ := r.serverState("io.example/later", key); status != http.StatusNotFound {
			t.Fatalf("%s: unknown server: got %d, want 404", name, status)
		}
	}

	reg.Publish(registryfixture.Server("io.example/weather", "1.1.0"))
	reg.Publish(registryfixture.Server("io.example/later", "0.1.0"))
	for name, r := range replicas {
		eventually(t, name+" to read version 1.1.0", func() bool {
			_, v, _ := r.serverState("io.example/weather", key)
			return v == "1.1.0"
		})
		eventually(t, name+" to find the new server", func() bool {
			status, v, _ := r.serverState("io.example/later", key)
			return status == http.StatusOK && v == "0.1.0"
		})
	}
	// Both replicas read the database once more (the change forgot the head), then cache again.
	for _, r := range replicas {
		headCached(t, a, r, key)
	}
}
