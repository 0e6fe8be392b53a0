package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
	"github.com/trustlayer/trustlayer/services/verification/internal/events"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// surfaceEvents encodes the events of tool-surface changes, which the audit store records (it is
// built without an Events of its own).
var surfaceEvents Events = events.Outbox{}

// SurfaceInput is what an audit observed of a remote's tool surface.
type SurfaceInput struct {
	URL        string
	Listing    *surface.Listing
	AuditID    uuid.UUID
	ObservedAt time.Time
}

// listedBy returns the servers whose current snapshot lists url as a remote, with their current
// snapshot and version, locked (in id order, as the sync locks them) so that their counters move
// with the changes. The GIN index on the remotes array (migration 00016) finds the snapshots and the
// servers' primary key their rows (joining on current_snapshot_id alone scans every server: 7 ms
// at 20,000 servers, against 0.1 ms).
const listedBy = `
SELECT s.id, s.namespace, s.name, x.id, x.version
FROM intel_snapshots x
JOIN intel_servers s ON s.id = x.server_id AND s.current_snapshot_id = x.id
WHERE (x.server_json::jsonb -> 'remotes') @> jsonb_build_array(jsonb_build_object('url', $1::text))
ORDER BY s.id
FOR UPDATE OF s`

type listingServer struct {
	id, snapshot uuid.UUID
	key          intelligence.ServerKey
	version      string
}

// RecordSurface records in tx a tool surface an audit observed, when a server currently lists the
// URL as a remote: a new observation when it differs from the URL's newest one, and, against that
// one, the classified changes of every such server with their outbox events and the servers'
// counters, in the same transaction as the audit report. A URL's first observation is its baseline
// and has no changes. Observations of a URL take turns (a transaction-scoped advisory lock), so that
// the URL's rows form one chain in seq order.
func RecordSurface(ctx context.Context, tx pgx.Tx, in SurfaceInput) error {
	if in.Listing == nil {
		return nil
	}
	rows, err := tx.Query(ctx, listedBy, in.URL)
	if err != nil {
		return fmt.Errorf("servers listing the remote: %w", err)
	}
	servers, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (listingServer, error) {
		var l listingServer
		return l, row.Scan(&l.id, &l.key.Namespace, &l.key.Name, &l.snapshot, &l.version)
	})
	if err != nil || len(servers) == 0 {
		return err
	}
	// Taken after the server rows (always in that order, so no two recorders deadlock), and only for
	// a listed URL: most audits are of URLs no server lists, and pay one indexed read.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('intel-surface:' || $1, 0))`, in.URL); err != nil {
		return err
	}
	dig := surface.Digest(*in.Listing)
	var prevID uuid.UUID
	var prevHash string
	var prevListing []byte
	// The listing only when the surface differs: most audits of a listed remote see the same one.
	err = tx.QueryRow(ctx, `
SELECT id, surface_hash, CASE WHEN surface_hash = $2 THEN NULL ELSE listing END
FROM intel_surface_observations WHERE url = $1 ORDER BY seq DESC LIMIT 1`, in.URL, dig.Hash).
		Scan(&prevID, &prevHash, &prevListing)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return fmt.Errorf("previous observation: %w", err)
	case prevHash == dig.Hash:
		return nil
	}
	obsID, err := uuid.NewV7()
	if err != nil {
		return err
	}
	digJSON, err := json.Marshal(dig)
	if err != nil {
		return err
	}
	listJSON, err := json.Marshal(in.Listing)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `
INSERT INTO intel_surface_observations (id, url, previous_id, surface_hash, surface, listing, audit_id, observed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, obsID, in.URL, nullID(prevID), dig.Hash, digJSON, listJSON, in.AuditID, in.ObservedAt); err != nil {
		return fmt.Errorf("write observation: %w", err)
	}
	if prevID == uuid.Nil {
		return nil
	}
	var old surface.Listing
	if err := json.Unmarshal(prevListing, &old); err != nil {
		return fmt.Errorf("observation %s: %w", prevID, err)
	}
	fcs := intelligence.SurfaceDiff(old, *in.Listing)
	if len(fcs) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, srv := range servers {
		var latest uuid.UUID
		var high int64
		for _, fc := range fcs {
			cid, err := uuid.NewV7()
			if err != nil {
				return err
			}
			c := intelligence.Change{
				FieldChange: fc, ID: cid, ServerID: srv.id, Key: srv.key,
				FromSnapshotID: srv.snapshot, ToSnapshotID: srv.snapshot, FromVersion: srv.version, ToVersion: srv.version,
				DetectedAt: in.ObservedAt, RemoteURL: in.URL, FromObservationID: prevID, ToObservationID: obsID,
			}
			b.Queue(`
INSERT INTO intel_changes (id, server_id, namespace, name, from_snapshot_id, to_snapshot_id, from_version, to_version,
    field, old_value, new_value, change_type, risk, summary, detected_at, remote_url, from_observation_id, to_observation_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)`,
				c.ID, c.ServerID, c.Key.Namespace, c.Key.Name, c.FromSnapshotID, c.ToSnapshotID, c.FromVersion, c.ToVersion,
				c.Field, c.Old, c.New, string(c.Type), string(c.Risk), c.Summary, c.DetectedAt, c.RemoteURL, c.FromObservationID, c.ToObservationID)
			ev, err := surfaceEvents.IntelChange(c)
			if err != nil {
				return err
			}
			if _, err := outbox.Queue(ctx, b, ev); err != nil {
				return err
			}
			latest = cid
			if fc.Risk == intelligence.RiskHigh {
				high++
			}
		}
		b.Queue(`
UPDATE intel_servers SET latest_change_id = $2, change_count = change_count + $3, high_risk_change_count = high_risk_change_count + $4
WHERE id = $1`, srv.id, latest, int64(len(fcs)), high)
	}
	return tx.SendBatch(ctx, b).Close()
}

// serverRemoteURLs is the set of remote URLs that any snapshot of server $1 lists (a server.json
// whose remotes is not an array lists none); at most 100, which bounds every timeline read.
const serverRemoteURLs = `
SELECT DISTINCT r->>'url' AS url
FROM intel_snapshots x,
     json_array_elements(CASE WHEN json_typeof(x.server_json -> 'remotes') = 'array' THEN x.server_json -> 'remotes' ELSE '[]'::json END) r
WHERE x.server_id = $1 AND r->>'url' IS NOT NULL
LIMIT 100`

const observationColumns = `o.id, o.url, o.previous_id, o.surface_hash, o.surface -> 'counts', o.observed_at, o.seq`

type observationScan struct {
	o        intelligence.SurfaceObservation
	previous uuid.NullUUID
	counts   []byte
	seq      int64
}

func (sc *observationScan) dest() []any {
	return []any{&sc.o.ID, &sc.o.URL, &sc.previous, &sc.o.Hash, &sc.counts, &sc.o.ObservedAt, &sc.seq}
}

func (sc *observationScan) observation() (intelligence.SurfaceObservation, error) {
	o := sc.o
	o.PreviousID = sc.previous.UUID
	if err := json.Unmarshal(sc.counts, &o.Counts); err != nil {
		return o, fmt.Errorf("observation %s: %w", o.ID, err)
	}
	return o, nil
}

// Timeline entry kinds in the keyset: at equal times a listing version sorts after (newer than) a
// surface observation.
const (
	kindObservation = 0
	kindSnapshot    = 1
)

// timelineCursorPrefix versions the timeline's cursor: (observed_at in microseconds, kind, seq).
const timelineCursorPrefix = "t1:"

type timelinePos struct {
	at   time.Time
	kind int
	seq  int64
}

func encodeTimelineCursor(p timelinePos) string {
	return base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s%d:%d:%d", timelineCursorPrefix, p.at.UnixMicro(), p.kind, p.seq)))
}

func decodeTimelineCursor(s string) (timelinePos, error) {
	if s == "" {
		return timelinePos{at: time.Unix(1<<40, 0), kind: 9, seq: 1<<62 - 1}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return timelinePos{}, fault.ErrBadCursor
	}
	rest, ok := strings.CutPrefix(string(b), timelineCursorPrefix)
	parts := strings.Split(rest, ":")
	if !ok || len(parts) != 3 {
		return timelinePos{}, fault.ErrBadCursor
	}
	micros, err1 := strconv.ParseInt(parts[0], 10, 64)
	kind, err2 := strconv.Atoi(parts[1])
	seq, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || (kind != kindObservation && kind != kindSnapshot) || seq <= 0 {
		return timelinePos{}, fault.ErrBadCursor
	}
	return timelinePos{at: time.UnixMicro(micros), kind: kind, seq: seq}, nil
}

// Timeline pages through a server's snapshots and the observations of the remote URLs its snapshots
// list, newest first by (observed_at, kind, seq): two keyset reads of Limit+1 rows each, merged.
func (r *Intelligence) Timeline(ctx context.Context, serverID uuid.UUID, p intelligence.Page) ([]intelligence.TimelineEntry, string, error) {
	pos, err := decodeTimelineCursor(p.Cursor)
	if err != nil {
		return nil, "", err
	}
	rows, err := r.pool.Query(ctx, `
SELECT `+snapshotColumns+` FROM intel_snapshots x
WHERE x.server_id = $1 AND (x.observed_at, 1, x.seq) < ($2::timestamptz, $3::int, $4::bigint)
ORDER BY x.observed_at DESC, x.seq DESC LIMIT $5`, serverID, pos.at, pos.kind, pos.seq, p.Limit+1)
	if err != nil {
		return nil, "", err
	}
	snaps, err := pgx.CollectRows(rows, scanSnapshotAt)
	if err != nil {
		return nil, "", err
	}
	rows, err = r.pool.Query(ctx, `
WITH urls AS (`+serverRemoteURLs+`)
SELECT `+observationColumns+` FROM intel_surface_observations o
WHERE o.url IN (SELECT url FROM urls) AND (o.observed_at, 0, o.seq) < ($2::timestamptz, $3::int, $4::bigint)
ORDER BY o.observed_at DESC, o.seq DESC LIMIT $5`, serverID, pos.at, pos.kind, pos.seq, p.Limit+1)
	if err != nil {
		return nil, "", err
	}
	var obs []positioned[intelligence.SurfaceObservation]
	var sc observationScan
	_, err = pgx.ForEachRow(rows, sc.dest(), func() error {
		o, err := sc.observation()
		obs = append(obs, positioned[intelligence.SurfaceObservation]{o, sc.seq})
		return err
	})
	if err != nil {
		return nil, "", err
	}
	// Merge, newest first.
	var out []intelligence.TimelineEntry
	var last timelinePos
	i, j := 0, 0
	for len(out) < p.Limit+1 && (i < len(snaps) || j < len(obs)) {
		takeSnap := j >= len(obs)
		if i < len(snaps) && j < len(obs) {
			s, o := snaps[i].item.ObservedAt, obs[j].item.ObservedAt
			takeSnap = s.After(o) || s.Equal(o) // kind 1 sorts above kind 0 at equal times
		}
		if takeSnap {
			s := snaps[i].item
			out = append(out, intelligence.TimelineEntry{Snapshot: &s})
			last = timelinePos{s.ObservedAt, kindSnapshot, snaps[i].seq}
			i++
		} else {
			o := obs[j].item
			out = append(out, intelligence.TimelineEntry{Observation: &o})
			last = timelinePos{o.ObservedAt, kindObservation, obs[j].seq}
			j++
		}
		if len(out) == p.Limit {
			break
		}
	}
	next := ""
	if len(out) == p.Limit && (i < len(snaps) || j < len(obs)) {
		next = encodeTimelineCursor(last)
	}
	return out, next, nil
}

// Observation returns an observation of one of the server's remote URLs, with its listing;
// fault.ErrVersionNotFound when there is none (or it is another server's).
func (r *Intelligence) Observation(ctx context.Context, serverID, id uuid.UUID) (intelligence.SurfaceObservation, error) {
	rows, err := r.pool.Query(ctx, `
WITH urls AS (`+serverRemoteURLs+`)
SELECT `+observationColumns+`, o.listing FROM intel_surface_observations o
WHERE o.id = $2 AND o.url IN (SELECT url FROM urls)`, serverID, id)
	if err != nil {
		return intelligence.SurfaceObservation{}, err
	}
	found, err := collectObservations(rows)
	if err != nil {
		return intelligence.SurfaceObservation{}, err
	}
	if len(found) == 0 {
		return intelligence.SurfaceObservation{}, fault.ErrVersionNotFound
	}
	return found[0], nil
}

// SurfacesAt returns, for each remote URL the server's snapshots list, its newest observation at or
// before at, with listings.
func (r *Intelligence) SurfacesAt(ctx context.Context, serverID uuid.UUID, at time.Time) ([]intelligence.SurfaceObservation, error) {
	rows, err := r.pool.Query(ctx, `
WITH urls AS (`+serverRemoteURLs+`)
SELECT DISTINCT ON (o.url) `+observationColumns+`, o.listing FROM intel_surface_observations o
WHERE o.url IN (SELECT url FROM urls) AND o.observed_at <= $2
ORDER BY o.url, o.observed_at DESC, o.seq DESC`, serverID, at)
	if err != nil {
		return nil, err
	}
	return collectObservations(rows)
}

func collectObservations(rows pgx.Rows) ([]intelligence.SurfaceObservation, error) {
	var out []intelligence.SurfaceObservation
	var sc observationScan
	var listing []byte
	_, err := pgx.ForEachRow(rows, append(sc.dest(), &listing), func() error {
		o, err := sc.observation()
		if err != nil {
			return err
		}
		if err := json.Unmarshal(listing, &o.Listing); err != nil {
			return fmt.Errorf("observation %s: %w", o.ID, err)
		}
		out = append(out, o)
		return nil
	})
	return out, err
}

// SnapshotAt returns the server's newest snapshot observed at or before at; its first snapshot when
// none was.
func (r *Intelligence) SnapshotAt(ctx context.Context, serverID uuid.UUID, at time.Time) (intelligence.Snapshot, error) {
	rows, err := r.pool.Query(ctx, `
(SELECT `+snapshotColumns+` FROM intel_snapshots x WHERE x.server_id = $1 AND x.observed_at <= $2 ORDER BY x.observed_at DESC, x.seq DESC LIMIT 1)
UNION ALL
(SELECT `+snapshotColumns+` FROM intel_snapshots x WHERE x.server_id = $1 ORDER BY x.seq LIMIT 1)`, serverID, at)
	if err != nil {
		return intelligence.Snapshot{}, err
	}
	found, err := pgx.CollectRows(rows, scanSnapshot)
	if err != nil {
		return intelligence.Snapshot{}, err
	}
	if len(found) == 0 {
		return intelligence.Snapshot{}, fault.ErrVersionNotFound
	}
	return found[0], nil
}

// ClaimDueRemotes brings the sweep's URL list up to date with the remotes that current snapshots
// list (https URLs without templates), and claims up to n URLs that are due, moving each one's next
// due time interval ahead: a URL is claimed once per due time whatever the number of replicas (FOR
// UPDATE SKIP LOCKED leaves rows another replica is claiming to it).
func (r *Intelligence) ClaimDueRemotes(ctx context.Context, interval time.Duration, n int) ([]string, error) {
	var urls []string
	err := pgx.BeginFunc(ctx, r.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
WITH listed AS (
    SELECT DISTINCT r->>'url' AS url
    FROM intel_servers s
    JOIN intel_snapshots x ON x.id = s.current_snapshot_id,
         json_array_elements(CASE WHEN json_typeof(x.server_json -> 'remotes') = 'array' THEN x.server_json -> 'remotes' ELSE '[]'::json END) r
    WHERE r->>'url' LIKE 'https://%' AND strpos(r->>'url', '{') = 0
), gone AS (
    DELETE FROM intel_remote_sweeps w WHERE NOT EXISTS (SELECT 1 FROM listed l WHERE l.url = w.url)
)
INSERT INTO intel_remote_sweeps (url) SELECT url FROM listed ON CONFLICT (url) DO NOTHING`); err != nil {
			return fmt.Errorf("refresh the sweep's remotes: %w", err)
		}
		rows, err := tx.Query(ctx, `
UPDATE intel_remote_sweeps w SET next_due_at = now() + make_interval(secs => $1), last_run_at = now()
WHERE w.url IN (SELECT url FROM intel_remote_sweeps WHERE next_due_at <= now() ORDER BY next_due_at LIMIT $2 FOR UPDATE SKIP LOCKED)
RETURNING w.url`, interval.Seconds(), n)
		if err != nil {
			return err
		}
		urls, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return urls, err
}

// RecordSweepError keeps the last failure of a URL's sweep audit ("" after a success), for operators.
func (r *Intelligence) RecordSweepError(ctx context.Context, url, msg string) error {
	_, err := r.pool.Exec(ctx, `UPDATE intel_remote_sweeps SET last_error = $2 WHERE url = $1`, url, msg)
	return err
}
