package main

// The coverage summary under load (docs/performance.md): GET /v1/coverage-summary, which every
// replica caches for VERIFICATION_COVERAGE_CACHE_TTL, at the throughput runs' concurrency, against a
// plain indexed count query (SELECT count(*) FROM intel_servers) run by as many connections on the
// same PostgreSQL in the same run; and one computation of the summary (its cache cold) against one
// such count.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// seedCoverageAudits stores an audit of a third of the seeded servers' remotes, half of them older
// than 7 days, so that the summary's join of remotes and audits has rows to match.
const seedCoverageAudits = `
INSERT INTO audits (id, kind, url, issuer, subject, verdict, report, created_at)
SELECT gen_random_uuid(), 'mcp', r->>'url', 'bench', 'bench', 'pass', '{}'::jsonb,
       now() - CASE WHEN n % 2 = 0 THEN interval '1 day' ELSE interval '10 days' END
FROM (SELECT s.id, row_number() OVER (ORDER BY s.id) AS n, sn.server_json
      FROM intel_servers s JOIN intel_snapshots sn ON sn.id = s.current_snapshot_id) x
CROSS JOIN LATERAL json_array_elements(x.server_json->'remotes') r
WHERE x.n % 3 = 0`

const plainCount = `SELECT count(*) FROM intel_servers`

// coverage measures the coverage summary against the plain count.
func (b *bench) coverage(dbURL string) error {
	ctx, c, out := b.ctx, b.c, b.out
	pool, err := pgxpool.New(ctx, addParams(dbURL, fmt.Sprintf("pool_max_conns=%d", c.workers)))
	if err != nil {
		return err
	}
	defer pool.Close()
	tag, err := pool.Exec(ctx, seedCoverageAudits)
	if err != nil {
		return fmt.Errorf("seed audits: %w", err)
	}
	if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) audits"); err != nil {
		return err
	}
	fmt.Fprintf(out, "\ncoverage summary: %d servers, %d audits of their remotes, %d clients, %s per run\n",
		c.seed.Servers+c.seed.Long, tag.RowsAffected(), c.workers, c.duration)

	// One computation, cache cold, against one count: median of 5 each.
	public := store.NewPublic(pool)
	var summaryTimes, countTimes []time.Duration
	for range 5 {
		t := time.Now()
		if _, err := public.CoverageSummary(ctx, time.Now()); err != nil {
			return err
		}
		summaryTimes = append(summaryTimes, time.Since(t))
		t = time.Now()
		var n int64
		if err := pool.QueryRow(ctx, plainCount).Scan(&n); err != nil {
			return err
		}
		countTimes = append(countTimes, time.Since(t))
	}
	summary, count := median(summaryTimes), median(countTimes)
	fmt.Fprintf(out, "%-52s %8s (a plain count: %s, %.1fx)\n", "one summary computed, cache cold (median of 5)",
		ms(summary), ms(count), float64(summary)/float64(count))

	// Under load, in two interleaved rounds.
	route := func(int) (string, string, []byte, http.Header) {
		return http.MethodGet, b.service + "/v1/coverage-summary", nil, nil
	}
	var rs, qs [2]float64
	for round := range 2 {
		r := loadtest.ClosedLoop(ctx, b.client, route, c.workers, c.duration)
		if r.Failed > 0 {
			return fmt.Errorf("coverage summary: %d of %d requests failed: %v", r.Failed, r.Requests, r.FirstError)
		}
		q, err := countLoop(ctx, pool, c.workers, c.duration)
		if err != nil {
			return err
		}
		rs[round], qs[round] = r.RPS(), q
		fmt.Fprintf(out, "%-52s %8.0f req/s (p50 %s, p99 %s)\n", "GET /v1/coverage-summary", r.RPS(), ms(r.P50), ms(r.P99))
		fmt.Fprintf(out, "%-52s %8.0f queries/s\n", "SELECT count(*) FROM intel_servers", q)
	}
	fmt.Fprintf(out, "coverage summary against the plain count, same run: %.2fx (rounds %.2fx, %.2fx)\n",
		(rs[0]+rs[1])/(qs[0]+qs[1]), rs[0]/qs[0], rs[1]/qs[1])
	return nil
}

// countLoop runs the plain count on workers connections for d and returns queries per second.
func countLoop(ctx context.Context, pool *pgxpool.Pool, workers int, d time.Duration) (float64, error) {
	var n atomic.Int64
	var first atomic.Pointer[error]
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				var c int64
				if err := pool.QueryRow(ctx, plainCount).Scan(&c); err != nil {
					first.CompareAndSwap(nil, &err)
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if err := first.Load(); err != nil {
		return 0, *err
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
