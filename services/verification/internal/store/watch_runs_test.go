package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/watch"
)

// runFixture is a database with one organization, and a helper that adds watches to it.
type runFixture struct {
	t    *testing.T
	pool *pgxpool.Pool
	org  uuid.UUID
	runs *store.WatchRuns
}

func newRunFixture(t *testing.T) *runFixture {
	t.Helper()
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	org := uuid.New()
	if _, err := pool.Exec(context.Background(), `INSERT INTO organizations (id, name) VALUES ($1, 'acme')`, org); err != nil {
		t.Fatal(err)
	}
	return &runFixture{t: t, pool: pool, org: org, runs: store.NewWatchRuns(pool, time.Minute)}
}

// watch adds a watch of host due at due, with a policy of rules when rules is set.
func (f *runFixture) watch(host, status string, due time.Time, rules *watch.Rules) uuid.UUID {
	f.t.Helper()
	ctx := context.Background()
	var policy *uuid.UUID
	if rules != nil {
		id := uuid.New()
		raw, _ := json.Marshal(rules)
		if _, err := f.pool.Exec(ctx, `INSERT INTO watch_policies (id, organization_id, name, rules, created_at, updated_at)
VALUES ($1, $2, $3, $4, now(), now())`, id, f.org, id.String(), raw); err != nil {
			f.t.Fatal(err)
		}
		policy = &id
	}
	id := uuid.Must(uuid.NewV7())
	if _, err := f.pool.Exec(ctx, `INSERT INTO target_watches (id, organization_id, target_url, target_host, evaluator, status,
policy_id, interval_seconds, next_run_at, created_at, updated_at) VALUES ($1, $2, $3, $4, 'mcp', $5, $6, 60, $7, now(), now())`,
		id, f.org, "https://"+host+"/mcp/"+id.String(), host, status, policy, due); err != nil {
		f.t.Fatal(err)
	}
	return id
}

func TestWatchRunsClaim(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	minScore := 80
	due := f.watch("a.example", watch.StatusActive, now.Add(-time.Minute), &watch.Rules{MinScore: &minScore})
	f.watch("a.example", watch.StatusActive, now.Add(-30*time.Second), nil)
	b := f.watch("b.example", watch.StatusActive, now.Add(-10*time.Second), nil)
	f.watch("c.example", watch.StatusActive, now.Add(time.Hour), nil)  // not due
	f.watch("d.example", watch.StatusPaused, now.Add(-time.Hour), nil) // paused

	if next, found, err := f.runs.NextDue(ctx, now); err != nil || !found || !next.Equal(now.Add(time.Hour)) {
		t.Errorf("NextDue = %v, %v, %v; want the active watch due in an hour", next, found, err)
	}
	if _, found, err := f.runs.NextDue(ctx, now.Add(2*time.Hour)); err != nil || found {
		t.Errorf("NextDue after every run: found %v, %v", found, err)
	}

	// The scheduler's pick sees the due watches in due order; it takes one of a.example.
	var seen []uuid.UUID
	claimed, err := f.runs.ClaimDue(ctx, watch.Claim{Now: now, Candidates: 10, Pick: func(ws []watch.Watch) []watch.Watch {
		for _, w := range ws {
			seen = append(seen, w.ID)
		}
		return []watch.Watch{ws[0], ws[2]}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 3 || seen[0] != due || seen[2] != b {
		t.Errorf("candidates %v, want the three due active watches, earliest first", seen)
	}
	if len(claimed) != 2 || claimed[0].Watch.ID != due || claimed[0].Rules == nil || *claimed[0].Rules.MinScore != 80 ||
		claimed[1].Rules != nil || claimed[0].Run.Status != watch.RunRunning || claimed[0].Run.Trigger != watch.TriggerSchedule {
		t.Fatalf("claimed %+v", claimed)
	}

	// Leased: not claimed again, even once due; the unpicked one still is. A skipped host is not.
	again, err := f.runs.ClaimDue(ctx, watch.Claim{Now: now.Add(time.Second), Candidates: 10, SkipHosts: []string{"b.example"}})
	if err != nil || len(again) != 1 || again[0].Watch.TargetHost != "a.example" || again[0].Watch.ID == due {
		t.Fatalf("second claim %+v, %v; want only the unpicked a.example watch", again, err)
	}

	// The run's outcome ends the lease and sets the next run.
	r := claimed[0].Run
	at := now.Add(2 * time.Second)
	audit := uuid.New()
	score := 75
	r.Status, r.FinishedAt, r.AuditID, r.Verdict, r.Score, r.SurfaceHash = watch.RunSucceeded, &at, &audit, "warn", &score, "abc"
	r.Surface, r.Alert, r.Reasons = json.RawMessage(`{"Tools":[]}`), true, []string{"min_score: x"}
	r.Changes = []json.RawMessage{json.RawMessage(`{"kind":"tool_added","item":"x"}`)}
	next := now.Add(time.Minute)
	if err := f.runs.FinishRun(ctx, r, next); err != nil {
		t.Fatal(err)
	}
	if err := f.runs.FinishRun(ctx, r, next); !errors.Is(err, watch.ErrRunAbandoned) {
		t.Errorf("finishing a finished run: %v, want ErrRunAbandoned", err)
	}
	got, err := f.runs.GetRun(ctx, due, r.ID)
	if err != nil || got.Status != watch.RunSucceeded || *got.AuditID != audit || *got.Score != 75 || got.Verdict != "warn" ||
		!got.Alert || len(got.Reasons) != 1 || len(got.Changes) != 1 || got.Surface != nil {
		t.Errorf("GetRun = %+v, %v", got, err)
	}
	prev, err := f.runs.PreviousRun(ctx, due, uuid.New())
	if err != nil || prev == nil || prev.ID != r.ID || string(prev.Surface) != `{"Tools": []}` {
		t.Errorf("PreviousRun = %+v, %v; want the run with its surface", prev, err)
	}
	if prev, err := f.runs.PreviousRun(ctx, due, r.ID); err != nil || prev != nil {
		t.Errorf("PreviousRun excluding the only run = %+v, %v", prev, err)
	}
	var lease *time.Time
	var nextRun time.Time
	if err := f.pool.QueryRow(ctx, `SELECT lease_until, next_run_at FROM target_watches WHERE id = $1`, due).Scan(&lease, &nextRun); err != nil {
		t.Fatal(err)
	}
	if lease != nil || !nextRun.Equal(next) {
		t.Errorf("lease %v, next run %v; want none and %v", lease, nextRun, next)
	}

	// A lease that passed: the next claim takes the watch and records the abandoned run failed.
	stale := claimed[1].Run
	late := now.Add(2 * time.Minute)
	retaken, err := f.runs.ClaimDue(ctx, watch.Claim{Now: late, Candidates: 10, Pick: func(ws []watch.Watch) []watch.Watch {
		for _, w := range ws {
			if w.ID == b {
				return []watch.Watch{w}
			}
		}
		return nil
	}})
	if err != nil || len(retaken) != 1 {
		t.Fatalf("claim after the lease: %+v, %v", retaken, err)
	}
	if got, _ := f.runs.GetRun(ctx, b, stale.ID); got.Status != watch.RunFailed || got.Error == "" {
		t.Errorf("abandoned run %+v, want failed with a reason", got)
	}
	stale.Status = watch.RunSucceeded
	if err := f.runs.FinishRun(ctx, stale, late); !errors.Is(err, watch.ErrRunAbandoned) {
		t.Errorf("finishing an abandoned run: %v, want ErrRunAbandoned", err)
	}
}

// TestWatchRunsClaimOnce: replicas claiming at the same moment never take one watch twice.
func TestWatchRunsClaimOnce(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	ctx := context.Background()
	now := time.Now().UTC()
	for i := range 40 {
		f.watch("h"+string(rune('a'+i%5))+".example", watch.StatusActive, now.Add(-time.Duration(i)*time.Second), nil)
	}
	var mu sync.Mutex
	seen := map[uuid.UUID]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 10 {
				claimed, err := f.runs.ClaimDue(ctx, watch.Claim{Now: now, Candidates: 8, Pick: func(ws []watch.Watch) []watch.Watch {
					return ws[:min(len(ws), 3)]
				}})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, c := range claimed {
					seen[c.Watch.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != 40 {
		t.Errorf("%d watches claimed, want all 40", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("watch %s claimed %d times", id, n)
		}
	}
}

func TestWatchRunsStartRun(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	id := f.watch("a.example", watch.StatusActive, now, nil)
	paused := f.watch("b.example", watch.StatusPaused, now, nil)
	archived := f.watch("c.example", watch.StatusArchived, now, nil)

	c, started, err := f.runs.StartRun(ctx, f.org, id, now)
	if err != nil || !started || c.Run.Trigger != watch.TriggerManual || c.Watch.ID != id {
		t.Fatalf("StartRun = %+v, %v, %v", c, started, err)
	}
	// While it runs, a second start answers the same run; the scheduler does not take the watch.
	again, started, err := f.runs.StartRun(ctx, f.org, id, now.Add(time.Second))
	if err != nil || started || again.Run.ID != c.Run.ID {
		t.Errorf("second StartRun = %+v, %v, %v; want the running run", again.Run, started, err)
	}
	if claimed, err := f.runs.ClaimDue(ctx, watch.Claim{Now: now.Add(30 * time.Second), Candidates: 10}); err != nil || len(claimed) != 0 {
		t.Errorf("claimed a leased watch: %+v, %v", claimed, err)
	}
	for name, tc := range map[string]struct {
		org, id uuid.UUID
		want    error
	}{
		"paused":                 {f.org, paused, fault.ErrWatchNotActive},
		"archived":               {f.org, archived, fault.ErrWatchNotActive},
		"unknown":                {f.org, uuid.New(), fault.ErrNotFound},
		"another organization's": {uuid.New(), id, fault.ErrNotFound},
	} {
		if _, _, err := f.runs.StartRun(ctx, tc.org, tc.id, now); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
}

func TestWatchRunsList(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	id := f.watch("a.example", watch.StatusActive, now, nil)
	var ids []uuid.UUID
	for i := range 5 {
		at := now.Add(time.Duration(i) * time.Minute)
		c, started, err := f.runs.StartRun(ctx, f.org, id, at)
		if err != nil || !started {
			t.Fatal(started, err)
		}
		c.Run.Status, c.Run.FinishedAt = watch.RunFailed, &at
		if err := f.runs.FinishRun(ctx, c.Run, at); err != nil {
			t.Fatal(err)
		}
		ids = append([]uuid.UUID{c.Run.ID}, ids...)
	}
	var got []uuid.UUID
	cursor := ""
	for pages := 0; ; pages++ {
		items, next, err := f.runs.ListRuns(ctx, f.org, id, watch.Page{Limit: 2, Cursor: cursor})
		if err != nil || pages > 3 {
			t.Fatal(err, pages)
		}
		for _, r := range items {
			got = append(got, r.ID)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if len(got) != 5 {
		t.Fatalf("listed %v", got)
	}
	for i := range ids {
		if got[i] != ids[i] {
			t.Errorf("run %d is %s, want %s (newest first)", i, got[i], ids[i])
		}
	}
	if _, _, err := f.runs.ListRuns(ctx, f.org, id, watch.Page{Limit: 2, Cursor: "nope"}); !errors.Is(err, fault.ErrBadCursor) {
		t.Errorf("bad cursor: %v", err)
	}
	if _, _, err := f.runs.ListRuns(ctx, uuid.New(), id, watch.Page{Limit: 2}); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("another organization: %v", err)
	}
}
