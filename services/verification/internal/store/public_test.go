package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/analytics"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/claim"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/throttle"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// TestPublicHitConcurrent races hits of many clients against one overall limit, as replicas would:
// exactly the limit is allowed, and a refused hit counts on no subject.
func TestPublicHitConcurrent(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	st := store.NewPublic(pool)
	ctx := context.Background()
	window := time.Now().Truncate(time.Minute)
	const overall, perClient, clients, each = 25, 4, 10, 5
	var allowed atomic.Int64
	perClientAllowed := make([]atomic.Int64, clients)
	var wg sync.WaitGroup
	for c := range clients {
		for range each {
			wg.Go(func() {
				ok, err := st.Hit(ctx, []throttle.Subject{
					{Key: "test:c:" + string(rune('a'+c)), Limit: perClient},
					{Key: "test:all", Limit: overall},
				}, window)
				if err != nil {
					t.Error(err)
				}
				if ok {
					allowed.Add(1)
					perClientAllowed[c].Add(1)
				}
			})
		}
	}
	wg.Wait()
	if got := allowed.Load(); got != overall {
		t.Errorf("allowed: got %d, want %d", got, overall)
	}
	for c := range clients {
		if n := perClientAllowed[c].Load(); n > perClient {
			t.Errorf("client %d: %d allowed, want at most %d", c, n, perClient)
		}
	}
	// The counters hold exactly the allowed hits: refused ones were rolled back.
	var hits int
	if err := pool.QueryRow(ctx, `SELECT hits FROM public_rate_counters WHERE subject = 'test:all'`).Scan(&hits); err != nil || hits != overall {
		t.Errorf("overall counter: got %d, %v, want %d", hits, err, overall)
	}
	var clientHits int
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(hits), 0) FROM public_rate_counters WHERE subject LIKE 'test:c:%'`).Scan(&clientHits); err != nil || clientHits != overall {
		t.Errorf("client counters: got %d, %v, want %d in all", clientHits, err, overall)
	}
}

// TestPublicPruneAnalytics deletes old events, then trims to the cap, oldest first.
func TestPublicPruneAnalytics(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	st := store.NewPublic(pool)
	ctx := context.Background()
	now := time.Now()
	for i, age := range []time.Duration{48 * time.Hour, 5 * time.Hour, 4 * time.Hour, 3 * time.Hour, time.Hour} {
		if err := st.InsertAnalyticsEvent(ctx, analytics.Event{Name: "page_viewed", Page: "/" + string(rune('a'+i)), Properties: map[string]any{}}, now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := st.PruneAnalytics(ctx, now.Add(-24*time.Hour), 2)
	if err != nil || n != 3 {
		t.Fatalf("pruned: got %d, %v, want 3", n, err)
	}
	var pages string
	if err := pool.QueryRow(ctx, `SELECT string_agg(page, ',' ORDER BY id) FROM public_analytics_events`).Scan(&pages); err != nil || pages != "/d,/e" {
		t.Errorf("kept: got %q, %v, want the newest two /d,/e", pages, err)
	}
}

// TestPublicPruneClaims deletes pending claims that expired before the cutoff, never verified ones.
func TestPublicPruneClaims(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	st := store.NewPublic(pool)
	ctx := context.Background()
	now := time.Now()
	sum := make([]byte, 32)
	add := func(expires time.Time) uuid.UUID {
		in := claim.Intent{ID: uuid.New(), Namespace: "com.example", Name: "x", Source: "direct", SecretHash: sum, TokenHash: sum,
			Status: claim.StatusPending, CreatedAt: now, ExpiresAt: expires}
		if err := st.InsertClaimIntent(ctx, in); err != nil {
			t.Fatal(err)
		}
		return in.ID
	}
	old, verified, fresh := add(now.Add(-30*24*time.Hour)), add(now.Add(-30*24*time.Hour)), add(now.Add(time.Hour))
	if _, err := st.MarkClaimVerified(ctx, verified, claim.MethodDNS, "example.com", now); err != nil {
		t.Fatal(err)
	}
	if err := st.PruneClaims(ctx, now.Add(-7*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[uuid.UUID]bool{old: false, verified: true, fresh: true} {
		_, err := st.ClaimIntent(ctx, id)
		if got := err == nil; got != want {
			t.Errorf("claim kept: got %v (%v), want %v", got, err, want)
		}
	}
}
