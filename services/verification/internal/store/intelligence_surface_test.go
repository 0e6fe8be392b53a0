package store_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
	"github.com/trustlayer/trustlayer/services/verification/internal/events"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
	"github.com/trustlayer/trustlayer/services/verification/internal/registryclient"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// listedRemote is the remote URL every registryfixture server lists.
const listedRemote = "https://mcp.example.com/weather"

// surfaceFixture syncs two servers, io.example/a and io.example/b, that both list listedRemote.
func surfaceFixture(t *testing.T) (*pgxpool.Pool, *store.Intelligence) {
	t.Helper()
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	reg := registryfixture.New(t)
	reg.Publish(registryfixture.Server("io.example/a", "1.0.0"))
	reg.Publish(registryfixture.Server("io.example/b", "1.0.0"))
	st := store.NewIntelligence(pool, events.Outbox{})
	client := registryclient.New(registryclient.Options{AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Timeout: 5 * time.Second, MaxAttempts: 1},
		safehttp.WithBackoff(time.Millisecond, time.Millisecond))
	syncer := intelligence.NewSyncer(st, client, []string{reg.URL}, intelligence.SyncOptions{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := syncer.Poll(context.Background(), reg.URL); err != nil {
		t.Fatal(err)
	}
	return pool, st
}

func count(t *testing.T, pool *pgxpool.Pool, query string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func listing(tools ...string) *surface.Listing {
	l := &surface.Listing{}
	for _, name := range tools {
		l.Tools = append(l.Tools, surface.Tool{Name: name, Description: "Does " + name + ".", Annotations: json.RawMessage(`{"readOnlyHint":true}`)})
	}
	return l
}

// TestRecordSurfaceWithTheAuditReport: an audit of a listed remote records its surface once per
// distinct surface, and a change of surface becomes change rows of every server listing the URL, each
// with its outbox event, in the audit's transaction; an unlisted URL records nothing.
func TestRecordSurfaceWithTheAuditReport(t *testing.T) {
	t.Parallel()
	pool, _ := surfaceFixture(t)
	ctx := context.Background()
	a := store.NewAudits(pool)
	insert := func(url string, l *surface.Listing) {
		t.Helper()
		verdict := "pass"
		if err := a.Insert(ctx, audits.Audit{
			ID: uuid.New(), Kind: audits.KindConformance, URL: url, Issuer: "test", Subject: "s",
			Verdict: &verdict, Report: []byte(`{}`), CreatedAt: time.Now().UTC(), Listing: l,
		}); err != nil {
			t.Fatal(err)
		}
	}
	outboxBefore := count(t, pool, `SELECT count(*) FROM outbox`)

	insert(listedRemote, listing("get_forecast", "delete_alert"))
	insert(listedRemote, listing("delete_alert", "get_forecast")) // the same surface, listed in another order
	insert("https://unlisted.example.com/mcp", listing("x"))
	insert(listedRemote, nil) // tools could not be listed
	if n := count(t, pool, `SELECT count(*) FROM intel_surface_observations`); n != 1 {
		t.Fatalf("got %d observations, want 1 (the listed URL's first surface)", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM intel_changes`); n != 0 {
		t.Fatalf("got %d changes, want none for a baseline observation", n)
	}

	insert(listedRemote, listing("get_forecast"))
	if n := count(t, pool, `SELECT count(*) FROM intel_surface_observations`); n != 2 {
		t.Errorf("got %d observations, want 2", n)
	}
	// One tool_removed per server listing the URL.
	if n := count(t, pool, `SELECT count(*) FROM intel_changes WHERE change_type = 'tool_removed' AND risk = 'high'
        AND remote_url = '`+listedRemote+`' AND to_observation_id IS NOT NULL AND from_snapshot_id = to_snapshot_id`); n != 2 {
		t.Errorf("got %d tool_removed changes, want one per server (2)", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM outbox o JOIN intel_changes c ON c.id = o.id AND o.subject = 'intel.change.high'`); n != 2 {
		t.Errorf("got %d events of the changes, want 2", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM outbox`) - outboxBefore; n != 2 {
		t.Errorf("got %d new events, want 2", n)
	}
	if n := count(t, pool, `SELECT count(*) FROM intel_servers s JOIN intel_changes c ON c.id = s.latest_change_id
        WHERE s.change_count = 1 AND s.high_risk_change_count = 1 AND c.change_type = 'tool_removed'`); n != 2 {
		t.Errorf("got %d servers pointing at their surface change, want 2", n)
	}
	for _, stmt := range []string{`UPDATE intel_surface_observations SET url = 'x'`, `DELETE FROM intel_surface_observations`,
		`TRUNCATE intel_surface_observations CASCADE`} {
		if _, err := pool.Exec(ctx, stmt); err == nil {
			t.Errorf("%s: got no error, want the trigger to reject it", stmt)
		}
	}
}

// TestClaimDueRemotesOncePerDueTime: replicas claiming at once share the due remotes without
// overlap, and a claimed remote is not due again before its interval.
func TestClaimDueRemotesOncePerDueTime(t *testing.T) {
	t.Parallel()
	_, st := surfaceFixture(t)
	ctx := context.Background()
	var mu sync.Mutex
	var claimed []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			urls, err := st.ClaimDueRemotes(ctx, time.Hour, 10)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			claimed = append(claimed, urls...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if !slices.Equal(claimed, []string{listedRemote}) {
		t.Errorf("got claims %v, want %s once", claimed, listedRemote)
	}
	if urls, err := st.ClaimDueRemotes(ctx, time.Hour, 10); err != nil || len(urls) != 0 {
		t.Errorf("got %v (%v), want nothing due before the interval", urls, err)
	}
}
