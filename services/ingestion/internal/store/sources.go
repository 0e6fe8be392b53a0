package store

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
)

const sourceColumns = `id, organization, program, jurisdiction, allowed_hosts, adapter, adapter_config, cadence_seconds,
terms_review_state, enabled, health_status, last_error, consecutive_failures, last_run_at, next_run_at, created_at, updated_at`

func scanSource(row pgx.Row) (ingest.Source, error) {
	var src ingest.Source
	var cfg []byte
	err := row.Scan(&src.ID, &src.Organization, &src.Program, &src.Jurisdiction, &src.AllowedHosts, &src.Adapter, &cfg,
		&src.CadenceSeconds, &src.TermsReviewState, &src.Enabled, &src.HealthStatus, &src.LastError,
		&src.ConsecutiveFailures, &src.LastRunAt, &src.NextRunAt, &src.CreatedAt, &src.UpdatedAt)
	if err != nil {
		return src, err
	}
	return src, json.Unmarshal(cfg, &src.AdapterConfig)
}

// CreateSource inserts a source; its first run is due at once.
func (s *Store) CreateSource(ctx context.Context, src ingest.Source) (ingest.Source, error) {
	cfg, err := json.Marshal(src.AdapterConfig)
	if err != nil {
		return src, err
	}
	return scanSource(s.pool.QueryRow(ctx, `
INSERT INTO sources (id, organization, program, jurisdiction, allowed_hosts, adapter, adapter_config, cadence_seconds, terms_review_state, enabled)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
RETURNING `+sourceColumns,
		uuid.Must(uuid.NewV7()), src.Organization, src.Program, src.Jurisdiction, src.AllowedHosts, src.Adapter, cfg,
		src.CadenceSeconds, src.TermsReviewState, src.Enabled))
}

// GetSource returns one source.
func (s *Store) GetSource(ctx context.Context, id uuid.UUID) (ingest.Source, error) {
	src, err := scanSource(s.pool.QueryRow(ctx, `SELECT `+sourceColumns+` FROM sources WHERE id = $1`, id))
	return src, notFound(err)
}

// ListSources pages through sources, newest first.
func (s *Store) ListSources(ctx context.Context, p ingest.Page) ([]ingest.Source, string, error) {
	return listPage(ctx, s, `SELECT `+sourceColumns+` FROM sources`, nil, nil, p, scanSource,
		func(s ingest.Source) (time.Time, uuid.UUID) { return s.CreatedAt, s.ID })
}

// SourceStatus returns the source and its latest run.
func (s *Store) SourceStatus(ctx context.Context, id uuid.UUID) (ingest.SourceStatus, error) {
	src, err := s.GetSource(ctx, id)
	if err != nil {
		return ingest.SourceStatus{}, err
	}
	st := ingest.SourceStatus{Source: src}
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM discovery_runs WHERE source_id = $1 ORDER BY started_at DESC, id DESC LIMIT 1`, id))
	switch {
	case err == nil:
		st.LastRun = &run
	case !errors.Is(err, pgx.ErrNoRows):
		return st, err
	}
	return st, nil
}

// claimLease is how far a claimed source's next run moves ahead while its run goes on: a run sets
// its real next run time when it ends, and a replica that dies during the run leaves the source due
// again once the lease is over. It is above the longest run (a source's fetches, each bounded by
// the fetch timeout and the per-host spacing).
const claimLease = 30 * time.Minute

// DueSources claims up to limit sources whose next run is due, oldest due first: it moves their
// next run claimLease ahead in the statement that reads them, skipping rows another replica is
// claiming, so that a due time is run by one replica only.
func (s *Store) DueSources(ctx context.Context, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `
WITH due AS (
    SELECT id, next_run_at FROM sources
    WHERE enabled AND terms_review_state = 'approved' AND health_status <> 'REVIEW_REQUIRED' AND next_run_at <= now()
    ORDER BY next_run_at LIMIT $1
    FOR UPDATE SKIP LOCKED)
UPDATE sources s SET next_run_at = now() + make_interval(secs => $2)
FROM due WHERE s.id = due.id
RETURNING s.id, due.next_run_at`, limit, claimLease.Seconds())
	if err != nil {
		return nil, err
	}
	type claimed struct {
		id  uuid.UUID
		due time.Time
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimed, error) {
		var c claimed
		return c, r.Scan(&c.id, &c.due)
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b claimed) int { return a.due.Compare(b.due) })
	ids := make([]uuid.UUID, len(list))
	for i, c := range list {
		ids[i] = c.id
	}
	return ids, nil
}

const runColumns = `id, source_id, trigger, status, started_at, finished_at, error_kind, error, resources`

func scanRun(row pgx.Row) (ingest.Run, error) {
	var r ingest.Run
	var res []byte
	if err := row.Scan(&r.ID, &r.SourceID, &r.Trigger, &r.Status, &r.StartedAt, &r.FinishedAt, &r.ErrorKind, &r.Error, &res); err != nil {
		return r, err
	}
	return r, json.Unmarshal(res, &r.Resources)
}
