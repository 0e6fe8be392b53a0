package watch_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/watch"
)

// BenchmarkWatchScheduler: 1,000 active watches on 50 fixture targets (Dual, each its own host as
// far as per-host spreading goes) at the minimum interval (60 s), run by one scheduler with the
// defaults (16 runs at once, 2 per host) through the real audit engine, audit store and run store:
//
//   - burst: all 1,000 due at once; runs completed per second, and the process's CPU (fixtures
//     included) and PostgreSQL's per run;
//   - steady: next runs spread over one interval, as a running system's are, for two intervals;
//     runs completed per second and the scheduling lag (claim time - next_run_at), p50 and p99;
//   - the CPU of a run as a ratio to a bare audit (Engine.Conformance) of the same targets at the
//     same concurrency.
//
// It takes about three minutes; run it alone:
//
//	go test -run '^$' -bench WatchScheduler -benchtime 1x ./services/verification/internal/watch
func BenchmarkWatchScheduler(b *testing.B) {
	const (
		targets  = 50
		watches  = 1000
		interval = 60 * time.Second
	)
	steady := 2 * interval
	if v := os.Getenv("WATCH_BENCH_STEADY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		steady = d
	}
	ca, err := audittest.NewCA()
	if err != nil {
		b.Fatal(err)
	}
	var urls []string
	var ports []int
	for range targets {
		srv := ca.Serve(audittest.Dual())
		b.Cleanup(srv.Close)
		urls, ports = append(urls, srv.URL), append(ports, srv.Port)
	}
	engine, err := audit.New(audit.Config{
		Targets: safehttp.TargetPolicy{AllowedPorts: ports, AllowPrivate: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
		RootCAs: ca.Pool(),
	})
	if err != nil {
		b.Fatal(err)
	}
	pool := pgtest.NewPool(b, outbox.Migrations(), store.Migrations())
	ctx := context.Background()
	runs := store.NewWatchRuns(pool, 2*time.Minute)
	svc := watch.New(watch.Deps{Runs: runs, Auditor: benchAuditor{audits.New(engine, store.NewAudits(pool), nil, 64, nil)}})
	ids := seedWatches(b, pool, urls, watches, interval)

	// The bare audit: the same targets, 16 at a time.
	const bare = 400
	cpu0, pg0 := processCPU(), postgresCPU()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range watch.DefaultRunConcurrency {
		wg.Go(func() {
			for i := next.Add(1); i <= bare; i = next.Add(1) {
				if _, err := engine.Conformance(ctx, audit.Target{URL: urls[i%targets]}); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
	bareCPU := (processCPU() - cpu0) / bare
	barePG := (postgresCPU() - pg0) / bare
	bareRate := float64(bare) / time.Since(start).Seconds()

	// Burst: every watch due now.
	if _, err := pool.Exec(ctx, `UPDATE target_watches SET next_run_at = now()`); err != nil {
		b.Fatal(err)
	}
	cpu0, pg0 = processCPU(), postgresCPU()
	rate, lags := runFor(b, svc, watches, 0)
	burstCPU := (processCPU() - cpu0) / watches
	burstPG := (postgresCPU() - pg0) / watches
	b.Logf("bare audit: %.0f audits/s, process CPU %v, PostgreSQL CPU %v per audit", bareRate, bareCPU, barePG)
	b.Logf("burst of %d due at once: %.1f runs/s, lag p99 %v (the backlog), process CPU %v (%.2fx a bare audit), PostgreSQL CPU %v per run",
		watches, rate, pct(lags, 0.99), burstCPU, float64(burstCPU)/float64(bareCPU), burstPG)

	// Steady: next runs spread evenly over one interval from now.
	if _, err := pool.Exec(ctx, `UPDATE target_watches w SET next_run_at = now() + make_interval(secs => $2 * o.n / $3)
FROM (SELECT id, row_number() OVER (ORDER BY id) - 1 AS n FROM target_watches) o WHERE w.id = o.id AND w.id = ANY ($1)`,
		ids, interval.Seconds(), watches); err != nil {
		b.Fatal(err)
	}
	cpu0 = processCPU()
	steadyRate, steadyLags := runFor(b, svc, 0, steady)
	done := len(steadyLags)
	b.Logf("steady, %v at a %v interval: %d runs, %.1f runs/s (%.1f due per second), lag p50 %v, p99 %v, max %v; process CPU %v per run",
		steady, interval, done, steadyRate, float64(watches)/interval.Seconds(), pct(steadyLags, 0.5), pct(steadyLags, 0.99),
		pct(steadyLags, 1), (processCPU()-cpu0)/time.Duration(max(done, 1)))
	b.ReportMetric(rate, "burst-runs/s")
	b.ReportMetric(steadyRate, "steady-runs/s")
	b.ReportMetric(float64(pct(steadyLags, 0.99).Milliseconds()), "lag-p99-ms")
	b.ReportMetric(float64(burstCPU)/float64(bareCPU), "cpu-x-bare")

	var failed int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM target_watch_runs WHERE status <> 'succeeded'`).Scan(&failed); err != nil || failed > 0 {
		b.Errorf("%d runs did not succeed (%v)", failed, err)
	}
}

// benchAuditor holds reports under the watch subject, as the service's does.
type benchAuditor struct{ svc *audits.Service }

func (a benchAuditor) Run(ctx context.Context, kind string, t audit.Target, h audits.Holder) (audits.Record, error) {
	h.Issuer = "bench"
	return a.svc.Run(ctx, kind, t, h)
}

// seedWatches stores n active watches of the targets, 50 per organization, each target its own host.
func seedWatches(b *testing.B, pool *pgxpool.Pool, urls []string, n int, interval time.Duration) []uuid.UUID {
	b.Helper()
	ctx := context.Background()
	var ids []uuid.UUID
	for i := range n {
		if i%len(urls) == 0 {
			if _, err := pool.Exec(ctx, `INSERT INTO organizations (id, name) VALUES ($1, $2)`, orgID(i/len(urls)), "bench "+strconv.Itoa(i)); err != nil {
				b.Fatal(err)
			}
		}
		id := uuid.Must(uuid.NewV7())
		ids = append(ids, id)
		if _, err := pool.Exec(ctx, `INSERT INTO target_watches (id, organization_id, target_url, target_host, evaluator, status,
interval_seconds, next_run_at, created_at, updated_at) VALUES ($1, $2, $3, $4, 'mcp', 'active', $5, now() + interval '1 day', now(), now())`,
			id, orgID(i/len(urls)), urls[i%len(urls)], fmt.Sprintf("target-%d.bench", i%len(urls)), int(interval.Seconds())); err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

func orgID(n int) uuid.UUID {
	return uuid.NewSHA1(uuid.NameSpaceOID, []byte("bench-org-"+strconv.Itoa(n)))
}

// runFor runs the scheduler until it has finished want runs (want > 0) or for d, and returns the
// runs finished per second and the lags of the runs it claimed.
func runFor(b *testing.B, svc *watch.Service, want int, d time.Duration) (float64, []time.Duration) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var lags []time.Duration
	var finished atomic.Int64
	all := make(chan struct{})
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		errc <- svc.RunScheduler(ctx, watch.SchedulerConfig{
			OnClaim: func(_ watch.Watch, lag time.Duration) { mu.Lock(); lags = append(lags, lag); mu.Unlock() },
			OnDone: func(watch.Run) {
				if finished.Add(1) == int64(want) {
					close(all)
				}
			},
		})
	}()
	if want > 0 {
		select {
		case <-all:
		case <-time.After(10 * time.Minute):
			b.Fatalf("%d of %d runs in 10 minutes", finished.Load(), want)
		}
	} else {
		time.Sleep(d)
	}
	elapsed := time.Since(start)
	cancel()
	<-errc
	mu.Lock()
	defer mu.Unlock()
	return float64(finished.Load()) / elapsed.Seconds(), append([]time.Duration(nil), lags...)
}

// pct is the nearest-rank percentile p of ds.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// processCPU is this process's CPU time, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// postgresCPU is the CPU time of the local PostgreSQL's processes, their reaped children included
// (0 where /proc cannot tell).
func postgresCPU() time.Duration {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, p := range stats {
		raw, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(raw)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || !strings.HasPrefix(s[open+1:end], "postgres") {
			continue
		}
		fields := strings.Fields(s[end+1:])
		// After the name: state is field 3 of stat(5); utime, stime, cutime, cstime are 14..17.
		for _, f := range fields[11:15] {
			n, _ := strconv.ParseInt(f, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
