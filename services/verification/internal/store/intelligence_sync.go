package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// ApplyPage runs one page of a sync in one transaction: it creates the page's new servers, locks and
// reads what is known about them, lets decide choose the writes, and writes them with the outbox rows
// of the changes, so that an event is published exactly when its change is stored.
func (r *Intelligence) ApplyPage(ctx context.Context, registry string, versions []intelligence.ServerVersion, decide func(intelligence.Known) (intelligence.PageWrites, error)) error {
	return pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		known, currents, err := lockServers(ctx, tx, pageKeys(versions))
		if err != nil {
			return err
		}
		if err := readSnapshots(ctx, tx, known, currents, versions); err != nil {
			return err
		}
		w, err := decide(known)
		if err != nil {
			return err
		}
		return r.writePage(ctx, tx, registry, known, w)
	})
}

// pageKeys returns the page's servers once each, sorted: every transaction creates and locks server
// rows in the same order, so that pages of two registries listing the same servers cannot deadlock.
func pageKeys(versions []intelligence.ServerVersion) []intelligence.ServerKey {
	keys := make([]intelligence.ServerKey, 0, len(versions))
	for _, v := range versions {
		keys = append(keys, v.Key)
	}
	slices.SortFunc(keys, func(a, b intelligence.ServerKey) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return slices.Compact(keys)
}

// lockServers creates the servers not yet known and locks every page server's row; it returns their
// state without snapshots and the ids of their current snapshots.
func lockServers(ctx context.Context, tx pgx.Tx, keys []intelligence.ServerKey) (intelligence.Known, []uuid.UUID, error) {
	ids := make([]uuid.UUID, len(keys))
	namespaces := make([]string, len(keys))
	names := make([]string, len(keys))
	for i, k := range keys {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, nil, err
		}
		ids[i], namespaces[i], names[i] = id, k.Namespace, k.Name
	}
	if _, err := tx.Exec(ctx, `
INSERT INTO intel_servers (id, namespace, name)
SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])
ON CONFLICT (namespace, name) DO NOTHING`, ids, namespaces, names); err != nil {
		return nil, nil, fmt.Errorf("create servers: %w", err)
	}
	rows, err := tx.Query(ctx, `
SELECT s.id, s.namespace, s.name, s.current_snapshot_id
FROM intel_servers s
JOIN unnest($1::text[], $2::text[]) AS k (namespace, name) ON s.namespace = k.namespace AND s.name = k.name
ORDER BY s.id
FOR UPDATE OF s`, namespaces, names)
	if err != nil {
		return nil, nil, fmt.Errorf("lock servers: %w", err)
	}
	known := intelligence.Known{}
	var currents []uuid.UUID
	var id uuid.UUID
	var key intelligence.ServerKey
	var current uuid.NullUUID
	_, err = pgx.ForEachRow(rows, []any{&id, &key.Namespace, &key.Name, &current}, func() error {
		known[key] = &intelligence.KnownServer{ID: id, Latest: map[string]intelligence.Snapshot{}}
		if current.Valid {
			currents = append(currents, current.UUID)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("lock servers: %w", err)
	}
	return known, currents, nil
}

// readSnapshots fills in each server's current snapshot and the newest snapshot of each listed
// version (the index on (server_id, version, seq DESC) serves the DISTINCT ON).
func readSnapshots(ctx context.Context, tx pgx.Tx, known intelligence.Known, currents []uuid.UUID, versions []intelligence.ServerVersion) error {
	byID := make(map[uuid.UUID]*intelligence.KnownServer, len(known))
	for _, ks := range known {
		byID[ks.ID] = ks
	}
	rows, err := tx.Query(ctx, `SELECT `+snapshotColumns+` FROM intel_snapshots x WHERE x.id = ANY($1)`, currents)
	if err != nil {
		return err
	}
	snaps, err := pgx.CollectRows(rows, scanSnapshot)
	if err != nil {
		return fmt.Errorf("read current snapshots: %w", err)
	}
	for _, s := range snaps {
		byID[s.ServerID].Current = &s
	}
	serverIDs := make([]uuid.UUID, len(versions))
	names := make([]string, len(versions))
	for i, v := range versions {
		serverIDs[i], names[i] = known[v.Key].ID, v.Version
	}
	rows, err = tx.Query(ctx, `
SELECT DISTINCT ON (x.server_id, x.version) `+snapshotColumns+`
FROM intel_snapshots x
JOIN unnest($1::uuid[], $2::text[]) AS v (server_id, version) ON x.server_id = v.server_id AND x.version = v.version
ORDER BY x.server_id, x.version, x.seq DESC`, serverIDs, names)
	if err != nil {
		return err
	}
	if snaps, err = pgx.CollectRows(rows, scanSnapshot); err != nil {
		return fmt.Errorf("read version snapshots: %w", err)
	}
	for _, s := range snaps {
		byID[s.ServerID].Latest[s.Server.Version] = s
	}
	return nil
}

// writePage writes a page's decisions in two round trips (three when a latest snapshot is replaced),
// in foreign-key order: snapshots (a
// snapshot's predecessor may be earlier in the same page), then one batch of the changes with their
// outbox rows and the server rows of every listed server.
func (r *Intelligence) writePage(ctx context.Context, tx pgx.Tx, registry string, known intelligence.Known, w intelligence.PageWrites) error {
	// The replaced latest snapshots first: the partial unique index on (server_id) WHERE is_latest
	// (migration 00016) allows one latest per server at any moment, not only at commit.
	if len(w.Superseded) > 0 {
		if _, err := tx.Exec(ctx, `UPDATE intel_snapshots SET is_latest = false WHERE id = ANY($1) AND is_latest`, w.Superseded); err != nil {
			return fmt.Errorf("supersede snapshots: %w", err)
		}
	}
	// COPY, not one INSERT per row: a first sync writes a snapshot for every listed entry.
	rows := make([][]any, 0, len(w.Snapshots))
	for _, s := range w.Snapshots {
		rows = append(rows, []any{s.ID, s.ServerID, nullID(s.PreviousID), registry, s.Server.Version, s.Status, s.StatusMessage,
			s.IsLatest, s.ContentHash, string(s.Server.JSON), nullTime(s.PublishedAt), nullTime(s.UpdatedAt), s.ObservedAt})
	}
	if len(rows) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"intel_snapshots"}, []string{"id", "server_id", "previous_snapshot_id", "registry",
			"version", "status", "status_message", "is_latest", "content_hash", "server_json", "published_at", "registry_updated_at",
			"observed_at"}, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("write snapshots: %w", err)
		}
	}
	b := &pgx.Batch{}
	for _, c := range w.Changes {
		b.Queue(`
INSERT INTO intel_changes (id, server_id, namespace, name, from_snapshot_id, to_snapshot_id, from_version, to_version,
    field, old_value, new_value, change_type, risk, summary, detected_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
			c.ID, c.ServerID, c.Key.Namespace, c.Key.Name, c.FromSnapshotID, c.ToSnapshotID, c.FromVersion, c.ToVersion,
			c.Field, c.Old, c.New, string(c.Type), string(c.Risk), c.Summary, c.DetectedAt)
		ev, err := r.events.IntelChange(c)
		if err != nil {
			return err
		}
		if _, err := outbox.Queue(ctx, b, ev); err != nil {
			return err
		}
	}
	// Every listed server is touched (last_seen_at), changed or not.
	n := len(known)
	ids, currents, latest := make([]uuid.UUID, 0, n), make([]*uuid.UUID, 0, n), make([]*uuid.UUID, 0, n)
	addChanges, addHigh := make([]int64, 0, n), make([]int64, 0, n)
	for _, ks := range known {
		up := w.Servers[ks.ID]
		if up == nil {
			up = &intelligence.ServerUpdate{}
		}
		ids = append(ids, ks.ID)
		currents = append(currents, nullID(up.CurrentID))
		latest = append(latest, nullID(up.LatestChangeID))
		addChanges, addHigh = append(addChanges, up.AddChanges), append(addHigh, up.AddHighRisk)
	}
	b.Queue(`
UPDATE intel_servers s SET
    current_snapshot_id = coalesce(u.current_snapshot_id, s.current_snapshot_id),
    latest_change_id = coalesce(u.latest_change_id, s.latest_change_id),
    change_count = s.change_count + u.add_changes,
    high_risk_change_count = s.high_risk_change_count + u.add_high,
    last_seen_at = now()
FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::bigint[], $5::bigint[])
    AS u (id, current_snapshot_id, latest_change_id, add_changes, add_high)
WHERE s.id = u.id`, ids, currents, latest, addChanges, addHigh)
	return tx.SendBatch(ctx, b).Close()
}
