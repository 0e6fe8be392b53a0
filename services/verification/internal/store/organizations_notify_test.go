package store_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// sink records what the listener reports.
type sink struct {
	live    atomic.Bool
	forgets atomic.Int32
}

func (s *sink) Live(on bool) { s.live.Store(on) }
func (s *sink) Forget()      { s.forgets.Add(1) }

// waitFor polls cond every 20 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestKeyChangesAreHeard: a revocation committed by any connection reaches the listener (migration
// 00005's trigger), and so does a change of an organization; an insert (a new key) does not.
func TestKeyChangesAreHeard(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	s := &sink{}
	done := make(chan error, 1)
	go func() {
		done <- store.WatchChanges(ctx, pool.Config().ConnConfig.Copy(), slog.New(slog.NewTextHandler(io.Discard, nil)), store.KeyChanges(s))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	waitFor(t, "the listener to listen", s.live.Load)

	org, key := uuid.New(), uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO organizations (id, name) VALUES ($1, 'acme')`, org); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO api_keys (id, organization_id, name, key_hash, prefix) VALUES ($1, $2, 'k', $3, 'vk_x')`,
		key, org, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	if err := store.NewOrganizations(pool).RevokeAPIKey(ctx, org, key); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the revocation to be heard", func() bool { return s.forgets.Load() >= 1 })
	if got := s.forgets.Load(); got != 1 {
		t.Errorf("got %d notifications for two inserts and a revocation, want 1", got)
	}
	if _, err := pool.Exec(ctx, `UPDATE organizations SET name = 'acme two' WHERE id = $1`, org); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the organization change to be heard", func() bool { return s.forgets.Load() >= 2 })
	if !s.live.Load() {
		t.Error("the listener is not live any more")
	}
}
