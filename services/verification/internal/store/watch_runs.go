package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/watch"
)

// WatchRuns implements watch.RunStore: the runs of watches and the leases that keep a watch from
// running twice at once.
type WatchRuns struct {
	pool  *pgxpool.Pool
	lease time.Duration
}

var _ watch.RunStore = (*WatchRuns)(nil)

// NewWatchRuns returns the run store over pool; a run holds its watch for lease.
func NewWatchRuns(pool *pgxpool.Pool, lease time.Duration) *WatchRuns {
	return &WatchRuns{pool: pool, lease: lease}
}

// Lease is how long a run holds its watch.
func (s *WatchRuns) Lease() time.Duration { return s.lease }

// leasedWatchColumns are a watch's columns (alias w) and its policy's rules (alias p).
const leasedWatchColumns = `w.id, w.organization_id, w.target_url, w.target_host, w.evaluator, w.status, w.policy_id,
w.interval_seconds, w.next_run_at, w.created_at, w.updated_at, p.rules`

const leasedWatchFrom = ` FROM target_watches w LEFT JOIN watch_policies p ON p.id = w.policy_id `

func scanLeasedWatch(row pgx.Row, extra ...any) (watch.Watch, *watch.Rules, error) {
	var w watch.Watch
	var rules []byte
	dest := append([]any{&w.ID, &w.OrganizationID, &w.TargetURL, &w.TargetHost, &w.Evaluator, &w.Status, &w.PolicyID,
		&w.IntervalSeconds, &w.NextRunAt, &w.CreatedAt, &w.UpdatedAt, &rules}, extra...)
	if err := row.Scan(dest...); err != nil {
		return watch.Watch{}, nil, err
	}
	if rules == nil {
		return w, nil, nil
	}
	var r watch.Rules
	if err := json.Unmarshal(rules, &r); err != nil {
		return watch.Watch{}, nil, err
	}
	return w, &r, nil
}

// claimDueWatches takes due watches, earliest due first, that are active and not leased, skipping
// those of the hosts in $2 and the rows another replica's claim holds. The partial index
// target_watches_due serves it.
const claimDueWatches = `SELECT ` + leasedWatchColumns + leasedWatchFrom + `
WHERE w.status = 'active' AND w.next_run_at <= $1 AND (w.lease_until IS NULL OR w.lease_until <= $1)
  AND NOT (w.target_host = ANY ($2::text[]))
ORDER BY w.next_run_at LIMIT $3
FOR UPDATE OF w SKIP LOCKED`

// abandonRuns records failed the runs still running of the watches $1, whose leases have passed.
const abandonRuns = `UPDATE target_watch_runs SET status = 'failed', finished_at = $2,
    error = 'abandoned: the run was not recorded before its lease passed'
WHERE watch_id = ANY ($1::uuid[]) AND status = 'running'`

// leaseWatches leases the watches $1 until $2.
const leaseWatches = `UPDATE target_watches SET lease_until = $2 WHERE id = ANY ($1::uuid[])`

// insertRuns starts one running run per watch.
const insertRuns = `INSERT INTO target_watch_runs (id, watch_id, status, trigger, started_at)
SELECT id, watch_id, 'running', $3, $4 FROM unnest($1::uuid[], $2::uuid[]) AS r (id, watch_id)`

// ClaimDue leases the due watches c.Pick chooses and starts a scheduled run of each, in one
// transaction.
func (s *WatchRuns) ClaimDue(ctx context.Context, c watch.Claim) ([]watch.Claimed, error) {
	var out []watch.Claimed
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = nil
		skip := c.SkipHosts
		if skip == nil {
			skip = []string{}
		}
		rows, err := tx.Query(ctx, claimDueWatches, c.Now, skip, max(c.Candidates, 1))
		if err != nil {
			return err
		}
		type candidate struct {
			w     watch.Watch
			rules *watch.Rules
		}
		list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (candidate, error) {
			w, rules, err := scanLeasedWatch(r)
			return candidate{w, rules}, err
		})
		if err != nil || len(list) == 0 {
			return err
		}
		ws := make([]watch.Watch, len(list))
		rules := make(map[uuid.UUID]*watch.Rules, len(list))
		for i, cand := range list {
			ws[i], rules[cand.w.ID] = cand.w, cand.rules
		}
		picked := ws
		if c.Pick != nil {
			picked = c.Pick(ws)
		}
		if len(picked) == 0 {
			return nil
		}
		watchIDs := make([]uuid.UUID, len(picked))
		runIDs := make([]uuid.UUID, len(picked))
		for i, w := range picked {
			watchIDs[i], runIDs[i] = w.ID, uuid.Must(uuid.NewV7())
			out = append(out, watch.Claimed{Watch: w, Rules: rules[w.ID], Run: watch.Run{
				ID: runIDs[i], WatchID: w.ID, Status: watch.RunRunning, Trigger: watch.TriggerSchedule, StartedAt: c.Now,
				Reasons: []string{}, Changes: []json.RawMessage{},
			}})
		}
		b := &pgx.Batch{}
		b.Queue(abandonRuns, watchIDs, c.Now)
		b.Queue(leaseWatches, watchIDs, c.Now.Add(s.lease))
		b.Queue(insertRuns, runIDs, watchIDs, watch.TriggerSchedule, c.Now)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// NextDue returns the earliest next run after now of an active watch (the index target_watches_due
// serves it).
func (s *WatchRuns) NextDue(ctx context.Context, now time.Time) (time.Time, bool, error) {
	var next time.Time
	err := s.pool.QueryRow(ctx, `SELECT next_run_at FROM target_watches WHERE status = 'active' AND next_run_at > $1
ORDER BY next_run_at LIMIT 1`, now).Scan(&next)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	return next, err == nil, err
}

// StartRun leases a watch of the organization for a manual run, unless a run of it is in progress.
func (s *WatchRuns) StartRun(ctx context.Context, organizationID, watchID uuid.UUID, now time.Time) (watch.Claimed, bool, error) {
	var c watch.Claimed
	var started bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		started = false
		var leaseUntil *time.Time
		w, rules, err := scanLeasedWatch(tx.QueryRow(ctx, `SELECT `+leasedWatchColumns+`, w.lease_until`+leasedWatchFrom+`
WHERE w.id = $1 AND w.organization_id = $2 FOR UPDATE OF w`, watchID, organizationID), &leaseUntil)
		if err != nil {
			return noRows(err, fault.ErrNotFound)
		}
		if w.Status != watch.StatusActive {
			return fault.ErrWatchNotActive
		}
		c = watch.Claimed{Watch: w, Rules: rules}
		if leaseUntil != nil && leaseUntil.After(now) {
			c.Run, err = scanRunRow(tx.QueryRow(ctx, `SELECT `+runReadColumns+` FROM target_watch_runs
WHERE watch_id = $1 AND status = 'running' ORDER BY started_at DESC, id DESC LIMIT 1`, watchID))
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			// A lease without a running run cannot be made by this store; take the watch.
		}
		c.Run = watch.Run{
			ID: uuid.Must(uuid.NewV7()), WatchID: w.ID, Status: watch.RunRunning, Trigger: watch.TriggerManual, StartedAt: now,
			Reasons: []string{}, Changes: []json.RawMessage{},
		}
		ids := []uuid.UUID{w.ID}
		b := &pgx.Batch{}
		b.Queue(abandonRuns, ids, now)
		b.Queue(leaseWatches, ids, now.Add(s.lease))
		b.Queue(insertRuns, []uuid.UUID{c.Run.ID}, ids, watch.TriggerManual, now)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		started = true
		return nil
	})
	if err != nil {
		return watch.Claimed{}, false, err
	}
	return c, started, nil
}

// runRowColumns are a run's columns; runReadColumns leave out its surface (the tool listing, which
// may be large), which only the next run's comparison reads.
const (
	runRowColumns = `id, watch_id, status, trigger, started_at, finished_at, audit_id, coalesce(verdict, ''), score,
coalesce(surface_hash, ''), surface, alert, reasons, changes, error`
	runReadColumns = `id, watch_id, status, trigger, started_at, finished_at, audit_id, coalesce(verdict, ''), score,
coalesce(surface_hash, ''), NULL::jsonb, alert, reasons, changes, error`
)

func scanRunRow(row pgx.Row) (watch.Run, error) {
	var r watch.Run
	var surface, changes []byte
	if err := row.Scan(&r.ID, &r.WatchID, &r.Status, &r.Trigger, &r.StartedAt, &r.FinishedAt, &r.AuditID, &r.Verdict,
		&r.Score, &r.SurfaceHash, &surface, &r.Alert, &r.Reasons, &changes, &r.Error); err != nil {
		return watch.Run{}, err
	}
	r.Surface = surface
	if err := json.Unmarshal(changes, &r.Changes); err != nil {
		return watch.Run{}, err
	}
	if r.Changes == nil {
		r.Changes = []json.RawMessage{}
	}
	if r.Reasons == nil {
		r.Reasons = []string{}
	}
	return r, nil
}

// GetRun returns a run of the watch.
func (s *WatchRuns) GetRun(ctx context.Context, watchID, runID uuid.UUID) (watch.Run, error) {
	r, err := scanRunRow(s.pool.QueryRow(ctx, `SELECT `+runReadColumns+` FROM target_watch_runs WHERE id = $1 AND watch_id = $2`,
		runID, watchID))
	return r, noRows(err, fault.ErrNotFound)
}

// PreviousRun returns the latest succeeded run of the watch other than exclude.
func (s *WatchRuns) PreviousRun(ctx context.Context, watchID, exclude uuid.UUID) (*watch.Run, error) {
	r, err := scanRunRow(s.pool.QueryRow(ctx, `SELECT `+runRowColumns+` FROM target_watch_runs
WHERE watch_id = $1 AND status = 'succeeded' AND id <> $2 ORDER BY started_at DESC, id DESC LIMIT 1`, watchID, exclude))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// FinishRun records a running run's outcome, releases its watch's lease and sets its next run.
func (s *WatchRuns) FinishRun(ctx context.Context, r watch.Run, nextRunAt time.Time) error {
	changes, err := json.Marshal(r.Changes)
	if err != nil {
		return err
	}
	if r.Changes == nil {
		changes = []byte("[]")
	}
	reasons := r.Reasons
	if reasons == nil {
		reasons = []string{}
	}
	var surface any
	if len(r.Surface) > 0 {
		surface = string(r.Surface)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
UPDATE target_watch_runs SET status = $2, finished_at = $3, audit_id = $4, verdict = nullif($5, ''), score = $6,
    surface_hash = nullif($7, ''), surface = $8::jsonb, alert = $9, reasons = $10, changes = $11::jsonb, error = $12
WHERE id = $1 AND status = 'running'`,
			r.ID, r.Status, r.FinishedAt, r.AuditID, r.Verdict, r.Score, r.SurfaceHash, surface, r.Alert, reasons,
			string(changes), r.Error)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return watch.ErrRunAbandoned
		}
		_, err = tx.Exec(ctx, `UPDATE target_watches SET lease_until = NULL, next_run_at = $2 WHERE id = $1`, r.WatchID, nextRunAt)
		return err
	})
}

// ListRuns pages the runs of a watch of the organization that is not archived by (started_at, id),
// newest first, with a keyset cursor.
func (s *WatchRuns) ListRuns(ctx context.Context, organizationID, watchID uuid.UUID, page watch.Page) ([]watch.Run, string, error) {
	after, err := decodeKeyset(page.Cursor)
	if err != nil {
		return nil, "", err
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM target_watches
WHERE id = $1 AND organization_id = $2 AND status <> 'archived')`, watchID, organizationID).Scan(&exists); err != nil {
		return nil, "", err
	}
	if !exists {
		return nil, "", fault.ErrNotFound
	}
	rows, err := s.pool.Query(ctx, `SELECT `+runReadColumns+` FROM target_watch_runs
WHERE watch_id = $1 AND ($2::timestamptz IS NULL OR (started_at, id) < ($2, $3))
ORDER BY started_at DESC, id DESC LIMIT $4`, watchID, after.at, after.id, page.Limit+1)
	if err != nil {
		return nil, "", err
	}
	return keysetPage(rows, page.Limit, func(r pgx.CollectableRow) (watch.Run, error) { return scanRunRow(r) },
		func(r watch.Run) (time.Time, uuid.UUID) { return r.StartedAt, r.ID })
}
