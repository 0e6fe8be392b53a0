package intelligence_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/events"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
	"github.com/trustlayer/trustlayer/services/verification/internal/registryclient"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// loopback is the operator exception the tests use to reach the fixture registry; the SSRF guard
// itself stays on.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// harness is a fixture registry synced into a fresh database.
type harness struct {
	t      testing.TB
	ctx    context.Context
	pool   *pgxpool.Pool
	reg    *registryfixture.Registry
	store  *store.Intelligence
	syncer *intelligence.Syncer
	reader *intelligence.Reader
}

func newHarness(t testing.TB, pageSize int) *harness {
	t.Helper()
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	reg := registryfixture.New(t)
	st := store.NewIntelligence(pool, events.Outbox{})
	return &harness{
		t: t, ctx: context.Background(), pool: pool, reg: reg, store: st, reader: intelligence.NewReader(st),
		syncer: newSyncer(st, reg, intelligence.SyncOptions{PageSize: pageSize}),
	}
}

func newSyncer(st *store.Intelligence, reg *registryfixture.Registry, opts intelligence.SyncOptions) *intelligence.Syncer {
	client := registryclient.New(registryclient.Options{AllowPrivate: loopback, Timeout: 5 * time.Second, MaxAttempts: 2},
		safehttp.WithBackoff(time.Millisecond, 5*time.Millisecond))
	return intelligence.NewSyncer(st, client, []string{reg.URL}, opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func (h *harness) poll() intelligence.PollResult {
	h.t.Helper()
	res, err := h.syncer.Poll(h.ctx, h.reg.URL)
	if err != nil {
		h.t.Fatalf("poll: %v", err)
	}
	return res
}

func (h *harness) count(query string, args ...any) int {
	h.t.Helper()
	var n int
	if err := h.pool.QueryRow(h.ctx, query, args...).Scan(&n); err != nil {
		h.t.Fatalf("%s: %v", query, err)
	}
	return n
}

func (h *harness) server(name string) intelligence.ServerState {
	h.t.Helper()
	key, err := intelligence.ParseName(name)
	if err != nil {
		h.t.Fatal(err)
	}
	st, err := h.reader.Server(h.ctx, key)
	if err != nil {
		h.t.Fatalf("server %s: %v", name, err)
	}
	return st
}

// baseline publishes three servers, b in two versions, and runs the first full sync.
func (h *harness) baseline() intelligence.PollResult {
	h.t.Helper()
	h.reg.Publish(registryfixture.Server("io.example/a", "1.0.0"))
	h.reg.Publish(registryfixture.Server("io.example/b", "1.0.0"))
	h.reg.Publish(registryfixture.Server("io.example/b", "1.1.0"))
	h.reg.Publish(registryfixture.Server("io.example/c", "1.0.0"))
	return h.poll()
}

func TestSyncFirstPollIsABaselineOfEveryPage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 2)
	res := h.baseline()
	if !res.Baseline || res.Incremental || res.Pages != 2 || res.Observed != 4 || res.Snapshots != 4 || res.Changes != 0 {
		t.Fatalf("got %+v, want a 2-page baseline of 4 snapshots and no change", res)
	}
	reqs := h.reg.Requests()
	if reqs[0].Has("updated_since") || reqs[0].Get("limit") != "2" || reqs[1].Get("cursor") == "" {
		t.Errorf("got requests %v, want a full listing of limit 2, paged by cursor", reqs)
	}
	if got := h.server("io.example/b").Current.Server.Version; got != "1.1.0" {
		t.Errorf("b's current version: got %s, want the latest 1.1.0", got)
	}
	if n := h.count(`SELECT count(*) FROM outbox`); n != 0 {
		t.Errorf("got %d events, want none for a baseline", n)
	}
	// Polling again lists the same entries: nothing is recorded twice.
	again := h.poll()
	if !again.Incremental || again.Snapshots != 0 || again.Changes != 0 {
		t.Errorf("second poll: got %+v, want an incremental poll that writes nothing", again)
	}
	if last := h.reg.Requests()[len(h.reg.Requests())-1]; !last.Has("updated_since") {
		t.Errorf("second poll: got %v, want updated_since", last)
	}
}

func TestSyncIncrementalPollRecordsClassifiedChangesWithEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 2)
	h.baseline()
	before := h.server("io.example/a")

	h.reg.Advance(time.Hour)
	a := registryfixture.Server("io.example/a", "1.1.0")
	a["remotes"] = []any{map[string]any{"type": "streamable-http", "url": "https://mcp.attacker.example/weather"}}
	h.reg.Publish(a)
	h.reg.SetStatus("io.example/c", "1.0.0", "deprecated", "use d")
	b := registryfixture.Server("io.example/b", "1.1.0")
	b["description"] = "Edited in place"
	h.reg.Publish(b)

	res := h.poll()
	if !res.Incremental || res.Snapshots != 3 {
		t.Fatalf("got %+v, want an incremental poll with 3 new snapshots", res)
	}
	type key struct{ server, changeType, risk string }
	got := map[key]int{}
	changes, _, err := h.reader.Changes(h.ctx, nil, intelligence.ChangeFilter{}, intelligence.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changes {
		got[key{c.Key.String(), string(c.Type), string(c.Risk)}]++
	}
	want := map[key]int{
		{"io.example/a", "version_bump", "low"}: 1, {"io.example/a", "remote_host_changed", "high"}: 1,
		{"io.example/a", "package_version_changed", "low"}: 1,
		{"io.example/b", "description_changed", "low"}:     1,
		{"io.example/c", "status_deprecated", "high"}:      1,
	}
	if len(got) != len(want) {
		t.Fatalf("got changes %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("change %v: got %d, want %d", k, got[k], n)
		}
	}
	// One outbox row per change, with the change's id, on intel.change.<risk>.
	if n := h.count(`SELECT count(*) FROM outbox o JOIN intel_changes c ON c.id = o.id AND o.subject = 'intel.change.' || c.risk`); n != len(changes) {
		t.Errorf("got %d matching outbox rows, want %d", n, len(changes))
	}
	after := h.server("io.example/a")
	if after.Current.Server.Version != "1.1.0" || after.ChangeCount != 3 || after.HighRiskChangeCount != 1 || after.LatestChange == nil {
		t.Errorf("a: got version %s, %d changes, %d high, latest %v; want 1.1.0, 3, 1 and a latest change",
			after.Current.Server.Version, after.ChangeCount, after.HighRiskChangeCount, after.LatestChange)
	}
	if !after.FirstSeenAt.Equal(before.FirstSeenAt) || !after.LastSeenAt.After(before.LastSeenAt) {
		t.Errorf("a: first seen %v -> %v, last seen %v -> %v; want first kept and last moved",
			before.FirstSeenAt, after.FirstSeenAt, before.LastSeenAt, after.LastSeenAt)
	}
	if h.poll().Snapshots != 0 {
		t.Error("a poll with nothing new recorded snapshots")
	}
}

func TestSyncBadPageAbortsThePollWithoutMovingItsPosition(t *testing.T) {
	t.Parallel()
	for name, fault := range map[string]registryfixture.Fault{
		"not JSON": registryfixture.NotJSON, "wrong shape": registryfixture.WrongShape,
		"server error": registryfixture.ServerError, "down": registryfixture.Down,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, 2)
			h.baseline()
			hwm := h.highWaterMark()

			h.reg.Advance(time.Hour)
			for _, n := range []string{"io.example/a", "io.example/b", "io.example/c"} {
				srv := registryfixture.Server(n, "9.0.0")
				h.reg.Publish(srv)
			}
			h.reg.Fail(2, fault)
			if _, err := h.syncer.Poll(h.ctx, h.reg.URL); err == nil {
				t.Fatal("got no error for a poll whose second page failed")
			}
			var failures int
			var lastError string
			if err := h.pool.QueryRow(h.ctx, `SELECT consecutive_failures, last_error FROM intel_registries`).Scan(&failures, &lastError); err != nil {
				t.Fatal(err)
			}
			if got := h.highWaterMark(); !got.Equal(hwm) || failures != 1 || lastError == "" {
				t.Errorf("got high-water mark %v, %d failures, error %q; want %v kept, 1 failure and an error", got, failures, lastError, hwm)
			}
			if got := h.server("io.example/c").Current.Server.Version; got != "1.0.0" {
				t.Errorf("c: got %s, want 1.0.0 until its page is read", got)
			}

			h.reg.Fail(2, registryfixture.NoFault)
			h.poll()
			if got := h.server("io.example/c").Current.Server.Version; got != "9.0.0" {
				t.Errorf("after the retry, c: got %s, want 9.0.0", got)
			}
			// The first page was read twice but recorded once.
			if n := h.count(`SELECT count(*) FROM intel_changes WHERE name = 'a' AND change_type = 'version_bump'`); n != 1 {
				t.Errorf("a's version bump: got %d changes, want 1", n)
			}
			if n := h.count(`SELECT count(*) FROM intel_snapshots WHERE version = '9.0.0'`); n != 3 {
				t.Errorf("got %d snapshots of 9.0.0, want 3", n)
			}
		})
	}
}

func (h *harness) highWaterMark() time.Time {
	h.t.Helper()
	var t time.Time
	if err := h.pool.QueryRow(h.ctx, `SELECT high_water_mark FROM intel_registries`).Scan(&t); err != nil {
		h.t.Fatal(err)
	}
	return t
}

func TestSyncRegistryDownAtFirstSyncIsRetriedAsABaseline(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 10)
	h.reg.Publish(registryfixture.Server("io.example/a", "1.0.0"))
	h.reg.Fail(0, registryfixture.Down)
	if _, err := h.syncer.Poll(h.ctx, h.reg.URL); err == nil {
		t.Fatal("got no error from a registry that is down")
	}
	h.reg.Fail(0, registryfixture.NoFault)
	if res := h.poll(); !res.Baseline || res.Snapshots != 1 {
		t.Errorf("got %+v, want the retried poll to be the baseline", res)
	}
}

func TestSyncSkipsAndCountsInvalidItems(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 10)
	h.reg.Publish(registryfixture.Server("io.example/a", "1.0.0"))
	h.reg.Publish(registryfixture.Server("io.example/b", "1.0.0"))
	h.reg.SetStatus("io.example/b", "1.0.0", "retired", "")
	h.reg.Fail(0, registryfixture.BadItem)
	res := h.poll()
	if res.Skipped != 2 || res.Snapshots != 1 {
		t.Fatalf("got %+v, want the invalid name and the invalid status skipped and a recorded", res)
	}
	if n := h.count(`SELECT last_skipped FROM intel_registries`); n != 2 {
		t.Errorf("got last_skipped %d, want 2", n)
	}
	if _, err := h.reader.Server(h.ctx, intelligence.ServerKey{Namespace: "io.example", Name: "b"}); !errors.Is(err, fault.ErrServerNotFound) {
		t.Errorf("b: got %v, want not found", err)
	}
}

func TestSyncPollsARegistryOnOneReplicaAtATime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 1)
	err := h.store.WithRegistryLock(h.ctx, h.reg.URL, func(ctx context.Context) error {
		_, err := h.syncer.Poll(ctx, h.reg.URL)
		return err
	})
	if !errors.Is(err, fault.ErrSyncInProgress) {
		t.Fatalf("got %v, want fault.ErrSyncInProgress while another holder polls", err)
	}

	h.baseline()
	h.reg.Advance(time.Hour)
	h.reg.Publish(registryfixture.Server("io.example/a", "2.0.0"))
	// Replicas polling at once: whichever runs, each change is recorded once.
	var wg sync.WaitGroup
	for range 4 {
		replica := newSyncer(h.store, h.reg, intelligence.SyncOptions{PageSize: 1})
		wg.Go(func() {
			if _, err := replica.Poll(h.ctx, h.reg.URL); err != nil && !errors.Is(err, fault.ErrSyncInProgress) {
				t.Errorf("replica poll: %v", err)
			}
		})
	}
	wg.Wait()
	if n := h.count(`SELECT count(*) FROM intel_snapshots WHERE version = '2.0.0'`); n != 1 {
		t.Errorf("got %d snapshots of 2.0.0, want 1", n)
	}
}

func TestSyncLoopLeavesARecentlyPolledRegistryAlone(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 10)
	h.baseline()
	before := len(h.reg.Requests())
	// Another replica's loop, started just after this poll: its first tick finds the registry polled
	// less than an interval ago.
	loop := newSyncer(h.store, h.reg, intelligence.SyncOptions{Interval: time.Hour})
	ctx, cancel := context.WithTimeout(h.ctx, 300*time.Millisecond)
	defer cancel()
	if err := loop.Run(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want the loop to run until its context ends", err)
	}
	if after := len(h.reg.Requests()); after != before {
		t.Errorf("got %d more requests, want none", after-before)
	}
}

// TestSyncLoopPollsOncePerInterval: a replica's tick skips a registry whose last poll started less
// than an interval ago (less a 5 % slack), however far into the interval it falls, and polls it
// once the interval has passed, so that replicas whose ticks fall apart poll once per interval.
func TestSyncLoopPollsOncePerInterval(t *testing.T) {
	t.Parallel()
	const interval = 20 * time.Second
	for _, tt := range []struct {
		name  string
		ago   time.Duration
		polls bool
	}{
		{"a third of an interval", interval / 3, false},
		{"past the middle", interval * 6 / 10, false},
		{"just before the slack", interval * 94 / 100, false},
		{"within the slack", interval * 96 / 100, true},
		{"a whole interval", interval, true},
		{"long ago", 3 * interval, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, 10)
			h.baseline()
			if _, err := h.pool.Exec(h.ctx, `UPDATE intel_registries SET last_poll_at = now() - make_interval(secs => $1)`, tt.ago.Seconds()); err != nil {
				t.Fatal(err)
			}
			before := len(h.reg.Requests())
			loop := newSyncer(h.store, h.reg, intelligence.SyncOptions{Interval: interval})
			ctx, cancel := context.WithTimeout(h.ctx, 500*time.Millisecond)
			defer cancel()
			_ = loop.Run(ctx)
			if polled := len(h.reg.Requests()) > before; polled != tt.polls {
				t.Errorf("last poll %s ago: polled %v, want %v", tt.ago, polled, tt.polls)
			}
		})
	}
}

func TestHistoryAndChangesAreImmutable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 10)
	h.baseline()
	h.reg.Advance(time.Hour)
	h.reg.SetStatus("io.example/a", "1.0.0", "deleted", "")
	h.poll()
	for _, stmt := range []string{
		`UPDATE intel_snapshots SET status = 'active'`, `DELETE FROM intel_snapshots`,
		`UPDATE intel_changes SET risk = 'low'`, `DELETE FROM intel_changes`,
	} {
		if _, err := h.pool.Exec(h.ctx, stmt); err == nil {
			t.Errorf("%s: got no error, want the trigger to reject it", stmt)
		}
	}
}
