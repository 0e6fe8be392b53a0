package store_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// headSink records what the server-head listener reports, in order: "ns/name" for Forget, "*" for
// ForgetAll.
type headSink struct {
	mu     sync.Mutex
	live   bool
	events []string
}

func (s *headSink) Live(on bool) { s.mu.Lock(); s.live = on; s.mu.Unlock() }
func (s *headSink) Forget(k intelligence.ServerKey) {
	s.mu.Lock()
	s.events = append(s.events, k.Namespace+"/"+k.Name)
	s.mu.Unlock()
}
func (s *headSink) ForgetAll() { s.mu.Lock(); s.events = append(s.events, "*"); s.mu.Unlock() }

func (s *headSink) isLive() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.live }

// next waits for the next event and returns it.
func (s *headSink) next(t *testing.T, seen *int) string {
	t.Helper()
	var got string
	waitFor(t, "a server-head notification", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.events) > *seen {
			got = s.events[*seen]
			return true
		}
		return false
	})
	*seen++
	return got
}

// TestServerHeadChangesAreHeard: migration 00007's triggers notify every insert, update and delete of
// a server's row with its key, and a truncate (or a key too long for a payload) as "everything"; one
// listener connection serves the key channel too.
func TestServerHeadChangesAreHeard(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	heads, keys := &headSink{}, &sink{}
	done := make(chan error, 1)
	go func() {
		done <- store.WatchChanges(ctx, pool.Config().ConnConfig.Copy(), slog.New(slog.NewTextHandler(io.Discard, nil)),
			store.KeyChanges(keys), store.ServerHeadChanges(heads))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	waitFor(t, "the listener to listen", func() bool { return heads.isLive() && keys.live.Load() })

	id := uuid.New()
	long := strings.Repeat("n", 7100)
	seen := 0
	for _, tc := range []struct {
		name, sql string
		args      []any
		want      []string
	}{
		{"insert", `INSERT INTO intel_servers (id, namespace, name) VALUES ($1, 'io.example', 'weather')`, []any{id}, []string{"io.example/weather"}},
		{"update of counters", `UPDATE intel_servers SET change_count = change_count + 1, last_seen_at = now() WHERE id = $1`, []any{id}, []string{"io.example/weather"}},
		{"rename: both keys", `UPDATE intel_servers SET name = 'climate' WHERE id = $1`, []any{id}, []string{"io.example/climate", "io.example/weather"}},
		{"delete", `DELETE FROM intel_servers WHERE id = $1`, []any{id}, []string{"io.example/climate"}},
		{"key too long for a payload", `INSERT INTO intel_servers (id, namespace, name) VALUES ($1, 'io.example', $2)`, []any{uuid.New(), long}, []string{"*"}},
		{"truncate", `TRUNCATE intel_servers CASCADE`, nil, []string{"*"}},
		{"a payload that is not a key", `SELECT pg_notify('intel_servers_changed', 'no-slash')`, nil, []string{"*"}},
	} {
		if _, err := pool.Exec(ctx, tc.sql, tc.args...); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, want := range tc.want {
			if got := heads.next(t, &seen); got != want {
				t.Errorf("%s: got notification %q, want %q", tc.name, got, want)
			}
		}
	}
	// A change of a key reaches the other subscription of the same connection, and only it.
	if _, err := pool.Exec(ctx, `UPDATE organizations SET name = name`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the key change to be heard", func() bool { return keys.forgets.Load() >= 1 })
	if _, err := pool.Exec(ctx, `INSERT INTO intel_servers (id, namespace, name) VALUES ($1, 'io.example', 'last')`, uuid.New()); err != nil {
		t.Fatal(err)
	}
	if got := heads.next(t, &seen); got != "io.example/last" {
		t.Errorf("after the key change: got notification %q, want io.example/last", got)
	}
}
