package store

import (
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

const snapshotColumns = `x.id, x.server_id, x.previous_snapshot_id, x.registry, x.status, x.status_message, x.is_latest,
x.content_hash, x.server_json, x.published_at, x.registry_updated_at, x.observed_at, x.seq`

// snapshotScan receives the snapshotColumns of a row (table alias x).
type snapshotScan struct {
	s                  intelligence.Snapshot
	previous           uuid.NullUUID
	raw                []byte
	published, updated *time.Time
	seq                int64
}

func (sc *snapshotScan) dest() []any {
	s := &sc.s
	return []any{&s.ID, &s.ServerID, &sc.previous, &s.Registry, &s.Status, &s.StatusMessage, &s.IsLatest,
		&s.ContentHash, &sc.raw, &sc.published, &sc.updated, &s.ObservedAt, &sc.seq}
}

func (sc *snapshotScan) snapshot() (intelligence.Snapshot, error) {
	s := sc.s
	s.PreviousID = sc.previous.UUID
	s.PublishedAt, s.UpdatedAt = deref(sc.published), deref(sc.updated)
	var err error
	// Validated when it was observed; failing here means something else wrote the row.
	if s.Server, err = intelligence.DecodeServer(sc.raw); err != nil {
		return s, fmt.Errorf("snapshot %s: %w", s.ID, err)
	}
	return s, nil
}

func scanSnapshot(row pgx.CollectableRow) (intelligence.Snapshot, error) {
	var sc snapshotScan
	if err := row.Scan(sc.dest()...); err != nil {
		return intelligence.Snapshot{}, err
	}
	return sc.snapshot()
}

// positioned is a row with its keyset position.
type positioned[T any] struct {
	item T
	seq  int64
}

func scanSnapshotAt(row pgx.CollectableRow) (positioned[intelligence.Snapshot], error) {
	var sc snapshotScan
	if err := row.Scan(sc.dest()...); err != nil {
		return positioned[intelligence.Snapshot]{}, err
	}
	s, err := sc.snapshot()
	return positioned[intelligence.Snapshot]{s, sc.seq}, err
}

const changeColumns = `id, server_id, namespace, name, from_snapshot_id, to_snapshot_id, from_version, to_version,
field, old_value, new_value, change_type, risk, summary, detected_at, seq, remote_url, from_observation_id, to_observation_id`

func scanChangeAt(row pgx.CollectableRow) (positioned[intelligence.Change], error) {
	var c intelligence.Change
	var seq int64
	var changeType, risk string
	var remote *string
	var fromObs, toObs uuid.NullUUID
	err := row.Scan(&c.ID, &c.ServerID, &c.Key.Namespace, &c.Key.Name, &c.FromSnapshotID, &c.ToSnapshotID,
		&c.FromVersion, &c.ToVersion, &c.Field, &c.Old, &c.New, &changeType, &risk, &c.Summary, &c.DetectedAt, &seq,
		&remote, &fromObs, &toObs)
	c.Type, c.Risk = intelligence.ChangeType(changeType), intelligence.Risk(risk)
	if remote != nil {
		c.RemoteURL = *remote
	}
	c.FromObservationID, c.ToObservationID = fromObs.UUID, toObs.UUID
	return positioned[intelligence.Change]{c, seq}, err
}

// trimPositioned cuts the extra row a page query asked for and returns the items and the cursor of
// the next page ("" on the last page).
func trimPositioned[T any](rows []positioned[T], limit int) ([]T, string) {
	next := ""
	if len(rows) > limit {
		rows = rows[:limit]
		next = encodeCursor(rows[limit-1].seq)
	}
	items := make([]T, len(rows))
	for i, r := range rows {
		items[i] = r.item
	}
	return items, next
}

func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func nullID(id uuid.UUID) *uuid.UUID {
	if id == uuid.Nil {
		return nil
	}
	return &id
}
