package meter_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
)

var quiet = slog.New(slog.DiscardHandler)

// november is a Tuesday noon in the middle of a period.
var november = time.Date(2026, 11, 10, 12, 0, 0, 0, time.UTC)

// clock is a settable clock for WithClock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func plan(t *testing.T, name string) meter.Plan {
	t.Helper()
	p, ok := meter.PlanFor(name)
	if !ok {
		t.Fatalf("PlanFor(%q): no such plan", name)
	}
	return p
}

// database returns a migrated pool and its store.
func database(t *testing.T) (*pgxpool.Pool, *store.Store) {
	t.Helper()
	pool := pgtest.NewPool(t, store.Migrations())
	return pool, store.New(pool)
}

// newKey inserts an account with one key and returns the key and account ids.
func newKey(t *testing.T, pool *pgxpool.Pool) (string, string) {
	t.Helper()
	ctx := context.Background()
	account, key := uuid.NewString(), uuid.NewString()
	hash := make([]byte, 32)
	_, _ = rand.Read(hash)
	if _, err := pool.Exec(ctx, `INSERT INTO accounts (id, plan) VALUES ($1, 'trial')`, account); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO api_keys (id, account_id, kind, key_hash, prefix) VALUES ($1, $2, 'trial', $3, 'sk_test')`,
		key, account, hex.EncodeToString(hash)); err != nil {
		t.Fatal(err)
	}
	return key, account
}

// persist sets a key's persisted usage, as another replica's flushes would have.
func persist(t *testing.T, pool *pgxpool.Pool, key, period string, calls int64) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO usage_counters (key_id, period, calls) VALUES ($1, $2, $3)
ON CONFLICT (key_id, period) DO UPDATE SET calls = EXCLUDED.calls`, key, period, calls); err != nil {
		t.Fatal(err)
	}
}

func dbUsage(t *testing.T, s *store.Store, key, period string) int64 {
	t.Helper()
	calls, err := s.Usage(context.Background(), key, period)
	if err != nil {
		t.Fatal(err)
	}
	return calls
}

func dbRecords(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM request_records`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func rec(requestID, key, account string) meter.RequestRecord {
	return meter.RequestRecord{RequestID: requestID, KeyID: key, AccountID: account, Endpoint: meter.EndpointDenial,
		RouteID: "unified_score", ModelVersion: "0.3.3", ScoredAt: november}
}

func admit(t *testing.T, m *meter.Meter, key string, p meter.Plan, n int) meter.Ticket {
	t.Helper()
	tk, err := m.Admit(context.Background(), key, p, n)
	if err != nil {
		t.Fatalf("Admit(n=%d): %v", n, err)
	}
	return tk
}

// refused asserts that Admit refuses with want and returns the refusal.
func refused(t *testing.T, m *meter.Meter, key string, p meter.Plan, n int, want error) *meter.LimitError {
	t.Helper()
	tk, err := m.Admit(context.Background(), key, p, n)
	if err == nil {
		tk.Release()
		t.Fatalf("Admit(n=%d): admitted, want %v", n, want)
	}
	var le *meter.LimitError
	if !errors.Is(err, want) || !errors.As(err, &le) {
		t.Fatalf("Admit(n=%d): got %v, want a *LimitError wrapping %v", n, err, want)
	}
	return le
}

// wideQuota is a hard-quota plan whose rate and in-flight bounds stay out of the way.
func wideQuota(included int64) meter.Plan {
	return meter.Plan{Name: "quota", IncludedCalls: included, HardQuota: true, RatePerSecond: 1_000, Burst: 1_000, MaxInFlight: 100}
}

func TestPlanFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		want meter.Plan
	}{
		// README "Keys, limits and metering": 1,000 calls a month, 1 request per second with a burst of 5, 1 in flight.
		{"trial", meter.Plan{Name: "trial", IncludedCalls: 1000, HardQuota: true, RatePerSecond: 1, Burst: 5, MaxInFlight: 1}},
		// Usage-based after the same 1,000 included calls, with higher rates and concurrency.
		{"paid", meter.Plan{Name: "paid", IncludedCalls: 1000, RatePerSecond: 50, Burst: 100, MaxInFlight: 16}},
		{"commit", meter.Plan{Name: "commit", IncludedCalls: 1000, RatePerSecond: 200, Burst: 400, MaxInFlight: 64}},
		{"internal", meter.Plan{Name: "internal", RatePerSecond: 1000, Burst: 2000, MaxInFlight: 256}},
	} {
		if got := plan(t, c.name); got != c.want {
			t.Errorf("PlanFor(%q): got %+v, want %+v", c.name, got, c.want)
		}
	}
	if _, ok := meter.PlanFor("gold"); ok {
		t.Error(`PlanFor("gold"): found, want no such plan`)
	}
}

func TestAdmitLimits(t *testing.T) {
	t.Parallel()
	pool, s := database(t)
	trial, paid := plan(t, "trial"), plan(t, "paid")
	for _, c := range []struct {
		name      string
		persisted int64 // calls already in the database for the period
		run       func(t *testing.T, m *meter.Meter, clk *clock, key string)
	}{
		{"trial bursts 5 then is rate limited", 0, func(t *testing.T, m *meter.Meter, _ *clock, key string) {
			for range 5 {
				tk := admit(t, m, key, trial, 1)
				tk.Release()
			}
			le := refused(t, m, key, trial, 1, meter.ErrRateLimited)
			if le.RetryAfter <= 0 || le.RetryAfter > time.Second {
				t.Errorf("RetryAfter: got %v, want within (0, 1s] at 1 request per second", le.RetryAfter)
			}
		}},
		{"trial refills one request per second", 0, func(t *testing.T, m *meter.Meter, clk *clock, key string) {
			for range 5 {
				tk := admit(t, m, key, trial, 1)
				tk.Release()
			}
			clk.Advance(999 * time.Millisecond)
			refused(t, m, key, trial, 1, meter.ErrRateLimited)
			clk.Advance(time.Millisecond)
			tk := admit(t, m, key, trial, 1)
			tk.Release()
			refused(t, m, key, trial, 1, meter.ErrRateLimited)
		}},
		{"trial has one request in flight", 0, func(t *testing.T, m *meter.Meter, _ *clock, key string) {
			held := admit(t, m, key, trial, 1)
			if le := refused(t, m, key, trial, 1, meter.ErrInFlight); le.RetryAfter != 0 {
				t.Errorf("RetryAfter of ErrInFlight: got %v, want 0 (unknown)", le.RetryAfter)
			}
			held.Release()
			tk := admit(t, m, key, trial, 1)
			tk.Commit(1)
		}},
		{"trial with 998 persisted takes 2 more, not 3", 998, func(t *testing.T, m *meter.Meter, clk *clock, key string) {
			le := refused(t, m, key, trial, 3, meter.ErrQuotaExhausted)
			if want := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Sub(clk.Now()); le.RetryAfter != want {
				t.Errorf("RetryAfter of ErrQuotaExhausted: got %v, want %v (the next period)", le.RetryAfter, want)
			}
			tk := admit(t, m, key, trial, 2)
			tk.Commit(2)
			refused(t, m, key, trial, 1, meter.ErrQuotaExhausted)
		}},
		{"the quota counts pending and reserved calls", 997, func(t *testing.T, m *meter.Meter, _ *clock, key string) {
			p := wideQuota(1000)
			committed := admit(t, m, key, p, 1)
			committed.Commit(1) // pending, not flushed
			held := admit(t, m, key, p, 2)
			refused(t, m, key, p, 1, meter.ErrQuotaExhausted)
			held.Commit(1) // one item of the two failed: one call comes back
			tk := admit(t, m, key, p, 1)
			tk.Release()
		}},
		{"paid is not stopped past the included calls", 5000, func(t *testing.T, m *meter.Meter, _ *clock, key string) {
			tk := admit(t, m, key, paid, 100)
			tk.Commit(100)
		}},
		{"a trial upgraded in place gets the paid limits", 1000, func(t *testing.T, m *meter.Meter, clk *clock, key string) {
			refused(t, m, key, trial, 1, meter.ErrQuotaExhausted)
			var held []meter.Ticket
			for range paid.MaxInFlight {
				held = append(held, admit(t, m, key, paid, 1))
			}
			refused(t, m, key, paid, 1, meter.ErrInFlight)
			for i := range held {
				held[i].Release()
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			key, _ := newKey(t, pool)
			if c.persisted > 0 {
				persist(t, pool, key, "2026-11", c.persisted)
			}
			clk := newClock(november)
			c.run(t, meter.New(s, meter.WithClock(clk.Now), meter.WithLogger(quiet)), clk, key)
		})
	}
}

func TestAdmitRejectsInvalidArguments(t *testing.T) {
	t.Parallel()
	m := meter.New(memSink{}, meter.WithLogger(quiet))
	for _, c := range []struct {
		key string
		n   int
	}{{"not-a-uuid", 1}, {"urn:uuid:6ba7b810-9dad-11d1-80b4-00c04fd430c8", 1}, {uuid.NewString(), 0}} {
		_, err := m.Admit(context.Background(), c.key, plan(t, "paid"), c.n)
		var le *meter.LimitError
		if err == nil || errors.As(err, &le) {
			t.Errorf("Admit(%q, n=%d): got %v, want an argument error", c.key, c.n, err)
		}
	}
}

func TestAdmitFailsWhenTheFirstReadFails(t *testing.T) {
	t.Parallel()
	sink := &flakySink{Sink: memSink{}, usageErr: errors.New("database unreachable")}
	m := meter.New(sink, meter.WithLogger(quiet))
	key := uuid.NewString()
	if _, err := m.Admit(context.Background(), key, plan(t, "trial"), 1); err == nil {
		t.Fatal("Admit of a hard-quota key whose usage cannot be read: admitted, want an error")
	}
	// A plan without a hard quota needs no reading.
	tk := admit(t, m, key, plan(t, "paid"), 1)
	tk.Release()
}

func TestCommitPanicsBeyondTheReservation(t *testing.T) {
	t.Parallel()
	m := meter.New(memSink{}, meter.WithLogger(quiet))
	tk := admit(t, m, uuid.NewString(), plan(t, "paid"), 2)
	defer func() {
		if recover() == nil {
			t.Error("Commit(3) on a ticket for 2: no panic")
		}
	}()
	tk.Commit(3)
}

// TestConcurrentCommitsAreWrittenExactlyOnce commits from many goroutines while flushes run, then
// compares the database with what was committed.
func TestConcurrentCommitsAreWrittenExactlyOnce(t *testing.T) {
	t.Parallel()
	pool, s := database(t)
	keyA, accountA := newKey(t, pool)
	keyB, accountB := newKey(t, pool)
	m := meter.New(s, meter.WithClock(newClock(november).Now), meter.WithLogger(quiet))
	p := meter.Plan{Name: "load", RatePerSecond: 1e6, Burst: 1e6, MaxInFlight: 1000}

	const workers, each = 16, 60
	ids := make([]string, workers*each) // a request id for each request; its items are "<id>.<j>"
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	var billedA, billedB atomic.Int64
	stop := make(chan struct{})
	flushed := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				flushed <- nil
				return
			default:
			}
			if err := m.Flush(context.Background()); err != nil {
				flushed <- err
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				key, account, billed := keyA, accountA, &billedA
				if i%2 == 1 {
					key, account, billed = keyB, accountB, &billedB
				}
				tk, err := m.Admit(context.Background(), key, p, 3)
				if err != nil {
					t.Errorf("Admit: %v", err)
					return
				}
				switch i % 3 {
				case 0:
					tk.Release()
				default:
					k := i % 3 // 1 or 2 of the 3 items succeed
					recs := make([]meter.RequestRecord, k)
					for j := range recs {
						recs[j] = rec(fmt.Sprintf("%s.%d", ids[w*each+i], j), key, account)
					}
					tk.Commit(k, recs...)
					billed.Add(int64(k))
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-flushed; err != nil {
		t.Fatalf("Flush during commits: %v", err)
	}
	if err := m.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	for _, c := range []struct {
		key  string
		want int64
	}{{keyA, billedA.Load()}, {keyB, billedB.Load()}} {
		if got := dbUsage(t, s, c.key, "2026-11"); got != c.want {
			t.Errorf("usage of %s: got %d, want %d", c.key, got, c.want)
		}
	}
	if got, want := dbRecords(t, pool), int(billedA.Load()+billedB.Load()); got != want {
		t.Errorf("request records: got %d, want %d", got, want)
	}
	if m.PendingRecord(ids[1] + ".0") {
		t.Error("PendingRecord after Flush: true, want false")
	}
}

// flakySink fails its next failures writes, before or after letting them through to Sink (the
// second is a commit whose acknowledgement was lost), and fails Usage with usageErr.
type flakySink struct {
	meter.Sink
	mu         sync.Mutex
	failures   int
	afterWrite bool
	usageErr   error
}

func (f *flakySink) WriteBatch(ctx context.Context, b meter.Batch) error {
	f.mu.Lock()
	fail := f.failures > 0
	if fail {
		f.failures--
	}
	f.mu.Unlock()
	if !fail {
		return f.Sink.WriteBatch(ctx, b)
	}
	if f.afterWrite {
		if err := f.Sink.WriteBatch(ctx, b); err != nil {
			return err
		}
	}
	return errors.New("connection reset by peer")
}

func (f *flakySink) Usage(ctx context.Context, keyID, period string) (int64, error) {
	if f.usageErr != nil {
		return 0, f.usageErr
	}
	return f.Sink.Usage(ctx, keyID, period)
}

func TestFailedFlushKeepsTheBatchAndWritesItOnce(t *testing.T) {
	t.Parallel()
	pool, s := database(t)
	for _, c := range []struct {
		name       string
		afterWrite bool
	}{
		{"the write did not commit", false},
		{"the write committed but its answer was lost", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			key, account := newKey(t, pool)
			p := wideQuota(1000)
			sink := &flakySink{Sink: s, failures: 1, afterWrite: c.afterWrite}
			m := meter.New(sink, meter.WithClock(newClock(november).Now), meter.WithLogger(quiet))

			tk := admit(t, m, key, p, 3)
			tk.Commit(3, rec(key+".1", key, account), rec(key+".2", key, account), rec(key+".3", key, account))
			if err := m.Flush(ctx); err == nil {
				t.Fatal("Flush through a failing sink: got nil, want the error")
			}
			if !m.PendingRecord(key + ".1") {
				t.Error("PendingRecord after a failed flush: false, want true (kept for the retry)")
			}
			if u, err := m.Snapshot(ctx, key, p); err != nil || u.Used != 3 {
				t.Errorf("Snapshot after a failed flush: got %+v, %v; want Used 3", u, err)
			}
			tk = admit(t, m, key, p, 2) // committed while the batch waits for its retry
			tk.Commit(2, rec(key+".4", key, account))

			if err := m.Flush(ctx); err != nil {
				t.Fatalf("second Flush: %v", err)
			}
			if got := dbUsage(t, s, key, "2026-11"); got != 5 {
				t.Errorf("usage: got %d, want 5 (each call once)", got)
			}
			for i := 1; i <= 4; i++ {
				if _, err := s.RequestRecord(ctx, fmt.Sprintf("%s.%d", key, i)); err != nil {
					t.Errorf("record %d: %v", i, err)
				}
			}
			if m.PendingRecord(key + ".1") {
				t.Error("PendingRecord after the retry: true, want false")
			}
			if u, err := m.Snapshot(ctx, key, p); err != nil || u.Used != 5 || u.Unwritten != 0 {
				t.Errorf("Snapshot: got %+v, %v; want Used 5, Unwritten 0", u, err)
			}
		})
	}
}

// TestRunWritesEverythingOnShutdown: cancelling Run's context flushes what is pending, and a meter
// started afterwards on the same database (a restart) sees it.
func TestRunWritesEverythingOnShutdown(t *testing.T) {
	t.Parallel()
	pool, s := database(t)
	key, account := newKey(t, pool)
	trial := plan(t, "trial")
	m := meter.New(s, meter.WithFlushInterval(time.Hour), meter.WithLogger(quiet))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	for i := range 3 {
		tk := admit(t, m, key, trial, 1)
		tk.Commit(1, rec(fmt.Sprintf("%s.%d", key, i), key, account))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: got %v, want nil after the final flush", err)
	}
	period := time.Now().UTC().Format("2006-01")
	if got := dbUsage(t, s, key, period); got != 3 {
		t.Errorf("usage after shutdown: got %d, want 3", got)
	}
	restarted := meter.New(s, meter.WithLogger(quiet))
	u, err := restarted.Snapshot(context.Background(), key, trial)
	if err != nil {
		t.Fatal(err)
	}
	if u.Used != 3 || u.Remaining != 997 || u.Unwritten != 0 || u.Period != period {
		t.Errorf("Snapshot after a restart: got %+v, want Used 3, Remaining 997, Unwritten 0 in %s", u, period)
	}
}

// TestRunFlushesEachIntervalAndWhenTheBatchIsFull polls the database for what Run writes on its own:
// at the configured interval (SCORING_USAGE_FLUSH_INTERVAL), not before it, or when the batch is full.
func TestRunFlushesEachIntervalAndWhenTheBatchIsFull(t *testing.T) {
	t.Parallel()
	pool, s := database(t)
	p := plan(t, "internal")
	for _, c := range []struct {
		name string
		opts []meter.Option
		// notBefore is how long after Run starts the records must still be pending.
		notBefore time.Duration
	}{
		{"every interval", []meter.Option{meter.WithFlushInterval(20 * time.Millisecond)}, 20 * time.Millisecond},
		{"configured interval", []meter.Option{meter.WithFlushInterval(400 * time.Millisecond)}, 400 * time.Millisecond},
		{"full batch", []meter.Option{meter.WithFlushInterval(time.Hour), meter.WithMaxBatch(3)}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			key, account := newKey(t, pool)
			m := meter.New(s, append(c.opts, meter.WithLogger(quiet))...)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			started := time.Now()
			go func() { done <- m.Run(ctx) }()
			defer func() {
				cancel()
				<-done
			}()
			tk := admit(t, m, key, p, 3)
			tk.Commit(3, rec(key+".1", key, account), rec(key+".2", key, account), rec(key+".3", key, account))
			deadline := time.Now().Add(5 * time.Second)
			for m.PendingRecord(key + ".3") {
				if time.Now().After(deadline) {
					t.Fatal("the records are still pending after 5 s")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if took := time.Since(started); took < c.notBefore {
				t.Errorf("flushed %v after Run started, before the flush interval %v", took, c.notBefore)
			}
			if got := dbUsage(t, s, key, time.Now().UTC().Format("2006-01")); got != 3 {
				t.Errorf("usage: got %d, want 3", got)
			}
		})
	}
}

// TestReplicasConverge: a replica enforces its last reading of the database for RefreshIntervals
// flush intervals, then reads again and sees what the other replica wrote.
func TestReplicasConverge(t *testing.T) {
	t.Parallel()
	pool, s := database(t)
	key, _ := newKey(t, pool)
	p := wideQuota(10)
	clkA, clkB := newClock(november), newClock(november)
	a := meter.New(s, meter.WithClock(clkA.Now), meter.WithLogger(quiet))
	b := meter.New(s, meter.WithClock(clkB.Now), meter.WithLogger(quiet))
	ctx := context.Background()

	tk := admit(t, b, key, p, 1) // b reads 0
	tk.Release()
	for range 8 {
		tk := admit(t, a, key, p, 1)
		tk.Commit(1)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Within the window b still goes by its reading: the documented cost of per-replica enforcement.
	tk = admit(t, b, key, p, 3)
	tk.Release()

	clkB.Advance(meter.RefreshIntervals * time.Second)
	refused(t, b, key, p, 3, meter.ErrQuotaExhausted)
	tk = admit(t, b, key, p, 2)
	tk.Release()
	if u, err := b.Snapshot(ctx, key, p); err != nil || u.Used != 8 || u.Remaining != 2 {
		t.Errorf("b's Snapshot: got %+v, %v; want Used 8, Remaining 2", u, err)
	}
}

// TestMonthRollover: the quota starts again with the calendar month (UTC), and a call is billed in
// the period of its commit.
func TestMonthRollover(t *testing.T) {
	t.Parallel()
	pool, s := database(t)
	key, _ := newKey(t, pool)
	trial := plan(t, "trial")
	persist(t, pool, key, "2026-11", 1000)
	clk := newClock(time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC))
	m := meter.New(s, meter.WithClock(clk.Now), meter.WithLogger(quiet))

	if le := refused(t, m, key, trial, 1, meter.ErrQuotaExhausted); le.RetryAfter != time.Second {
		t.Errorf("RetryAfter at 23:59:59 on the last day: got %v, want 1s", le.RetryAfter)
	}
	clk.Advance(time.Second)
	tk := admit(t, m, key, trial, 1)
	tk.Commit(1)

	clk.Advance(31*24*time.Hour - 500*time.Millisecond) // 2026-12-31 23:59:59.5
	tk = admit(t, m, key, trial, 1)
	clk.Advance(time.Second)
	tk.Commit(1) // admitted in December, succeeded in January
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for period, want := range map[string]int64{"2026-11": 1000, "2026-12": 1, "2027-01": 1} {
		if got := dbUsage(t, s, key, period); got != want {
			t.Errorf("usage in %s: got %d, want %d", period, got, want)
		}
	}
}

func TestSnapshot(t *testing.T) {
	t.Parallel()
	pool, s := database(t)
	ctx := context.Background()
	for _, c := range []struct {
		plan      string
		persisted int64
		want      meter.Usage
	}{
		{"trial", 400, meter.Usage{Plan: "trial", Used: 403, Unwritten: 3, Included: 1000, Remaining: 597, HardQuota: true}},
		{"paid", 1200, meter.Usage{Plan: "paid", Used: 1203, Unwritten: 3, Included: 1000, Overage: 203}},
	} {
		t.Run(c.plan, func(t *testing.T) {
			t.Parallel()
			key, _ := newKey(t, pool)
			persist(t, pool, key, "2026-11", c.persisted)
			clk := newClock(november)
			m := meter.New(s, meter.WithClock(clk.Now), meter.WithLogger(quiet))
			p := plan(t, c.plan)
			for range 3 {
				tk := admit(t, m, key, p, 1)
				tk.Commit(1)
			}
			held := admit(t, m, key, p, 1)
			defer held.Release()
			got, err := m.Snapshot(ctx, key, p)
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			want.Period, want.InFlight, want.FlushInterval = "2026-11", 1, time.Second
			want.ResetsAt, want.AsOf = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), november
			if got != want {
				t.Errorf("Snapshot:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestCommitDropsRecordsTheDatabaseWouldReject: a bad record is not stored, its call is still billed,
// and it does not block the batch.
func TestCommitDropsRecordsTheDatabaseWouldReject(t *testing.T) {
	t.Parallel()
	pool, s := database(t)
	key, account := newKey(t, pool)
	m := meter.New(s, meter.WithLogger(quiet))
	good := rec(key+".1", key, account)
	bad := rec(key+".2", key, account)
	bad.Endpoint = "appeals"
	noAccount := rec(key+".3", key, "")
	notOurs := rec("req-4", key, account) // not a request id the service makes
	tk := admit(t, m, key, plan(t, "paid"), 4)
	tk.Commit(4, bad, good, noAccount, notOurs)
	for _, r := range []meter.RequestRecord{bad, noAccount, notOurs} {
		if m.PendingRecord(r.RequestID) {
			t.Errorf("%s is pending, want it dropped", r.RequestID)
		}
	}
	if !m.PendingRecord(good.RequestID) {
		t.Error("the good record is not pending")
	}
	if err := m.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if got := dbUsage(t, s, key, time.Now().UTC().Format("2006-01")); got != 4 {
		t.Errorf("usage: got %d, want 4", got)
	}
	if got := dbRecords(t, pool); got != 1 {
		t.Errorf("records: got %d, want 1", got)
	}
}

// TestUnlimitedStoresRecordsAndCountsNothing: past every limit of a trial key, an Unlimited ticket
// is still admitted; its Commit stores the request record and bills no call, and neither it nor a
// Release touches the key's limits.
func TestUnlimitedStoresRecordsAndCountsNothing(t *testing.T) {
	t.Parallel()
	pool, s := database(t)
	key, account := newKey(t, pool)
	m := meter.New(s, meter.WithLogger(quiet))
	trial := plan(t, "trial")
	held := admit(t, m, key, trial, 1) // the trial's one request in flight
	for i := range 10 {                // past the trial's burst of 5
		tk := m.Unlimited(1)
		if i%2 == 0 {
			tk.Release()
			continue
		}
		tk.Commit(1, rec(fmt.Sprintf("%s.%d", key, i), key, account))
		tk.Commit(1) // a second end of the same ticket does nothing
	}
	refused(t, m, key, trial, 1, meter.ErrInFlight)
	held.Release()
	if err := m.Flush(context.Background()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if got := dbRecords(t, pool); got != 5 {
		t.Errorf("records: got %d, want 5", got)
	}
	if got := dbUsage(t, s, key, time.Now().UTC().Format("2006-01")); got != 0 {
		t.Errorf("usage: got %d, want 0", got)
	}
	tk := admit(t, m, key, trial, 1) // the slot is free again, and nothing else was taken
	tk.Release()
}

func TestIdleKeysAreEvicted(t *testing.T) {
	t.Parallel()
	pool, s := database(t)
	ctx := context.Background()
	idle, _ := newKey(t, pool)
	running, _ := newKey(t, pool)
	unwritten, _ := newKey(t, pool)
	clk := newClock(november)
	m := meter.New(s, meter.WithClock(clk.Now), meter.WithLogger(quiet))
	trial := plan(t, "trial")

	tk := admit(t, m, idle, trial, 1)
	tk.Release()
	held := admit(t, m, running, trial, 1)
	tk = admit(t, m, unwritten, trial, 1)
	tk.Commit(1)

	clk.Advance(meter.IdleTTL)
	if got := m.EvictIdle(); got != 1 {
		t.Errorf("evicted: got %d, want 1 (the key with nothing running or pending)", got)
	}
	held.Release()
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Advance(meter.IdleTTL)
	if got := m.EvictIdle(); got != 2 {
		t.Errorf("evicted after release and flush: got %d, want 2", got)
	}
	if got := m.KeyCount(); got != 0 {
		t.Errorf("keys in memory: got %d, want 0", got)
	}
	// An evicted key comes back with its usage read from the database.
	if u, err := m.Snapshot(ctx, unwritten, trial); err != nil || u.Used != 1 {
		t.Errorf("Snapshot after eviction: got %+v, %v; want Used 1", u, err)
	}
}
