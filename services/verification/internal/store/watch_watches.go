package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/watch"
)

// watchLockOrganization serialises an organization's watch creations inside tx, so that two
// concurrent requests cannot both pass the pair and cap checks. The lock is released at commit.
const watchLockOrganization = `SELECT pg_advisory_xact_lock(hashtextextended('target_watches:' || $1::text, 0))`

// targetWatchColumns are a watch's columns (alias w) followed by its last run's (alias r, from
// lastRunJoin): every run column is NULL when the watch has never run.
const targetWatchColumns = `w.id, w.organization_id, w.target_url, w.target_host, w.evaluator, w.status, w.policy_id,
w.interval_seconds, w.next_run_at, w.created_at, w.updated_at,
r.id, r.status, r.trigger, r.started_at, r.finished_at, r.audit_id, r.verdict, r.score, r.surface_hash, r.alert,
r.reasons, r.changes, r.error`

// lastRunJoin joins the latest run of each watch w (the surface itself is left out: it is for the
// scheduler's comparison, not for reading).
const lastRunJoin = ` LEFT JOIN LATERAL (
  SELECT id, status, trigger, started_at, finished_at, audit_id, verdict, score, surface_hash, alert, reasons, changes, error
  FROM target_watch_runs WHERE watch_id = w.id ORDER BY started_at DESC, id DESC LIMIT 1) r ON true`

func scanTargetWatch(row pgx.Row) (watch.Watch, error) {
	var w watch.Watch
	var run struct {
		id                          *uuid.UUID
		status, trigger             *string
		startedAt                   *time.Time
		finishedAt                  *time.Time
		auditID                     *uuid.UUID
		verdict, surfaceHash, error *string
		score                       *int
		alert                       *bool
		reasons                     []string
		changes                     []byte
	}
	if err := row.Scan(&w.ID, &w.OrganizationID, &w.TargetURL, &w.TargetHost, &w.Evaluator, &w.Status, &w.PolicyID,
		&w.IntervalSeconds, &w.NextRunAt, &w.CreatedAt, &w.UpdatedAt,
		&run.id, &run.status, &run.trigger, &run.startedAt, &run.finishedAt, &run.auditID, &run.verdict, &run.score,
		&run.surfaceHash, &run.alert, &run.reasons, &run.changes, &run.error); err != nil {
		return watch.Watch{}, err
	}
	if run.id == nil {
		return w, nil
	}
	str := func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	}
	last := &watch.Run{
		ID: *run.id, WatchID: w.ID, Status: str(run.status), Trigger: str(run.trigger), FinishedAt: run.finishedAt,
		AuditID: run.auditID, Verdict: str(run.verdict), Score: run.score, SurfaceHash: str(run.surfaceHash),
		Alert: run.alert != nil && *run.alert, Reasons: run.reasons, Error: str(run.error),
	}
	if run.startedAt != nil {
		last.StartedAt = *run.startedAt
	}
	if len(run.changes) > 0 {
		if err := json.Unmarshal(run.changes, &last.Changes); err != nil {
			return watch.Watch{}, err
		}
	}
	w.LastRun = last
	return w, nil
}

// CreateWatch stores a watch unless its pair is watched already or the cap is reached.
func (s *Watches) CreateWatch(ctx context.Context, w watch.Watch, limit int) (watch.Watch, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, watchLockOrganization, w.OrganizationID); err != nil {
			return err
		}
		var existing uuid.UUID
		err := tx.QueryRow(ctx, `SELECT id FROM target_watches
WHERE organization_id = $1 AND target_url = $2 AND evaluator = $3 AND status <> 'archived'`,
			w.OrganizationID, w.TargetURL, w.Evaluator).Scan(&existing)
		switch {
		case err == nil:
			return &fault.TargetWatchExistsError{WatchID: existing}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM target_watches WHERE organization_id = $1 AND status <> 'archived'`,
			w.OrganizationID).Scan(&n); err != nil {
			return err
		}
		if n >= limit {
			return fault.ErrWatchLimit
		}
		if w.PolicyID != nil {
			if err := lockPolicy(ctx, tx, w.OrganizationID, *w.PolicyID); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `
INSERT INTO target_watches (id, organization_id, target_url, target_host, evaluator, status, policy_id,
                            interval_seconds, next_run_at, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			w.ID, w.OrganizationID, w.TargetURL, w.TargetHost, w.Evaluator, w.Status, w.PolicyID,
			w.IntervalSeconds, w.NextRunAt, w.CreatedAt, w.UpdatedAt)
		return err
	})
	if err != nil {
		return watch.Watch{}, err
	}
	return w, nil
}

// lockPolicy holds the organization's policy against deletion until tx ends
// (fault.ErrUnknownPolicy when there is none).
func lockPolicy(ctx context.Context, tx pgx.Tx, organizationID, id uuid.UUID) error {
	var found uuid.UUID
	err := tx.QueryRow(ctx, `SELECT id FROM watch_policies WHERE id = $1 AND organization_id = $2 FOR SHARE`,
		id, organizationID).Scan(&found)
	return noRows(err, fault.ErrUnknownPolicy)
}

// ListWatches pages an organization's watches that are not archived by (created_at, id), newest
// first, with a keyset cursor.
func (s *Watches) ListWatches(ctx context.Context, organizationID uuid.UUID, status string, page watch.Page) ([]watch.Watch, string, error) {
	after, err := decodeKeyset(page.Cursor)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+targetWatchColumns+` FROM target_watches w`+lastRunJoin+`
WHERE w.organization_id = $1 AND w.status <> 'archived' AND ($2 = '' OR w.status = $2)
  AND ($3::timestamptz IS NULL OR (w.created_at, w.id) < ($3, $4))
ORDER BY w.created_at DESC, w.id DESC LIMIT $5`, organizationID, status, after.at, after.id, page.Limit+1)
	if err != nil {
		return nil, "", err
	}
	return keysetPage(rows, page.Limit, func(r pgx.CollectableRow) (watch.Watch, error) { return scanTargetWatch(r) },
		func(w watch.Watch) (time.Time, uuid.UUID) { return w.CreatedAt, w.ID })
}

// GetWatch returns a watch of the organization that is not archived.
func (s *Watches) GetWatch(ctx context.Context, organizationID, id uuid.UUID) (watch.Watch, error) {
	w, err := scanTargetWatch(s.pool.QueryRow(ctx, `SELECT `+targetWatchColumns+` FROM target_watches w`+lastRunJoin+`
WHERE w.id = $1 AND w.organization_id = $2 AND w.status <> 'archived'`, id, organizationID))
	return w, noRows(err, fault.ErrNotFound)
}

// UpdateWatch applies a change to a watch that is not archived.
func (s *Watches) UpdateWatch(ctx context.Context, organizationID, id uuid.UUID, c watch.WatchChange) (watch.Watch, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if c.SetPolicy && c.PolicyID != nil {
			if err := lockPolicy(ctx, tx, organizationID, *c.PolicyID); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, `
UPDATE target_watches SET
  status = coalesce($3::text, status),
  policy_id = CASE WHEN $4::boolean THEN $5::uuid ELSE policy_id END,
  interval_seconds = coalesce($6::integer, interval_seconds),
  next_run_at = CASE WHEN $6::integer IS NULL THEN next_run_at
                     ELSE least(next_run_at, $7::timestamptz + make_interval(secs => $6::integer)) END,
  updated_at = $7
WHERE id = $1 AND organization_id = $2 AND status <> 'archived'`,
			id, organizationID, c.Status, c.SetPolicy, c.PolicyID, c.IntervalSeconds, c.At)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return watch.Watch{}, err
	}
	return s.GetWatch(ctx, organizationID, id)
}

// ArchiveWatch archives a watch and clears its policy.
func (s *Watches) ArchiveWatch(ctx context.Context, organizationID, id uuid.UUID, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE target_watches SET status = 'archived', policy_id = NULL, updated_at = $3
WHERE id = $1 AND organization_id = $2 AND status <> 'archived'`, id, organizationID, at)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fault.ErrNotFound
	}
	return nil
}

// keysetPrefix versions the watch API's cursor format, so that a later format can refuse old
// cursors cleanly.
const keysetPrefix = "k1:"

// keyset is a position in a list ordered by (time, id) descending; a nil at is the first page.
type keyset struct {
	at *time.Time
	id uuid.UUID
}

type keysetJSON struct {
	T  time.Time `json:"t"`
	ID uuid.UUID `json:"id"`
}

// encodeKeyset returns the opaque cursor of the position after the row of (at, id): base64url of a
// versioned JSON object.
// keysetPage collects the rows of a query that asked for limit+1 of them, and returns the first limit
// with the cursor after the last (empty when there were no more).
func keysetPage[T any](rows pgx.Rows, limit int, scan pgx.RowToFunc[T], key func(T) (time.Time, uuid.UUID)) ([]T, string, error) {
	items, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, "", err
	}
	if len(items) <= limit {
		return items, "", nil
	}
	items = items[:limit]
	at, id := key(items[limit-1])
	return items, encodeKeyset(at, id), nil
}

func encodeKeyset(at time.Time, id uuid.UUID) string {
	b, _ := json.Marshal(keysetJSON{T: at.UTC(), ID: id})
	return base64.RawURLEncoding.EncodeToString(append([]byte(keysetPrefix), b...))
}

// decodeKeyset returns the position a cursor stands for; "" is the first page.
func decodeKeyset(s string) (keyset, error) {
	if s == "" {
		return keyset{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return keyset{}, fault.ErrBadCursor
	}
	body, ok := strings.CutPrefix(string(b), keysetPrefix)
	if !ok {
		return keyset{}, fault.ErrBadCursor
	}
	var k keysetJSON
	if err := json.Unmarshal([]byte(body), &k); err != nil || k.T.IsZero() || k.ID == uuid.Nil {
		return keyset{}, fault.ErrBadCursor
	}
	return keyset{at: &k.T, id: k.ID}, nil
}
