package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
)

var _ meter.Sink = (*Store)(nil)

var recordColumns = []string{"request_id", "key_id", "account_id", "endpoint", "route_id", "model_version", "scored_at"}

const (
	// usageBatchApply records a batch id; no row inserted means the batch was applied before.
	usageBatchApply = `INSERT INTO usage_batches (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`

	// usageBatchesPrune drops ids old enough that no retry can follow. SKIP LOCKED: two replicas
	// flushing at once do not wait on each other's prune.
	usageBatchesPrune = `
DELETE FROM usage_batches WHERE id IN (
    SELECT id FROM usage_batches WHERE applied_at < now() - interval '7 days'
    ORDER BY applied_at LIMIT 1000 FOR UPDATE SKIP LOCKED)`

	// usageCountersAdd adds the deltas. GROUP BY: ON CONFLICT DO UPDATE may not touch a row twice in
	// one statement, so deltas of one key and period are summed first. ORDER BY: replicas lock the
	// counters they share in the same order, and so cannot deadlock.
	usageCountersAdd = `
INSERT INTO usage_counters (key_id, period, calls, updated_at)
SELECT u.key_id::uuid, u.period, sum(u.calls)::bigint, now()
FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u (key_id, period, calls)
GROUP BY 1, 2
ORDER BY 1, 2
ON CONFLICT (key_id, period) DO UPDATE
SET calls = usage_counters.calls + EXCLUDED.calls, updated_at = EXCLUDED.updated_at`

	// requestRecordsStage is where a batch's records are copied (binary COPY) before requestRecordsInsert
	// moves them, when copying them straight into request_records met a request id already stored
	// (copyRecords). A temporary table is private to its connection; it is emptied at commit.
	requestRecordsStage = `
CREATE TEMPORARY TABLE IF NOT EXISTS request_records_stage (
    request_id text, key_id uuid, account_id uuid, endpoint text, route_id text, model_version text, scored_at timestamptz
) ON COMMIT DELETE ROWS`

	// requestRecordsInsert moves the staged records; a request id already stored is skipped, so that
	// writing a batch again is harmless.
	requestRecordsInsert = `
INSERT INTO request_records (request_id, key_id, account_id, endpoint, route_id, model_version, scored_at)
SELECT request_id, key_id, account_id, endpoint, route_id, model_version, scored_at
FROM request_records_stage
ON CONFLICT (request_id) DO NOTHING`

	usageCounterGet = `SELECT calls FROM usage_counters WHERE key_id = $1 AND period = $2`

	requestRecordGet = `
SELECT request_id, key_id::text, account_id::text, endpoint, route_id, model_version, scored_at
FROM request_records WHERE request_id = $1`

	// requestRecordsPruneAllow is what the records' trigger lets a DELETE through on (migration 00002).
	requestRecordsPruneAllow = `SET LOCAL scoring.request_records_prune = 'on'`
	requestRecordsPrune      = `DELETE FROM request_records WHERE scored_at < $1`
)

// WriteBatch applies a meter batch in one transaction: usage deltas added to their counters, request
// records inserted (an existing request id is skipped). A batch id already applied changes nothing,
// so a retry after an unknown outcome does not count twice (the meter.Sink contract).
func (s *Store) WriteBatch(ctx context.Context, b meter.Batch) error {
	if b.ID == "" {
		return errors.New("store: usage batch without an id")
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, usageBatchApply, b.ID)
		if err != nil {
			return fmt.Errorf("record usage batch: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		if len(b.Usage) > 0 {
			keys, periods, calls := make([]string, len(b.Usage)), make([]string, len(b.Usage)), make([]int64, len(b.Usage))
			for i, u := range b.Usage {
				keys[i], periods[i], calls[i] = u.KeyID, u.Period, u.Calls
			}
			if _, err := tx.Exec(ctx, usageCountersAdd, keys, periods, calls); err != nil {
				return fmt.Errorf("add usage: %w", err)
			}
		}
		if len(b.Records) > 0 {
			if err := copyRecords(ctx, tx, b.Records); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, usageBatchesPrune); err != nil {
			return fmt.Errorf("prune usage batches: %w", err)
		}
		return nil
	})
}

// uniqueViolation is PostgreSQL's SQLSTATE of a duplicate key.
const uniqueViolation = "23505"

// copyRecords stores a batch's records. A flush carries thousands of them, and binary COPY streams
// them where one INSERT's array parameters were encoded as text into a message of megabytes (a third
// of the service's CPU under batch load). They are copied straight into request_records: a request id
// is new by construction (a UUIDv7 per response; a batch written again is skipped by its id), and
// going through a staging table with INSERT ... ON CONFLICT DO NOTHING cost PostgreSQL 5.7 µs of CPU
// per record against 3.3 µs straight in (BenchmarkWriteBatch/keys=1, all of its processes). Should an
// id be stored already, the copy is undone to a savepoint and the records go through the staging
// table, which skips the ids stored.
func copyRecords(ctx context.Context, tx pgx.Tx, records []meter.Record) error {
	rows := func() pgx.CopyFromSource { return newRecordRows(records) }
	sp, err := tx.Begin(ctx)
	if err != nil {
		return fmt.Errorf("savepoint before request records: %w", err)
	}
	_, err = sp.CopyFrom(ctx, pgx.Identifier{"request_records"}, recordColumns, rows())
	if err == nil {
		if err := sp.Commit(ctx); err != nil {
			return fmt.Errorf("release savepoint of request records: %w", err)
		}
		return nil
	}
	if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != uniqueViolation {
		return fmt.Errorf("copy request records: %w", err)
	}
	if err := sp.Rollback(ctx); err != nil {
		return fmt.Errorf("roll back to the savepoint of request records: %w", err)
	}
	if _, err := tx.Exec(ctx, requestRecordsStage); err != nil {
		return fmt.Errorf("stage request records: %w", err)
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"request_records_stage"}, recordColumns, rows()); err != nil {
		return fmt.Errorf("copy request records to the stage: %w", err)
	}
	if _, err := tx.Exec(ctx, requestRecordsInsert); err != nil {
		return fmt.Errorf("insert request records: %w", err)
	}
	return nil
}

// recordRows is the COPY source of a batch's records, allocating one string per record (its request
// id, which the meter holds as a UUID and an item index). A flush copies up
// to 20,000 records at once, and the seven values of each boxed into an interface (as
// pgx.CopyFromSlice wants them) were 140,000 allocations in a burst: in an execution trace of the
// service under fixed-rate load, the garbage collections they started were the largest delay of the
// scheduler. Values returns one row that points into one reused record: pgx encodes each row before
// it asks for the next, and a pointer to a pgtype value is stored in an interface without an
// allocation, and encoded through the value's own method (TextValuer, UUIDValuer, TimestamptzValuer).
type recordRows struct {
	records []meter.Record
	i       int
	cur     struct {
		requestID, endpoint, routeID, modelVersion pgtype.Text
		keyID, accountID                           pgtype.UUID
		scoredAt                                   pgtype.Timestamptz
	}
	row []any
}

func newRecordRows(records []meter.Record) *recordRows {
	r := &recordRows{records: records, i: -1}
	c := &r.cur
	// In recordColumns' order.
	r.row = []any{&c.requestID, &c.keyID, &c.accountID, &c.endpoint, &c.routeID, &c.modelVersion, &c.scoredAt}
	return r
}

func (r *recordRows) Next() bool {
	r.i++
	return r.i < len(r.records)
}

func (r *recordRows) Values() ([]any, error) {
	rec, c := &r.records[r.i], &r.cur
	c.requestID = pgtype.Text{String: rec.RequestID(), Valid: true}
	c.keyID = pgtype.UUID{Bytes: rec.KeyID(), Valid: true}
	c.accountID = pgtype.UUID{Bytes: rec.AccountID(), Valid: true}
	c.endpoint = pgtype.Text{String: rec.Endpoint(), Valid: true}
	c.routeID = pgtype.Text{String: rec.RouteID(), Valid: true}
	c.modelVersion = pgtype.Text{String: rec.ModelVersion(), Valid: true}
	c.scoredAt = pgtype.Timestamptz{Time: rec.ScoredAt(), Valid: true}
	return r.row, nil
}

func (r *recordRows) Err() error { return nil }

// Usage returns the persisted calls of a key in a period ("2026-11"), 0 when it has none.
func (s *Store) Usage(ctx context.Context, keyID, period string) (int64, error) {
	var calls int64
	err := s.pool.QueryRow(ctx, usageCounterGet, keyID, period).Scan(&calls)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return calls, err
}

// RequestRecord returns the record of a scoring response, or fault.ErrNotFound. Records still buffered in
// the meter are not here yet (see meter.Meter.PendingRecord).
func (s *Store) RequestRecord(ctx context.Context, requestID string) (meter.RequestRecord, error) {
	var r meter.RequestRecord
	err := s.pool.QueryRow(ctx, requestRecordGet, requestID).
		Scan(&r.RequestID, &r.KeyID, &r.AccountID, &r.Endpoint, &r.RouteID, &r.ModelVersion, &r.ScoredAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return meter.RequestRecord{}, fault.ErrNotFound
	}
	if err != nil {
		return meter.RequestRecord{}, err
	}
	r.ScoredAt = r.ScoredAt.UTC()
	return r, nil
}

// PruneRequestRecords deletes the request records scored before before and returns how many. The
// retention window is feedback's to choose; this is the only delete the records' trigger allows.
func (s *Store) PruneRequestRecords(ctx context.Context, before time.Time) (int64, error) {
	var deleted int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, requestRecordsPruneAllow); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, requestRecordsPrune, before)
		deleted = tag.RowsAffected()
		return err
	})
	return deleted, err
}
