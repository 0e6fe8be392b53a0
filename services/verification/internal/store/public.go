package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/public/analytics"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/coverage"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/throttle"
)

// Public is the store of the public routes: the coverage summary (this file), analytics events and
// rate counters (this file) and claims (public_claims.go). Migration 00015 holds their tables.
type Public struct {
	pool *pgxpool.Pool
}

var (
	_ coverage.Store  = (*Public)(nil)
	_ analytics.Store = (*Public)(nil)
	_ throttle.Store  = (*Public)(nil)
)

// NewPublic returns the public routes' store.
func NewPublic(pool *pgxpool.Pool) *Public { return &Public{pool: pool} }

// coverageCounts counts servers, those whose current listing names a remote URL, and those with a
// remote that an audit checked within 7 and 30 days ($1 is now). An audit matches a remote by its URL
// exactly as listed. Each distinct URL's newest audit is one probe of audits_url_created, so that
// neither the number of audits of a URL nor the number of servers listing it multiplies the work
// (joined row by row, 3,333 audits of a URL 10,000 servers list made 33 million rows and 12 s).
const coverageCounts = `
WITH remotes AS (
    SELECT DISTINCT s.id, r->>'url' AS url
    FROM intel_servers s
    JOIN intel_snapshots sn ON sn.id = s.current_snapshot_id
    CROSS JOIN LATERAL json_array_elements(CASE WHEN json_typeof(sn.server_json->'remotes') = 'array'
        THEN sn.server_json->'remotes' ELSE '[]'::json END) r
    WHERE json_typeof(r) = 'object' AND coalesce(r->>'url', '') <> ''
), last_audit AS (
    SELECT u.url, l.last
    FROM (SELECT DISTINCT url FROM remotes) u
    CROSS JOIN LATERAL (SELECT max(a.created_at) AS last FROM audits a
                        WHERE a.url = u.url AND a.created_at >= $1::timestamptz - interval '30 days') l
    WHERE l.last IS NOT NULL
), audited AS (
    SELECT rm.id, max(la.last) AS last
    FROM remotes rm
    JOIN last_audit la ON la.url = rm.url
    GROUP BY rm.id
)
SELECT (SELECT count(*) FROM intel_servers),
       (SELECT count(DISTINCT id) FROM remotes),
       (SELECT count(*) FROM audited WHERE last >= $1::timestamptz - interval '7 days'),
       (SELECT count(*) FROM audited)`

const coverageChanges = `
SELECT count(*), count(*) FILTER (WHERE risk = 'high'), count(*) FILTER (WHERE risk = 'medium'), count(*) FILTER (WHERE risk = 'low')
FROM intel_changes WHERE detected_at >= $1::timestamptz - interval '24 hours'`

// coverageRegistries lists the registries; a deployment polls a handful (the limit bounds the answer).
const coverageRegistries = `
SELECT url, last_success_at, last_poll_at, consecutive_failures FROM intel_registries ORDER BY url LIMIT 100`

// CoverageSummary computes the summary at now in one read-only snapshot.
func (s *Public) CoverageSummary(ctx context.Context, now time.Time) (coverage.Summary, error) {
	sum := coverage.Summary{GeneratedAt: now}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, coverageCounts, now).Scan(&sum.ServersTracked, &sum.ServersWithRemotes, &sum.Audited7d, &sum.Audited30d); err != nil {
			return err
		}
		c := &sum.Changes24h
		if err := tx.QueryRow(ctx, coverageChanges, now).Scan(&c.Total, &c.High, &c.Medium, &c.Low); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, coverageRegistries)
		if err != nil {
			return err
		}
		sum.Registries, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (coverage.Registry, error) {
			var r coverage.Registry
			err := row.Scan(&r.URL, &r.LastSuccessAt, &r.LastPollAt, &r.ConsecutiveFailures)
			return r, err
		})
		return err
	})
	return sum, err
}

// InsertAnalyticsEvent stores one validated event.
func (s *Public) InsertAnalyticsEvent(ctx context.Context, e analytics.Event, at time.Time) error {
	props, err := json.Marshal(e.Properties)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, `INSERT INTO public_analytics_events (name, page, properties, received_at) VALUES ($1, $2, $3, $4)`,
		e.Name, e.Page, props, at)
	return err
}

// PruneAnalytics deletes events received before cutoff, then every event older than the newest keep
// (ids grow with time).
func (s *Public) PruneAnalytics(ctx context.Context, cutoff time.Time, keep int) (int64, error) {
	old, err := s.pool.Exec(ctx, `DELETE FROM public_analytics_events WHERE received_at < $1`, cutoff)
	if err != nil {
		return 0, err
	}
	over, err := s.pool.Exec(ctx, `
DELETE FROM public_analytics_events
WHERE id <= (SELECT id FROM public_analytics_events ORDER BY id DESC OFFSET $1 LIMIT 1)`, keep)
	if err != nil {
		return 0, err
	}
	return old.RowsAffected() + over.RowsAffected(), nil
}

// PruneRateCounters deletes the counters of windows that started before cutoff.
func (s *Public) PruneRateCounters(ctx context.Context, cutoff time.Time) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM public_rate_counters WHERE window_start < $1`, cutoff)
	return err
}

// hitCounter adds one hit unless the counter is at its limit ($3); no row comes back then.
const hitCounter = `
INSERT INTO public_rate_counters AS c (subject, window_start, hits) VALUES ($1, $2, 1)
ON CONFLICT (subject, window_start) DO UPDATE SET hits = c.hits + 1 WHERE c.hits < $3
RETURNING hits`

// Hit counts one hit on every subject in one transaction, or on none when one is at its limit. The
// conditional upsert takes the counter's row lock, so replicas never count past a limit; subjects
// come in the same order on every call (the client's, then the overall one), so two calls never
// wait on each other's locks in a cycle.
func (s *Public) Hit(ctx context.Context, subjects []throttle.Subject, windowStart time.Time) (bool, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, sub := range subjects {
			var hits int
			// No row: the counter is at its limit, and the error rolls the other hits back.
			if err := tx.QueryRow(ctx, hitCounter, sub.Key, windowStart, max(sub.Limit, 1)).Scan(&hits); err != nil {
				return err
			}
		}
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}
