package store

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// ServerID returns the id of a server.
func (r *Intelligence) ServerID(ctx context.Context, key intelligence.ServerKey) (uuid.UUID, error) {
	var id uuid.UUID
	err := r.pool.QueryRow(ctx, `SELECT id FROM intel_servers WHERE namespace = $1 AND name = $2`, key.Namespace, key.Name).Scan(&id)
	return id, noRows(err, fault.ErrServerNotFound)
}

// Server returns a server's current state: its row, current snapshot and latest change, in one
// statement (one round trip, one consistent view).
func (r *Intelligence) Server(ctx context.Context, key intelligence.ServerKey) (intelligence.ServerState, error) {
	st := intelligence.ServerState{Key: key}
	var snap snapshotScan
	var ch latestChangeScan
	dest := append([]any{&st.ID, &st.ChangeCount, &st.HighRiskChangeCount, &st.FirstSeenAt, &st.LastSeenAt}, snap.dest()...)
	err := r.pool.QueryRow(ctx, `
SELECT s.id, s.change_count, s.high_risk_change_count, s.first_seen_at, s.last_seen_at, `+snapshotColumns+`,
       c.id, c.field, c.old_value, c.new_value, c.change_type, c.risk, c.summary, c.from_snapshot_id,
       c.to_snapshot_id, c.from_version, c.to_version, c.detected_at
FROM intel_servers s
JOIN intel_snapshots x ON x.id = s.current_snapshot_id
LEFT JOIN intel_changes c ON c.id = s.latest_change_id
WHERE s.namespace = $1 AND s.name = $2`, key.Namespace, key.Name).Scan(append(dest, ch.dest()...)...)
	if err != nil {
		return st, noRows(err, fault.ErrServerNotFound)
	}
	if st.Current, err = snap.snapshot(); err != nil {
		return st, err
	}
	st.LatestChange = ch.change(st)
	return st, nil
}

// latestChangeScan receives the columns of a server's latest change
// (LEFT JOIN: every column is NULL for a server without changes).
type latestChangeScan struct {
	id, from, to                                                       *uuid.UUID
	field, old, new, changeType, risk, summary, fromVersion, toVersion *string
	detectedAt                                                         *time.Time
}

func (l *latestChangeScan) dest() []any {
	return []any{&l.id, &l.field, &l.old, &l.new, &l.changeType, &l.risk, &l.summary, &l.from, &l.to,
		&l.fromVersion, &l.toVersion, &l.detectedAt}
}

// change returns the scanned change, nil when the server has none.
func (l *latestChangeScan) change(st intelligence.ServerState) *intelligence.Change {
	if l.id == nil {
		return nil
	}
	return &intelligence.Change{
		FieldChange: intelligence.FieldChange{Field: *l.field, Old: *l.old, New: *l.new, Type: intelligence.ChangeType(*l.changeType),
			Risk: intelligence.Risk(*l.risk), Summary: *l.summary},
		ID: *l.id, ServerID: st.ID, Key: st.Key, FromSnapshotID: *l.from, ToSnapshotID: *l.to,
		FromVersion: *l.fromVersion, ToVersion: *l.toVersion, DetectedAt: *l.detectedAt,
	}
}

// History pages through a server's snapshots, newest first, on the index (server_id, seq DESC).
func (r *Intelligence) History(ctx context.Context, serverID uuid.UUID, p intelligence.Page) ([]intelligence.Snapshot, string, error) {
	before, err := pageStart(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	rows, err := r.pool.Query(ctx, `
SELECT `+snapshotColumns+` FROM intel_snapshots x
WHERE x.server_id = $1 AND x.seq < $2
ORDER BY x.seq DESC LIMIT $3`, serverID, before, p.Limit+1)
	if err != nil {
		return nil, "", err
	}
	found, err := pgx.CollectRows(rows, scanSnapshotAt)
	if err != nil {
		return nil, "", err
	}
	items, next := trimPositioned(found, p.Limit)
	return items, next, nil
}

// pageStart returns the seq a page starts below: the cursor's, or above every row for the first page.
// The condition seq < start is always present, so that every page is an index range scan.
func pageStart(cursor string) (int64, error) {
	seq, err := decodeCursor(cursor)
	if err != nil || seq > 0 {
		return seq, err
	}
	return math.MaxInt64, nil
}

// VersionSnapshots returns the first and the newest snapshot of a version.
func (r *Intelligence) VersionSnapshots(ctx context.Context, serverID uuid.UUID, version string) (first, latest intelligence.Snapshot, err error) {
	rows, err := r.pool.Query(ctx, `
(SELECT `+snapshotColumns+` FROM intel_snapshots x WHERE x.server_id = $1 AND x.version = $2 ORDER BY x.seq LIMIT 1)
UNION ALL
(SELECT `+snapshotColumns+` FROM intel_snapshots x WHERE x.server_id = $1 AND x.version = $2 ORDER BY x.seq DESC LIMIT 1)`,
		serverID, version)
	if err != nil {
		return first, latest, err
	}
	found, err := pgx.CollectRows(rows, scanSnapshotAt)
	if err != nil {
		return first, latest, err
	}
	if len(found) == 0 {
		return first, latest, fault.ErrVersionNotFound
	}
	first, latest = found[0].item, found[0].item
	for _, f := range found[1:] {
		if f.seq < found[0].seq {
			first = f.item
		} else {
			latest = f.item
		}
	}
	return first, latest, nil
}

// VersionBefore returns the version of the newest snapshot recorded before version's first one with
// another version.
func (r *Intelligence) VersionBefore(ctx context.Context, serverID uuid.UUID, version string) (string, bool, error) {
	var exists bool
	var before *string
	err := r.pool.QueryRow(ctx, `
WITH first AS (SELECT min(seq) AS seq FROM intel_snapshots WHERE server_id = $1 AND version = $2)
SELECT first.seq IS NOT NULL,
       (SELECT version FROM intel_snapshots
        WHERE server_id = $1 AND seq < first.seq AND version <> $2 ORDER BY seq DESC LIMIT 1)
FROM first`, serverID, version).Scan(&exists, &before)
	switch {
	case err != nil:
		return "", false, err
	case !exists:
		return "", false, fault.ErrVersionNotFound
	case before == nil:
		return "", false, nil
	}
	return *before, true, nil
}

// Changes pages through a change feed, newest first. Each filter combination the routes use has an
// index in keyset order (migration 00002).
func (r *Intelligence) Changes(ctx context.Context, f intelligence.ChangeFilter, p intelligence.Page) ([]intelligence.Change, string, error) {
	before, err := pageStart(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	args := []any{before}
	where := []string{"seq < $1"}
	if f.ServerID != uuid.Nil {
		args = append(args, f.ServerID)
		where = append(where, fmt.Sprintf("server_id = $%d", len(args)))
	}
	if f.Type != "" {
		args = append(args, string(f.Type))
		where = append(where, fmt.Sprintf("change_type = $%d", len(args)))
	}
	if f.HighRiskOnly {
		// A literal, not a parameter: only then does the planner match the partial index on risk = 'high'.
		where = append(where, "risk = 'high'")
	}
	args = append(args, p.Limit+1)
	rows, err := r.pool.Query(ctx, `SELECT `+changeColumns+` FROM intel_changes WHERE `+strings.Join(where, " AND ")+
		fmt.Sprintf(" ORDER BY seq DESC LIMIT $%d", len(args)), args...)
	if err != nil {
		return nil, "", err
	}
	found, err := pgx.CollectRows(rows, scanChangeAt)
	if err != nil {
		return nil, "", err
	}
	items, next := trimPositioned(found, p.Limit)
	return items, next, nil
}

// ServerHead returns a server's own row: one primary-key-like lookup on the unique index
// (namespace, name), and nothing the server's snapshots or changes hold. The server state read pairs
// it with the snapshot and change it points to, which are immutable and so cached by id
// (internal/readcache): on a warm cache this is the read's only statement.
func (r *Intelligence) ServerHead(ctx context.Context, key intelligence.ServerKey) (intelligence.ServerHead, error) {
	h := intelligence.ServerHead{Key: key}
	var latest uuid.NullUUID
	err := r.pool.QueryRow(ctx, `
SELECT id, current_snapshot_id, latest_change_id, change_count, high_risk_change_count, first_seen_at, last_seen_at
FROM intel_servers WHERE namespace = $1 AND name = $2 AND current_snapshot_id IS NOT NULL`, key.Namespace, key.Name).
		Scan(&h.ID, &h.CurrentSnapshotID, &latest, &h.ChangeCount, &h.HighRiskChangeCount, &h.FirstSeenAt, &h.LastSeenAt)
	h.LatestChangeID = latest.UUID
	return h, noRows(err, fault.ErrServerNotFound)
}

// Snapshot returns one snapshot by id. Snapshots are never deleted, so a missing one (an id a server
// row pointed to) is an internal error, not a client's.
func (r *Intelligence) Snapshot(ctx context.Context, id uuid.UUID) (intelligence.Snapshot, error) {
	var sc snapshotScan
	if err := r.pool.QueryRow(ctx, `SELECT `+snapshotColumns+` FROM intel_snapshots x WHERE x.id = $1`, id).Scan(sc.dest()...); err != nil {
		return intelligence.Snapshot{}, fmt.Errorf("snapshot %s: %w", id, err)
	}
	return sc.snapshot()
}

// Change returns one change by id. Changes are never deleted either.
func (r *Intelligence) Change(ctx context.Context, id uuid.UUID) (intelligence.Change, error) {
	rows, err := r.pool.Query(ctx, `SELECT `+changeColumns+` FROM intel_changes WHERE id = $1`, id)
	if err != nil {
		return intelligence.Change{}, err
	}
	c, err := pgx.CollectExactlyOneRow(rows, scanChangeAt)
	if err != nil {
		return intelligence.Change{}, fmt.Errorf("change %s: %w", id, err)
	}
	return c.item, nil
}
