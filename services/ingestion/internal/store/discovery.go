package store

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/confidence"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
)

// EnsurePolicy returns the id of the source's policy at url, creating it on first sight. The read comes
// first because a policy is created once and read at every fetch.
func (s *Store) EnsurePolicy(ctx context.Context, sourceID uuid.UUID, url string) (uuid.UUID, error) {
	var id uuid.UUID
	err := s.pool.QueryRow(ctx, `SELECT id FROM policies WHERE source_id = $1 AND url = $2`, sourceID, url).Scan(&id)
	if !errors.Is(err, pgx.ErrNoRows) {
		return id, err
	}
	err = s.pool.QueryRow(ctx, `
INSERT INTO policies (id, source_id, url) VALUES ($1, $2, $3)
ON CONFLICT (source_id, url) DO UPDATE SET last_seen_at = now()
RETURNING id`, uuid.Must(uuid.NewV7()), sourceID, url).Scan(&id)
	return id, err
}

const assetColumns = `id, raw_sha256, size_bytes, media_type, blob_key`

func scanAsset(row pgx.Row) (ingest.Asset, error) {
	var a ingest.Asset
	err := row.Scan(&a.ID, &a.RawSHA256, &a.Size, &a.MediaType, &a.BlobKey)
	return a, err
}

// AssetBySHA returns the asset with these bytes, if archived.
func (s *Store) AssetBySHA(ctx context.Context, sha string) (ingest.Asset, bool, error) {
	a, err := scanAsset(s.pool.QueryRow(ctx, `SELECT `+assetColumns+` FROM document_assets WHERE raw_sha256 = $1`, sha))
	if errors.Is(err, pgx.ErrNoRows) {
		return a, false, nil
	}
	return a, err == nil, err
}

// InsertAsset stores the asset unless its hash is already archived; the unique key on raw_sha256 is
// the arbiter between replicas archiving the same bytes at once.
func (s *Store) InsertAsset(ctx context.Context, a ingest.Asset) (ingest.Asset, bool, error) {
	tag, err := s.pool.Exec(ctx, `
INSERT INTO document_assets (id, raw_sha256, size_bytes, media_type, blob_key) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (raw_sha256) DO NOTHING`, a.ID, a.RawSHA256, a.Size, a.MediaType, a.BlobKey)
	if err != nil {
		return a, false, err
	}
	if tag.RowsAffected() == 1 {
		return a, true, nil
	}
	existing, _, err := s.AssetBySHA(ctx, a.RawSHA256)
	return existing, false, err
}

// queueObservation adds the insert of one fetch's observation to a batch.
func queueObservation(b *pgx.Batch, o ingest.Observation) {
	headers, _ := json.Marshal(orEmpty(o.Headers))
	chain, _ := json.Marshal(orEmptySlice(o.RedirectChain))
	timings, _ := json.Marshal(orEmpty(o.TimingsMS))
	var asset *uuid.UUID
	if o.DocumentAssetID != uuid.Nil {
		asset = &o.DocumentAssetID
	}
	b.Queue(`
INSERT INTO document_observations (id, policy_id, run_id, document_asset_id, url, final_url, http_status, headers,
    redirect_chain, timings_ms, attempts, size_bytes, raw_sha256, media_type, error_kind, error, fetched_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
		o.ID, o.PolicyID, o.RunID, asset, o.URL, o.FinalURL, o.HTTPStatus, headers, chain, timings, o.Attempts,
		o.Size, o.RawSHA256, o.MediaType, o.ErrorKind, o.Error, o.FetchedAt)
}

func orEmpty[M ~map[K]V, K comparable, V any](m M) M {
	if m == nil {
		return M{}
	}
	return m
}

func orEmptySlice[S ~[]E, E any](s S) S {
	if s == nil {
		return S{}
	}
	return s
}

// versionColumns leave out the canonical text, which only a changed fetch needs (VersionContent).
const versionColumns = `v.id, v.policy_id, v.number, v.canonical_content_hash, v.sections, v.created_at,
a.id, a.raw_sha256, a.size_bytes, a.media_type, a.blob_key`

func scanVersion(row pgx.Row) (ingest.Version, error) {
	var v ingest.Version
	var sections []byte
	err := row.Scan(&v.ID, &v.PolicyID, &v.Number, &v.CanonicalContentHash, &sections, &v.CreatedAt,
		&v.Asset.ID, &v.Asset.RawSHA256, &v.Asset.Size, &v.Asset.MediaType, &v.Asset.BlobKey)
	if err != nil {
		return v, err
	}
	return v, json.Unmarshal(sections, &v.Sections)
}

// CurrentVersion returns the policy's latest version without its text and sections, or nil.
func (s *Store) CurrentVersion(ctx context.Context, policyID uuid.UUID) (*ingest.Version, error) {
	var v ingest.Version
	err := s.pool.QueryRow(ctx, `
SELECT v.id, v.policy_id, v.number, v.canonical_content_hash, v.created_at, a.id, a.raw_sha256, a.size_bytes, a.media_type, a.blob_key
FROM document_versions v JOIN document_assets a ON a.id = v.document_asset_id
WHERE v.policy_id = $1 ORDER BY v.number DESC LIMIT 1`, policyID).Scan(&v.ID, &v.PolicyID, &v.Number, &v.CanonicalContentHash,
		&v.CreatedAt, &v.Asset.ID, &v.Asset.RawSHA256, &v.Asset.Size, &v.Asset.MediaType, &v.Asset.BlobKey)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// VersionContent returns a version's canonical text and sections.
func (s *Store) VersionContent(ctx context.Context, versionID uuid.UUID) (string, []ingest.VersionSection, error) {
	var text string
	var raw []byte
	var sections []ingest.VersionSection
	err := s.pool.QueryRow(ctx, `SELECT canonical_text, sections FROM document_versions WHERE id = $1`, versionID).Scan(&text, &raw)
	if err != nil {
		return "", nil, notFound(err)
	}
	return text, sections, json.Unmarshal(raw, &sections)
}

// ThresholdRules returns the threshold rows that apply to the source: its own and the shared ones.
func (s *Store) ThresholdRules(ctx context.Context, sourceID uuid.UUID) ([]confidence.Rule, error) {
	rows, err := s.pool.Query(ctx, `
SELECT source_id IS NOT NULL, coalesce(change_type, ''), auto_publish::float8, review::float8
FROM confidence_thresholds WHERE source_id = $1 OR source_id IS NULL`, sourceID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (confidence.Rule, error) {
		var rule confidence.Rule
		err := r.Scan(&rule.ForSource, &rule.ChangeType, &rule.AutoPublish, &rule.Review)
		return rule, err
	})
}

// RecordVersion writes a version, its facts, evidence spans and change events, and the outbox rows of
// the published events' messages, in one transaction: a failure leaves none of them.
func (s *Store) RecordVersion(ctx context.Context, rec ingest.VersionRecord) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		v := rec.Version
		sections, _ := json.Marshal(orEmptySlice(v.Sections))
		// One batch: a version with many facts costs one round trip, not four per fact.
		b := &pgx.Batch{}
		b.Queue(`
INSERT INTO document_versions (id, policy_id, number, document_asset_id, canonical_content_hash, canonical_text, sections)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, v.ID, v.PolicyID, v.Number, v.Asset.ID, v.CanonicalContentHash, v.CanonicalText, sections)
		for _, f := range rec.Facts {
			queueFact(b, f)
		}
		if _, err := outbox.QueueAll(ctx, b, rec.Published); err != nil {
			return err
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

func queueFact(b *pgx.Batch, f ingest.Fact) {
	b.Queue(`
INSERT INTO extracted_facts (id, policy_id, version_id, previous_version_id, change_type, summary, affected_codes,
    evidence_quote, evidence_side, section, status)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		f.ID, f.PolicyID, f.VersionID, f.PreviousVersionID, f.ChangeType, f.Summary, orEmptySlice(f.AffectedCodes),
		f.EvidenceQuote, f.EvidenceSide, f.Section, f.Status)
	if e := f.Evidence; e != nil {
		b.Queue(`
INSERT INTO evidence_spans (id, fact_id, document_asset_id, raw_sha256, canonical_content_hash, source_url, section, version_id, quote, side)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			e.ID, f.ID, e.DocumentAssetID, e.RawSHA256, e.CanonicalContentHash, e.SourceURL, e.Section, e.VersionID, e.Quote, e.Side)
	}
	ev := f.Event
	components, _ := json.Marshal(ev.Components)
	b.Queue(`
INSERT INTO change_events (id, fact_id, policy_id, source_id, change_type, status, confidence, confidence_components,
    auto_publish_threshold, review_threshold, threshold_scope)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		ev.ID, f.ID, ev.PolicyID, ev.SourceID, ev.ChangeType, ev.Status, ev.Confidence, components,
		ev.AutoPublishThreshold, ev.ReviewThreshold, ev.ThresholdScope)
}

// FinishRun records a finished run with its observations, marks the policies it saw, and sets the
// source's health, in one transaction (one commit per run keeps an unchanged fetch cheap).
func (s *Store) FinishRun(ctx context.Context, run ingest.Run, observations []ingest.Observation, h ingest.HealthUpdate) error {
	res, err := json.Marshal(orEmptySlice(run.Resources))
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`
INSERT INTO discovery_runs (id, source_id, trigger, status, started_at, finished_at, error_kind, error, resources)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			run.ID, run.SourceID, run.Trigger, run.Status, run.StartedAt, run.FinishedAt, run.ErrorKind, run.Error, res)
		seen := make([]uuid.UUID, 0, len(observations))
		for _, o := range observations {
			queueObservation(b, o)
			seen = append(seen, o.PolicyID)
		}
		b.Queue(`UPDATE policies SET last_seen_at = now() WHERE id = ANY($1)`, seen)
		b.Queue(`
UPDATE sources SET health_status = $2, last_error = $3, consecutive_failures = $4, last_run_at = $5, next_run_at = $6, updated_at = now()
WHERE id = $1`, run.SourceID, h.Status, h.LastError, h.ConsecutiveFailures, run.FinishedAt, h.NextRunAt)
		return tx.SendBatch(ctx, b).Close()
	})
}
