package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// seedSpec is the size of the registry history the bench writes.
type seedSpec struct {
	// Servers is the number of ordinary servers, History their snapshots (history rows) each; the
	// defaults, 10,000 × 100, make 1,000,000 rows.
	Servers, History int
	// Long is the number of servers with a long history of LongHistory snapshots, whose deep pages
	// the bench reads (default 2 × 100,000).
	Long, LongHistory int
	// Span is how far back the first observation lies.
	Span time.Duration
}

func (s seedSpec) snapshots() int { return s.Servers*s.History + s.Long*s.LongHistory }

// seedRegistry is the official registry's URL, which every seeded snapshot names.
const seedRegistry = "https://registry.modelcontextprotocol.io"

// Placeholders of the server.json template, replaced per snapshot in SQL.
const (
	phName    = "benchns/benchname"
	phVersion = "0.0.0-benchversion"
	phHost    = "benchremote.example.com"
)

// serverTemplate returns the canonical server.json (the form intelligence.DecodeServer stores) of a typical
// registry entry, like registryfixture.Server's, with placeholders for name, version and remote host.
func serverTemplate() (string, error) {
	raw, err := json.Marshal(map[string]any{
		"$schema":     "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
		"name":        phName,
		"version":     phVersion,
		"title":       "Weather",
		"description": "Weather forecasts for " + phName + ", from the national weather services of 40 countries",
		"websiteUrl":  "https://weather.example.com/docs/mcp",
		"repository":  map[string]any{"url": "https://github.com/example/weather", "source": "github", "id": "r-1001"},
		"packages": []any{map[string]any{
			"registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org", "identifier": "@example/weather",
			"version": phVersion, "transport": map[string]any{"type": "stdio"},
			"environmentVariables": []any{
				map[string]any{"name": "WEATHER_API_KEY", "description": "API key of the weather provider", "isRequired": true, "isSecret": true},
				map[string]any{"name": "WEATHER_UNITS", "description": "metric or imperial", "default": "metric"},
			},
		}},
		"remotes": []any{map[string]any{"type": "streamable-http", "url": "https://" + phHost + "/mcp",
			"headers": []any{map[string]any{"name": "Authorization", "description": "Bearer token", "isRequired": true, "isSecret": true}}}},
	})
	if err != nil {
		return "", err
	}
	s, err := intelligence.DecodeServer(raw)
	if err != nil {
		return "", err
	}
	return string(s.JSON), nil
}

// The seed is plain SQL run by PostgreSQL itself (no rows cross the wire). Its shape is what the
// registry sync writes (store/intelligence_sync.go) for a registry whose servers each publish a new
// version in turn: snapshot k of a server is version 1.<k/100>.<k%100> with its npm package at the
// same version, and every 25th release moves the remote to another host. Each release after the
// first is two changes (version_bump, package_version_changed; low), three with the move
// (remote_host_changed; high), in the order intelligence.Diff reports them; checkSeed compares a sample with
// intelligence.Diff. Observations are spread evenly over Span and interleaved across servers, so that seq
// (the keyset of every page) follows time as it does in production and a server's history is spread
// over the table. Ids are UUIDv7-shaped (time first), like uuid.NewV7's: the primary keys are
// appended to, as in production.
const (
	// seedUUID is a time-ordered id: the observation's milliseconds and sub-millisecond fraction, then
	// the server, the snapshot and an ordinal (0 for a snapshot, 1..3 for its changes, f for the server).
	seedUUID = `
CREATE FUNCTION pg_temp.seed_uuid(us bigint, srv int, k bigint, ord int) RETURNS uuid LANGUAGE sql IMMUTABLE AS $$
SELECT (lpad(to_hex(us / 1000), 12, '0') || '7' || lpad(to_hex(((us % 1000) * 4096 / 1000)::int), 3, '0') || '8'
        || lpad(to_hex(srv), 6, '0') || lpad(to_hex(k), 8, '0') || to_hex(ord))::uuid $$`

	// The two helper tables are unlogged and dropped at the end of the seed; two connections read them.
	seedHelperTables = `
CREATE UNLOGGED TABLE bench_seed_keys (
    srv int PRIMARY KEY, namespace text, name text, h int, t0 bigint, period bigint, server_id uuid);
CREATE UNLOGGED TABLE bench_seed_snaps (
    seq bigint, srv int, k bigint, t bigint, namespace text, name text, id uuid, prev_id uuid, server_id uuid,
    v text, pv text, host text, phost text, changes_before bigint)`
	seedDropHelpers = `DROP TABLE IF EXISTS bench_seed_snaps, bench_seed_keys`

	// $1 servers, $2 history, $3 long servers, $4 long history, $5 first observation (µs since the
	// epoch), $6 and $7 the spacing of consecutive observations of ordinary and long servers (µs).
	seedKeys = `
INSERT INTO bench_seed_keys (srv, namespace, name, h, t0, period, server_id)
SELECT srv, namespace, name, h, t0, period, pg_temp.seed_uuid(t0, srv, 0, 15)
FROM (
    SELECT srv,
           CASE WHEN srv < p.n THEN 'io.bench.o' || (srv % 500)::text ELSE 'io.bench.busy' END AS namespace,
           CASE WHEN srv < p.n THEN 'server-' || lpad(srv::text, 6, '0') ELSE 'busy-' || (srv - p.n)::text END AS name,
           CASE WHEN srv < p.n THEN p.h ELSE p.lh END AS h,
           CASE WHEN srv < p.n THEN p.first + srv * p.step ELSE p.first + (srv - p.n) * p.long_step + 1 END AS t0,
           CASE WHEN srv < p.n THEN p.n * p.step ELSE p.l * p.long_step END AS period
    FROM (SELECT $1::int AS n, $2::int AS h, $3::int AS l, $4::int AS lh, $5::bigint AS first, $6::bigint AS step, $7::bigint AS long_step) p,
         generate_series(0, p.n + p.l - 1) srv
) k`

	// Rows in observation order, numbered: seq of the snapshot, and the number of changes recorded
	// before it (the seq of its first change is one more).
	seedSnaps = `
INSERT INTO bench_seed_snaps
SELECT seq, srv, k, t, namespace, name, pg_temp.seed_uuid(t, srv, k, 0), pg_temp.seed_uuid(t - period, srv, k - 1, 0), server_id,
       '1.' || (k / 100)::text || '.' || (k % 100)::text, '1.' || ((k - 1) / 100)::text || '.' || ((k - 1) % 100)::text,
       'mcp' || (k / 25)::text || '.example.com', 'mcp' || ((k - 1) / 25)::text || '.example.com',
       sum(n) OVER (ORDER BY seq ROWS UNBOUNDED PRECEDING) - n
FROM (
    SELECT row_number() OVER (ORDER BY t0 + k * period, srv) AS seq, srv, k, t0 + k * period AS t, period, namespace, name, server_id,
           CASE WHEN k = 0 THEN 0 WHEN k % 25 = 0 THEN 3 ELSE 2 END AS n
    FROM bench_seed_keys, generate_series(0::bigint, h - 1) k
) o
ORDER BY seq`

	seedRegistryRow = `
INSERT INTO intel_registries (url, high_water_mark, full_sync_done_at, last_poll_at, last_success_at)
VALUES ($1, now(), now(), now(), now())`

	// Servers with their final pointers and counters; written before the rows they point to, which
	// only the session_replication_role = replica of the load allows.
	seedServers = `
INSERT INTO intel_servers (id, namespace, name, current_snapshot_id, latest_change_id, change_count, high_risk_change_count,
    first_seen_at, last_seen_at)
SELECT server_id, namespace, name, pg_temp.seed_uuid(t0 + (h - 1) * period, srv, h - 1, 0),
       CASE WHEN h > 1 THEN pg_temp.seed_uuid(t0 + (h - 1) * period, srv, h - 1, 3) END,
       2 * (h - 1) + (h - 1) / 25, (h - 1) / 25, to_timestamp(t0 / 1e6), to_timestamp((t0 + (h - 1) * period) / 1e6)
FROM bench_seed_keys`

	// $1 the server.json template, $2 the registry, $3..$5 the template's placeholders.
	seedSnapshots = `
INSERT INTO intel_snapshots (id, seq, server_id, registry, version, status, is_latest, content_hash, server_json,
    published_at, registry_updated_at, observed_at)
OVERRIDING SYSTEM VALUE
SELECT id, seq, server_id, $2, v, 'active', id = (SELECT current_snapshot_id FROM intel_servers WHERE intel_servers.id = server_id), encode(sha256(convert_to(j || E'\n' || 'active', 'UTF8')), 'hex'), j::json, ts, ts, ts
FROM (
    SELECT s.*, to_timestamp(t / 1e6) AS ts,
           replace(replace(replace($1::text, $3::text, namespace || '/' || name), $4::text, v), $5::text, host) AS j
    FROM bench_seed_snaps s
) x`

	seedChanges = `
INSERT INTO intel_changes (id, seq, server_id, namespace, name, from_snapshot_id, to_snapshot_id, from_version, to_version,
    field, old_value, new_value, change_type, risk, summary, detected_at)
OVERRIDING SYSTEM VALUE
SELECT (left(replace(s.id::text, '-', ''), 31) || c.ord::text)::uuid,
       s.changes_before + CASE WHEN s.k % 25 = 0 THEN c.ord ELSE (c.ord + 1) / 2 END,
       s.server_id, s.namespace, s.name, s.prev_id, s.id, s.pv, s.v,
       c.field, c.old, c.new, c.change_type, c.risk, c.summary, to_timestamp(s.t / 1e6)
FROM bench_seed_snaps s CROSS JOIN LATERAL (VALUES
    (1, 'version', s.pv, s.v, 'version_bump', 'low', 'version changed from ' || s.pv || ' to ' || s.v),
    (2, 'remotes[0].url', 'https://' || s.phost || '/mcp', 'https://' || s.host || '/mcp', 'remote_host_changed', 'high',
        'remote host changed from ' || s.phost || ' to ' || s.host),
    (3, 'packages[0].version', s.pv, s.v, 'package_version_changed', 'low',
        'package @example/weather version changed from ' || s.pv || ' to ' || s.v)
) c (ord, field, old, new, change_type, risk, summary)
WHERE s.k > 0 AND (c.ord <> 2 OR s.k % 25 = 0)`

	// The identity sequences continue after the rows written with explicit seqs.
	seedSequences = `
SELECT setval(pg_get_serial_sequence('intel_snapshots', 'seq'), (SELECT max(seq) FROM intel_snapshots)),
       setval(pg_get_serial_sequence('intel_changes', 'seq'), (SELECT max(seq) FROM intel_changes))`

	// The secondary indexes of a table (and its multi-column unique constraints): those whose leading
	// column is not in insertion order, which a bulk load builds after the rows (one sort each)
	// rather than row by row (a random leaf page each). Primary keys and seq stay: they are appended
	// to, and foreign keys depend on them.
	seedSecondaryIndexes = `
SELECT 'constraint', c.conname, pg_get_constraintdef(c.oid)
FROM pg_constraint c JOIN pg_index i ON i.indexrelid = c.conindid
WHERE c.conrelid = $1::regclass AND c.contype = 'u' AND i.indnatts > 1
UNION ALL
SELECT 'index', i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
FROM pg_index i
WHERE i.indrelid = $1::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
ORDER BY 1, 2`

	// The definition of every index, constraint and trigger of the registry tables, compared before
	// and after the seed: it must leave the schema exactly as the migrations made it.
	seedSchemaFingerprint = `
SELECT string_agg(d, E'\n' ORDER BY d) FROM (
    SELECT pg_get_indexdef(indexrelid) AS d FROM pg_index WHERE indrelid = ANY ($1::regclass[])
    UNION ALL
    SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) || ' ' || convalidated::text
    FROM pg_constraint WHERE conrelid = ANY ($1::regclass[])
    UNION ALL
    SELECT tgrelid::regclass::text || ' ' || pg_get_triggerdef(oid) || ' ' || tgenabled::text
    FROM pg_trigger WHERE tgrelid = ANY ($1::regclass[]) AND NOT tgisinternal
) x`

	// Foreign keys were not checked during the load (replica role); every server's pointers and a 1 %
	// sample of snapshots and changes are checked here. The rows are consistent by construction (the
	// same seed_uuid arguments on both sides); this catches a mistake in that construction.
	seedDanglingReferences = `
SELECT (SELECT count(*) FROM intel_servers s
        WHERE NOT EXISTS (SELECT 1 FROM intel_snapshots x WHERE x.id = s.current_snapshot_id)
           OR s.latest_change_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM intel_changes c WHERE c.id = s.latest_change_id))
     + (SELECT count(*) FROM intel_snapshots x TABLESAMPLE SYSTEM (1)
        WHERE NOT EXISTS (SELECT 1 FROM intel_servers s WHERE s.id = x.server_id))
     + (SELECT count(*) FROM intel_changes c TABLESAMPLE SYSTEM (1)
        WHERE NOT EXISTS (SELECT 1 FROM intel_servers s WHERE s.id = c.server_id)
           OR NOT EXISTS (SELECT 1 FROM intel_snapshots x WHERE x.id = c.from_snapshot_id)
           OR NOT EXISTS (SELECT 1 FROM intel_snapshots x WHERE x.id = c.to_snapshot_id))`
)

// registryTables are the tables the seed writes.
var registryTables = []string{"intel_servers", "intel_snapshots", "intel_changes"}

// seedSession prepares a connection for the bulk load: foreign-key triggers off (replica role, which
// needs a superuser such as the local postgres role), memory for the sorts and the index builds, no
// wait for WAL flushes, and scans in physical order (the helper table is read in seq order).
func seedSession(ctx context.Context, conn *pgx.Conn) error {
	for _, set := range []string{
		"SET session_replication_role = replica", "SET work_mem = '256MB'", "SET maintenance_work_mem = '512MB'",
		"SET synchronous_commit = off", "SET synchronize_seqscans = off", "SET jit = off",
	} {
		if _, err := conn.Exec(ctx, set); err != nil {
			return fmt.Errorf("%s (the seed needs a superuser, e.g. the local postgres role): %w", set, err)
		}
	}
	return nil
}

// seedStats is what the seed wrote and how long it took.
type seedStats struct {
	Servers, Snapshots, Changes int64
	Elapsed                     time.Duration
}

// secondary is a dropped index or unique constraint and the statement that creates it again.
type secondary struct{ table, kind, name, def string }

func (s secondary) drop() string {
	if s.kind == "constraint" {
		return "ALTER TABLE " + s.table + " DROP CONSTRAINT " + pgx.Identifier{s.name}.Sanitize()
	}
	return "DROP INDEX " + pgx.Identifier{s.name}.Sanitize()
}

func (s secondary) create() string {
	if s.kind == "constraint" {
		return "ALTER TABLE " + s.table + " ADD CONSTRAINT " + pgx.Identifier{s.name}.Sanitize() + " " + s.def
	}
	return s.def
}

// seed writes the registry history of spec into the migrated database at dbURL, on two connections
// (snapshots and changes load and index side by side), and checks the result.
func seed(ctx context.Context, dbURL string, spec seedSpec) (seedStats, error) {
	start := time.Now()
	tmpl, err := serverTemplate()
	if err != nil {
		return seedStats{}, err
	}
	var conns [2]*pgx.Conn
	for i := range conns {
		if conns[i], err = pgx.Connect(ctx, dbURL); err != nil {
			return seedStats{}, err
		}
		defer conns[i].Close(context.Background())
		if err := seedSession(ctx, conns[i]); err != nil {
			return seedStats{}, err
		}
	}
	a := conns[0]
	fingerprint := func() (string, error) {
		var fp string
		err := a.QueryRow(ctx, seedSchemaFingerprint, registryTables).Scan(&fp)
		return fp, err
	}
	before, err := fingerprint()
	if err != nil {
		return seedStats{}, err
	}
	span := spec.Span.Microseconds()
	first := time.Now().Add(-spec.Span).UnixMicro()
	stepLong := int64(0)
	if spec.Long > 0 {
		stepLong = span / int64(spec.LongHistory*spec.Long)
	}
	steps := []struct {
		sql  string
		args []any
	}{
		{seedUUID, nil},
		{seedDropHelpers, nil},
		{seedHelperTables, nil},
		{seedKeys, []any{spec.Servers, spec.History, spec.Long, spec.LongHistory, first, span / int64(spec.History*spec.Servers), stepLong}},
		{seedSnaps, nil},
		{seedRegistryRow, []any{seedRegistry}},
		{seedServers, nil},
	}
	for _, s := range steps {
		if _, err := a.Exec(ctx, s.sql, s.args...); err != nil {
			return seedStats{}, fmt.Errorf("seed: %w", err)
		}
	}
	defer func() { _, _ = a.Exec(context.Background(), seedDropHelpers) }()

	// Snapshots on one connection, changes on the other: each drops its table's secondary indexes,
	// loads, and builds them again.
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	load := func(conn *pgx.Conn, table, sql string, args ...any) (err error) {
		defer func() {
			if err != nil {
				cancel() // the other connection's work is of no use now
			}
		}()
		rows, err := conn.Query(gctx, seedSecondaryIndexes, table)
		if err != nil {
			return err
		}
		var dropped []secondary
		var kind, name, def string
		if _, err := pgx.ForEachRow(rows, []any{&kind, &name, &def}, func() error {
			dropped = append(dropped, secondary{table, kind, name, def})
			return nil
		}); err != nil {
			return err
		}
		for _, s := range dropped {
			if _, err := conn.Exec(gctx, s.drop()); err != nil {
				return fmt.Errorf("%s: %w", s.drop(), err)
			}
		}
		if _, err := conn.Exec(gctx, sql, args...); err != nil {
			return fmt.Errorf("load %s: %w", table, err)
		}
		for _, s := range dropped {
			if _, err := conn.Exec(gctx, s.create()); err != nil {
				return fmt.Errorf("%s: %w", s.create(), err)
			}
		}
		// Vacuumed and analysed now, so that autovacuum does not wake up during the measurements and
		// the planner has statistics.
		_, err = conn.Exec(gctx, "VACUUM (ANALYZE) "+table)
		return err
	}
	var loaded [2]error
	var wg sync.WaitGroup
	wg.Go(func() {
		loaded[0] = load(conns[0], "intel_snapshots", seedSnapshots, tmpl, seedRegistry, phName, phVersion, phHost)
	})
	wg.Go(func() { loaded[1] = load(conns[1], "intel_changes", seedChanges) })
	wg.Wait()
	if err := errors.Join(loaded[:]...); err != nil {
		return seedStats{}, err
	}
	for _, sql := range []string{seedSequences, seedDropHelpers, "VACUUM (ANALYZE) intel_servers"} {
		if _, err := a.Exec(ctx, sql); err != nil {
			return seedStats{}, err
		}
	}
	after, err := fingerprint()
	if err != nil {
		return seedStats{}, err
	}
	if after != before {
		return seedStats{}, fmt.Errorf("seed: the schema of %s changed:\nbefore:\n%s\nafter:\n%s", strings.Join(registryTables, ", "), before, after)
	}
	var dangling int64
	if err := a.QueryRow(ctx, seedDanglingReferences).Scan(&dangling); err != nil {
		return seedStats{}, err
	}
	if dangling != 0 {
		return seedStats{}, fmt.Errorf("seed: %d rows reference rows that do not exist", dangling)
	}
	st := seedStats{Elapsed: time.Since(start)}
	if err := a.QueryRow(ctx, `SELECT (SELECT count(*) FROM intel_servers), (SELECT count(*) FROM intel_snapshots), (SELECT count(*) FROM intel_changes)`).
		Scan(&st.Servers, &st.Snapshots, &st.Changes); err != nil {
		return st, err
	}
	if st.Snapshots != int64(spec.snapshots()) {
		return st, fmt.Errorf("seed: got %d snapshots, want %d", st.Snapshots, spec.snapshots())
	}
	return st, checkSeed(ctx, a, spec)
}

// benchKey returns the key of the i-th seeded server: ordinary ones first, then the long ones.
func benchKey(spec seedSpec, i int) intelligence.ServerKey {
	if i < spec.Servers {
		return intelligence.ServerKey{Namespace: fmt.Sprintf("io.bench.o%d", i%500), Name: fmt.Sprintf("server-%06d", i)}
	}
	return intelligence.ServerKey{Namespace: "io.bench.busy", Name: fmt.Sprintf("busy-%d", i-spec.Servers)}
}

// checkSeed compares a sample of the seed with what the sync itself would have written: each
// snapshot's server.json decodes to the same canonical text with the same content hash, each
// release's change rows are intelligence.Diff of its two snapshots, and the server row's pointers and
// counters match its rows.
func checkSeed(ctx context.Context, conn *pgx.Conn, spec seedSpec) error {
	sample := []int{0, spec.Servers / 2, spec.Servers - 1}
	if spec.Long > 0 {
		sample = append(sample, spec.Servers)
	}
	for _, i := range sample {
		key := benchKey(spec, i)
		if err := checkServer(ctx, conn, key); err != nil {
			return fmt.Errorf("seed check of %s: %w", key, err)
		}
	}
	return nil
}

func checkServer(ctx context.Context, conn *pgx.Conn, key intelligence.ServerKey) error {
	var id, current, latest string
	var changeCount, highCount int64
	if err := conn.QueryRow(ctx, `
SELECT id, current_snapshot_id, latest_change_id, change_count, high_risk_change_count
FROM intel_servers WHERE namespace = $1 AND name = $2`, key.Namespace, key.Name).Scan(&id, &current, &latest, &changeCount, &highCount); err != nil {
		return err
	}
	// The first 60 releases: enough to cross two remote moves, few enough for a long history.
	rows, err := conn.Query(ctx, `
SELECT id::text, status, content_hash, server_json::text FROM intel_snapshots WHERE server_id = $1 ORDER BY seq LIMIT 60`, id)
	if err != nil {
		return err
	}
	type snap struct {
		id  string
		raw string
		s   intelligence.Snapshot
	}
	var snaps []snap
	var sid, status, hash, raw string
	if _, err := pgx.ForEachRow(rows, []any{&sid, &status, &hash, &raw}, func() error {
		srv, err := intelligence.DecodeServer([]byte(raw))
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", sid, err)
		}
		if string(srv.JSON) != raw || srv.Key != key {
			return fmt.Errorf("snapshot %s: got %s, want the canonical server.json of %s", sid, raw, key)
		}
		if got := intelligence.ContentHash(srv, status); got != hash {
			return fmt.Errorf("snapshot %s: content hash %s, want %s", sid, hash, got)
		}
		snaps = append(snaps, snap{sid, raw, intelligence.Snapshot{Status: status, Server: srv}})
		return nil
	}); err != nil {
		return err
	}
	for i := 1; i < len(snaps); i++ {
		want := intelligence.Diff(snaps[i-1].s, snaps[i].s)
		rows, err := conn.Query(ctx, `
SELECT field, old_value, new_value, change_type, risk, summary FROM intel_changes
WHERE server_id = $1 AND to_snapshot_id = $2 AND from_snapshot_id = $3 ORDER BY seq`, id, snaps[i].id, snaps[i-1].id)
		if err != nil {
			return err
		}
		got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (intelligence.FieldChange, error) {
			var c intelligence.FieldChange
			var t, risk string
			err := r.Scan(&c.Field, &c.Old, &c.New, &t, &risk, &c.Summary)
			c.Type, c.Risk = intelligence.ChangeType(t), intelligence.Risk(risk)
			return c, err
		})
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("changes from %s to %s: got %+v, want %+v", snaps[i-1].id, snaps[i].id, got, want)
		}
	}
	var n, high int64
	var last, lastChange string
	if err := conn.QueryRow(ctx, `
SELECT (SELECT count(*) FROM intel_changes WHERE server_id = $1), (SELECT count(*) FROM intel_changes WHERE server_id = $1 AND risk = 'high'),
       (SELECT id::text FROM intel_snapshots WHERE server_id = $1 ORDER BY seq DESC LIMIT 1),
       (SELECT id::text FROM intel_changes WHERE server_id = $1 ORDER BY seq DESC LIMIT 1)`, id).Scan(&n, &high, &last, &lastChange); err != nil {
		return err
	}
	var errs []error
	if n != changeCount || high != highCount {
		errs = append(errs, fmt.Errorf("counters %d/%d, want %d/%d (changes/high risk)", changeCount, highCount, n, high))
	}
	if current != last || latest != lastChange {
		errs = append(errs, fmt.Errorf("pointers %s/%s, want %s/%s (snapshot/change)", current, latest, last, lastChange))
	}
	return errors.Join(errs...)
}
