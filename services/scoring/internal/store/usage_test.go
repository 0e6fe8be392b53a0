package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
)

// usageFixture returns a migrated pool, its store, and a key with its account.
func usageFixture(t *testing.T) (*pgxpool.Pool, *store.Store, string, string) {
	t.Helper()
	pool := pgtest.NewPool(t, store.Migrations())
	key, account := insertKey(t, pool)
	return pool, store.New(pool), key, account
}

// insertKey inserts a trial account with one key and returns the key and account ids.
func insertKey(t testing.TB, pool *pgxpool.Pool) (string, string) {
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

func record(requestID, key, account string) meter.RequestRecord {
	return meter.RequestRecord{RequestID: requestID, KeyID: key, AccountID: account, Endpoint: meter.EndpointDenial,
		RouteID: "unified_score", ModelVersion: "0.3.3", ScoredAt: time.Date(2026, 11, 3, 10, 4, 5, 123000, time.UTC)}
}

// packed is recs as the meter hands them to the store.
func packed(t testing.TB, recs ...meter.RequestRecord) []meter.Record {
	t.Helper()
	out := make([]meter.Record, len(recs))
	for i, r := range recs {
		var err error
		if out[i], err = meter.NewRecord(r); err != nil {
			t.Fatalf("NewRecord(%+v): %v", r, err)
		}
	}
	return out
}

func usage(t *testing.T, s *store.Store, key, period string) int64 {
	t.Helper()
	calls, err := s.Usage(context.Background(), key, period)
	if err != nil {
		t.Fatalf("Usage(%s): %v", period, err)
	}
	return calls
}

func TestWriteBatchAddsUsageAndStoresRecords(t *testing.T) {
	t.Parallel()
	pool, s, key, account := usageFixture(t)
	other, _ := insertKey(t, pool)
	ctx := context.Background()

	if got := usage(t, s, key, "2026-11"); got != 0 {
		t.Fatalf("usage before any write: got %d, want 0", got)
	}
	rec := record(uuid.NewString(), key, account)
	item := record(uuid.NewString()+".7", key, account) // a batch item's
	b := meter.Batch{ID: uuid.NewString(), Records: packed(t, rec, item), Usage: []meter.UsageDelta{
		{KeyID: key, Period: "2026-11", Calls: 3},
		{KeyID: key, Period: "2026-11", Calls: 4}, // same key and period: summed, not a conflict
		{KeyID: key, Period: "2026-10", Calls: 1},
		{KeyID: other, Period: "2026-11", Calls: 2},
	}}
	if err := s.WriteBatch(ctx, b); err != nil {
		t.Fatalf("WriteBatch: %v", err)
	}
	if err := s.WriteBatch(ctx, meter.Batch{ID: uuid.NewString(), Usage: []meter.UsageDelta{{KeyID: key, Period: "2026-11", Calls: 5}}}); err != nil {
		t.Fatalf("second WriteBatch: %v", err)
	}
	for _, c := range []struct {
		key, period string
		want        int64
	}{{key, "2026-11", 12}, {key, "2026-10", 1}, {other, "2026-11", 2}, {other, "2026-10", 0}} {
		if got := usage(t, s, c.key, c.period); got != c.want {
			t.Errorf("usage of %s in %s: got %d, want %d", c.key, c.period, got, c.want)
		}
	}

	for _, want := range []meter.RequestRecord{rec, item} {
		got, err := s.RequestRecord(ctx, want.RequestID)
		if err != nil || got != want {
			t.Errorf("RequestRecord: got %+v, %v; want %+v", got, err, want)
		}
	}
	if _, err := s.RequestRecord(ctx, uuid.NewString()); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("RequestRecord of an unknown id: got %v, want fault.ErrNotFound", err)
	}
}

// TestWriteBatchAppliesAnIDOnce: a retry of a batch whose commit succeeded unseen changes nothing, and
// a record id already stored, or twice in a batch, is stored once without failing its batch (the
// records then go through the staging table instead of straight in).
func TestWriteBatchAppliesAnIDOnce(t *testing.T) {
	t.Parallel()
	_, s, key, account := usageFixture(t)
	ctx := context.Background()
	req1, req2, req3 := uuid.NewString(), uuid.NewString(), uuid.NewString()
	b := meter.Batch{ID: uuid.NewString(), Usage: []meter.UsageDelta{{KeyID: key, Period: "2026-11", Calls: 2}},
		Records: packed(t, record(req1, key, account))}
	for range 2 {
		if err := s.WriteBatch(ctx, b); err != nil {
			t.Fatalf("WriteBatch: %v", err)
		}
	}
	if got := usage(t, s, key, "2026-11"); got != 2 {
		t.Fatalf("after writing one batch twice: got %d calls, want 2", got)
	}
	again := meter.Batch{ID: uuid.NewString(), Usage: []meter.UsageDelta{{KeyID: key, Period: "2026-11", Calls: 1}},
		Records: packed(t, record(req1, key, account), record(req2, key, account))}
	if err := s.WriteBatch(ctx, again); err != nil {
		t.Fatalf("WriteBatch with a stored request id: %v", err)
	}
	if got := usage(t, s, key, "2026-11"); got != 3 {
		t.Errorf("got %d calls, want 3", got)
	}
	if _, err := s.RequestRecord(ctx, req2); err != nil {
		t.Errorf("a new record beside a duplicate: %v", err)
	}
	twice := meter.Batch{ID: uuid.NewString(), Records: packed(t, record(req3, key, account), record(req3, key, account))}
	if err := s.WriteBatch(ctx, twice); err != nil {
		t.Fatalf("WriteBatch with a request id twice: %v", err)
	}
	if _, err := s.RequestRecord(ctx, req3); err != nil {
		t.Errorf("a record twice in its batch: %v", err)
	}
}

// TestWriteBatchIsOneTransaction: a batch the database rejects leaves nothing behind, its id
// included, so that the meter's retry of the corrected data is applied.
func TestWriteBatchIsOneTransaction(t *testing.T) {
	t.Parallel()
	_, s, key, account := usageFixture(t)
	ctx := context.Background()
	id, req := uuid.NewString(), uuid.NewString()
	bad := meter.Batch{ID: id, Records: packed(t, record(req, key, account)), Usage: []meter.UsageDelta{
		{KeyID: key, Period: "2026-11", Calls: 2},
		{KeyID: uuid.NewString(), Period: "2026-11", Calls: 1}, // no such key
	}}
	if err := s.WriteBatch(ctx, bad); err == nil {
		t.Fatal("WriteBatch with an unknown key succeeded")
	}
	if got := usage(t, s, key, "2026-11"); got != 0 {
		t.Errorf("usage after a failed batch: got %d, want 0", got)
	}
	if _, err := s.RequestRecord(ctx, req); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("record after a failed batch: got %v, want fault.ErrNotFound", err)
	}
	bad.Usage = bad.Usage[:1]
	if err := s.WriteBatch(ctx, bad); err != nil {
		t.Fatalf("WriteBatch with the same id after the failure: %v", err)
	}
	if got := usage(t, s, key, "2026-11"); got != 2 {
		t.Errorf("usage: got %d, want 2", got)
	}
}

// TestWriteBatchConcurrentReplicas: replicas adding to the same counters in different orders neither
// deadlock nor lose a delta.
func TestWriteBatchConcurrentReplicas(t *testing.T) {
	t.Parallel()
	pool, s, first, _ := usageFixture(t)
	keys := []string{first}
	for range 4 {
		k, _ := insertKey(t, pool)
		keys = append(keys, k)
	}
	const writers, batches = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches)
	for w := range writers {
		wg.Go(func() {
			for range batches {
				b := meter.Batch{ID: uuid.NewString()}
				for i := range keys {
					k := keys[(i+w)%len(keys)] // each writer starts at another key
					b.Usage = append(b.Usage, meter.UsageDelta{KeyID: k, Period: "2026-11", Calls: 1})
				}
				errs <- s.WriteBatch(context.Background(), b)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("WriteBatch: %v", err)
		}
	}
	for _, k := range keys {
		if got := usage(t, s, k, "2026-11"); got != writers*batches {
			t.Errorf("usage of %s: got %d, want %d", k, got, writers*batches)
		}
	}
}

func TestUsageCountersRejectABadPeriod(t *testing.T) {
	t.Parallel()
	_, s, key, _ := usageFixture(t)
	for _, p := range []string{"2026-1", "2026/11", "", "november"} {
		err := s.WriteBatch(context.Background(), meter.Batch{ID: uuid.NewString(), Usage: []meter.UsageDelta{{KeyID: key, Period: p, Calls: 1}}})
		if err == nil {
			t.Errorf("period %q: accepted, want the check constraint to reject it", p)
		}
	}
}

func TestRequestRecordsAreImmutableExceptForPruning(t *testing.T) {
	t.Parallel()
	pool, s, key, account := usageFixture(t)
	ctx := context.Background()
	old, recent := record(uuid.NewString(), key, account), record(uuid.NewString(), key, account)
	old.ScoredAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.WriteBatch(ctx, meter.Batch{ID: uuid.NewString(), Records: packed(t, old, recent)}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE request_records SET model_version = 'x'`,
		`DELETE FROM request_records`,
	} {
		if _, err := pool.Exec(ctx, q); err == nil {
			t.Errorf("%s: succeeded, want the trigger to reject it", q)
		}
	}
	n, err := s.PruneRequestRecords(ctx, time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	if err != nil || n != 1 {
		t.Fatalf("PruneRequestRecords: got %d, %v; want 1 deleted", n, err)
	}
	if _, err := s.RequestRecord(ctx, old.RequestID); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("pruned record: got %v, want fault.ErrNotFound", err)
	}
	if _, err := s.RequestRecord(ctx, recent.RequestID); err != nil {
		t.Errorf("record within retention: %v", err)
	}
	// The permission ends with the prune's transaction.
	if _, err := pool.Exec(ctx, `DELETE FROM request_records`); err == nil {
		t.Error("DELETE after a prune: succeeded, want the trigger to reject it")
	}
}

func TestWriteBatchManyRecords(t *testing.T) {
	t.Parallel()
	pool, s, key, account := usageFixture(t)
	ctx := context.Background()
	b := meter.Batch{ID: uuid.NewString(), Usage: []meter.UsageDelta{{KeyID: key, Period: "2026-11", Calls: 5000}}}
	for range 5000 {
		b.Records = append(b.Records, packed(t, record(uuid.NewString(), key, account))...)
	}
	if err := s.WriteBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM request_records`).Scan(&n); err != nil || n != 5000 {
		t.Errorf("records: got %d (%v), want 5000", n, err)
	}
}

// BenchmarkWriteBatch writes a meter batch of 5,000 request records per iteration: the flush's cost
// per scoring call, most of what a 100-item batch request costs beyond its scoring. The records are
// of one key, or spread over 1,000 keys as under scoring-bench's load (a usage counter row per key
// and batch).
func BenchmarkWriteBatch(b *testing.B) {
	for _, nkeys := range []int{1, 1000} {
		b.Run(fmt.Sprintf("keys=%d", nkeys), func(b *testing.B) {
			pool := pgtest.NewPool(b, store.Migrations())
			s := store.New(pool)
			ctx := context.Background()
			const n = 5_000
			keys, accounts := make([]string, nkeys), make([]string, nkeys)
			for i := range keys {
				keys[i], accounts[i] = insertKey(b, pool)
			}
			b.ReportAllocs()
			for b.Loop() {
				recs := make([]meter.Record, n)
				calls := map[string]int64{}
				for i := range recs {
					recs[i] = packed(b, record(uuid.Must(uuid.NewV7()).String(), keys[i%nkeys], accounts[i%nkeys]))[0]
					calls[keys[i%nkeys]]++
				}
				batch := meter.Batch{ID: uuid.NewString(), Records: recs}
				for k, c := range calls {
					batch.Usage = append(batch.Usage, meter.UsageDelta{KeyID: k, Period: "2026-11", Calls: c})
				}
				if err := s.WriteBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}
