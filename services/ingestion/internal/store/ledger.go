package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
)

const eventColumns = `id, fact_id, policy_id, source_id, change_type, status, confidence::float8, confidence_components,
auto_publish_threshold::float8, review_threshold::float8, threshold_scope, created_at`

func scanEvent(row pgx.Row) (ingest.ChangeEvent, error) {
	var e ingest.ChangeEvent
	var components []byte
	err := row.Scan(&e.ID, &e.FactID, &e.PolicyID, &e.SourceID, &e.ChangeType, &e.Status, &e.Confidence, &components,
		&e.AutoPublishThreshold, &e.ReviewThreshold, &e.ThresholdScope, &e.CreatedAt)
	if err != nil {
		return e, err
	}
	return e, json.Unmarshal(components, &e.Components)
}

// ListChangeEvents pages through the ledger, newest first.
func (s *Store) ListChangeEvents(ctx context.Context, status string, p ingest.Page) ([]ingest.ChangeEvent, string, error) {
	var where []string
	var args []any
	if status != "" {
		args = append(args, status)
		where = append(where, "status = $1")
	}
	return listPage(ctx, s, `SELECT `+eventColumns+` FROM change_events`, where, args, p, scanEvent,
		func(e ingest.ChangeEvent) (time.Time, uuid.UUID) { return e.CreatedAt, e.ID })
}

// GetPolicy returns a policy with its versions and its facts, each with evidence and change event.
func (s *Store) GetPolicy(ctx context.Context, id uuid.UUID) (ingest.Policy, error) {
	var p ingest.Policy
	err := s.pool.QueryRow(ctx, `SELECT id, source_id, url, first_seen_at, last_seen_at FROM policies WHERE id = $1`, id).
		Scan(&p.ID, &p.SourceID, &p.URL, &p.FirstSeenAt, &p.LastSeenAt)
	if err != nil {
		return p, notFound(err)
	}
	rows, err := s.pool.Query(ctx, `
SELECT `+versionColumns+` FROM document_versions v JOIN document_assets a ON a.id = v.document_asset_id
WHERE v.policy_id = $1 ORDER BY v.number`, id)
	if err != nil {
		return p, err
	}
	if p.Versions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingest.Version, error) { return scanVersion(r) }); err != nil {
		return p, err
	}
	rows, err = s.pool.Query(ctx, `
SELECT f.id, f.policy_id, f.version_id, f.previous_version_id, f.change_type, f.summary, f.affected_codes,
       f.evidence_quote, f.evidence_side, f.section, f.status,
       s.id, s.document_asset_id, s.raw_sha256, s.canonical_content_hash, s.source_url, s.section, s.version_id, s.quote, s.side,
       e.id, e.fact_id, e.policy_id, e.source_id, e.change_type, e.status, e.confidence::float8, e.confidence_components,
       e.auto_publish_threshold::float8, e.review_threshold::float8, e.threshold_scope, e.created_at
FROM extracted_facts f
JOIN change_events e ON e.fact_id = f.id
LEFT JOIN evidence_spans s ON s.fact_id = f.id
WHERE f.policy_id = $1
ORDER BY f.created_at, f.id`, id)
	if err != nil {
		return p, err
	}
	p.Facts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingest.Fact, error) {
		var f ingest.Fact
		var span struct {
			ID, Asset, Version                        *uuid.UUID
			SHA, Canonical, URL, Section, Quote, Side *string
		}
		var components []byte
		e := &f.Event
		err := r.Scan(&f.ID, &f.PolicyID, &f.VersionID, &f.PreviousVersionID, &f.ChangeType, &f.Summary, &f.AffectedCodes,
			&f.EvidenceQuote, &f.EvidenceSide, &f.Section, &f.Status,
			&span.ID, &span.Asset, &span.SHA, &span.Canonical, &span.URL, &span.Section, &span.Version, &span.Quote, &span.Side,
			&e.ID, &e.FactID, &e.PolicyID, &e.SourceID, &e.ChangeType, &e.Status, &e.Confidence, &components,
			&e.AutoPublishThreshold, &e.ReviewThreshold, &e.ThresholdScope, &e.CreatedAt)
		if err != nil {
			return f, err
		}
		if span.ID != nil {
			f.Evidence = &ingest.EvidenceSpan{ID: *span.ID, DocumentAssetID: *span.Asset, RawSHA256: *span.SHA,
				CanonicalContentHash: *span.Canonical, SourceURL: *span.URL, Section: *span.Section,
				VersionID: *span.Version, Quote: *span.Quote, Side: *span.Side}
		}
		return f, json.Unmarshal(components, &e.Components)
	})
	return p, err
}
