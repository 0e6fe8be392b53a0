package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/confidence"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/store"
)

func open(t *testing.T) (*store.Store, *pgxpool.Pool) {
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	return store.New(pool), pool
}

func TestThresholdLookupUsesTheMostSpecificRow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool := open(t)
	src, err := s.CreateSource(ctx, ingest.Source{
		Organization: "Acme", Program: "P", Jurisdiction: "US", AllowedHosts: []string{"docs.example"},
		Adapter: "literal_url", AdapterConfig: map[string]any{"url": "https://docs.example/p"}, CadenceSeconds: 3600,
		TermsReviewState: "approved", Enabled: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO confidence_thresholds (source_id, change_type, auto_publish, review) VALUES ($1, 'coverage_removed', 0.99, 0.9)`, src.ID); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		source     uuid.UUID
		changeType string
		want       confidence.Thresholds
	}{
		{"source and type", src.ID, "coverage_removed", confidence.Thresholds{AutoPublish: 0.99, Review: 0.9, Scope: "source_type"}},
		{"type (seeded critical)", uuid.New(), "coverage_removed", confidence.Thresholds{AutoPublish: 0.95, Review: 0.75, Scope: "type"}},
		{"global for an ordinary type", src.ID, "criteria_changed", confidence.Thresholds{AutoPublish: 0.85, Review: 0.6, Scope: "global"}},
	}
	for _, tt := range tests {
		rules, err := s.ThresholdRules(ctx, tt.source)
		if err != nil {
			t.Fatal(err)
		}
		if got := confidence.Select(rules, tt.changeType); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
	// With every stored row gone, the global default (README "Confidence") still applies.
	if _, err := pool.Exec(ctx, `DELETE FROM confidence_thresholds`); err != nil {
		t.Fatal(err)
	}
	rules, err := s.ThresholdRules(ctx, src.ID)
	if got := confidence.Select(rules, "coverage_removed"); err != nil || got != confidence.GlobalDefault {
		t.Errorf("no rows: got %+v %v, want the global default", got, err)
	}
}

func TestPublishingWithoutEvidenceIsRefusedByTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, pool := open(t)
	// A forged AUTO_PUBLISHED row for a fact without an evidence span: the trigger refuses it even
	// though no code path would write it.
	_, err := pool.Exec(ctx, `
WITH s AS (INSERT INTO sources (id, organization, program, jurisdiction, allowed_hosts, adapter, adapter_config, cadence_seconds, terms_review_state)
           VALUES (gen_random_uuid(), 'o', 'p', 'j', '{h.example}', 'literal_url', '{}', 3600, 'approved') RETURNING id),
     p AS (INSERT INTO policies (id, source_id, url) SELECT gen_random_uuid(), id, 'https://h.example/x' FROM s RETURNING id, source_id),
     a AS (INSERT INTO document_assets (id, raw_sha256, size_bytes, media_type, blob_key)
           VALUES (gen_random_uuid(), repeat('a', 64), 1, 'text/plain', 'k') RETURNING id),
     v AS (INSERT INTO document_versions (id, policy_id, number, document_asset_id, canonical_content_hash, canonical_text, sections)
           SELECT gen_random_uuid(), p.id, 1, a.id, 'h', 't', '[]' FROM p, a RETURNING id, policy_id),
     f AS (INSERT INTO extracted_facts (id, policy_id, version_id, previous_version_id, change_type, summary, evidence_quote, evidence_side, status)
           SELECT gen_random_uuid(), v.policy_id, v.id, v.id, 'code_added', 's', 'q', 'current', 'VERIFIED' FROM v RETURNING id, policy_id)
INSERT INTO change_events (id, fact_id, policy_id, source_id, change_type, status, confidence, confidence_components,
    auto_publish_threshold, review_threshold, threshold_scope)
SELECT gen_random_uuid(), f.id, f.policy_id, s.id, 'code_added', 'AUTO_PUBLISHED', 1, '{}', 0.85, 0.6, 'global' FROM f, s`)
	if err == nil || !strings.Contains(err.Error(), "without verified evidence") {
		t.Fatalf("a published change event without evidence: got %v, want the trigger's refusal", err)
	}
}
