-- +goose Up
-- +goose StatementBegin
-- Immutable records (README "Policies, facts and the ledger"): the database itself rejects UPDATE and DELETE on them.
CREATE FUNCTION reject_mutation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is immutable: % rejected', TG_TABLE_NAME, TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd

CREATE TABLE sources (
    id                   uuid PRIMARY KEY,
    organization         text        NOT NULL,
    program              text        NOT NULL,
    jurisdiction         text        NOT NULL,
    allowed_hosts        text[]      NOT NULL,
    adapter              text        NOT NULL CHECK (adapter IN ('literal_url', 'index_page')),
    adapter_config       jsonb       NOT NULL,
    cadence_seconds      integer     NOT NULL CHECK (cadence_seconds > 0),
    terms_review_state   text        NOT NULL CHECK (terms_review_state IN ('pending', 'approved', 'rejected')),
    enabled              boolean     NOT NULL DEFAULT true,
    health_status        text        NOT NULL DEFAULT 'NEW'
                         CHECK (health_status IN ('NEW', 'HEALTHY', 'DEGRADED', 'REVIEW_REQUIRED')),
    last_error           text        NOT NULL DEFAULT '',
    consecutive_failures integer     NOT NULL DEFAULT 0,
    last_run_at          timestamptz,
    next_run_at          timestamptz NOT NULL DEFAULT now(),
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sources_due ON sources (next_run_at) WHERE enabled AND terms_review_state = 'approved';
CREATE INDEX sources_page ON sources (created_at DESC, id DESC);

CREATE TABLE discovery_runs (
    id          uuid PRIMARY KEY,
    source_id   uuid        NOT NULL REFERENCES sources (id),
    trigger     text        NOT NULL CHECK (trigger IN ('manual', 'scheduled')),
    status      text        NOT NULL CHECK (status IN ('RUNNING', 'SUCCEEDED', 'FAILED')),
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    error_kind  text        NOT NULL DEFAULT '',
    error       text        NOT NULL DEFAULT '',
    resources   jsonb       NOT NULL DEFAULT '[]'::jsonb
);
CREATE INDEX discovery_runs_source ON discovery_runs (source_id, started_at DESC);

-- A policy is one tracked document of a source, identified by its URL.
CREATE TABLE policies (
    id            uuid PRIMARY KEY,
    source_id     uuid        NOT NULL REFERENCES sources (id),
    url           text        NOT NULL,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source_id, url)
);

-- Content-addressed: the unique key on raw_sha256 is the arbiter across replicas (the blob store's
-- if-not-exists write guards only within one process for the local-directory driver).
CREATE TABLE document_assets (
    id         uuid PRIMARY KEY,
    raw_sha256 text        NOT NULL UNIQUE CHECK (raw_sha256 ~ '^[0-9a-f]{64}$'),
    size_bytes bigint      NOT NULL,
    media_type text        NOT NULL,
    blob_key   text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER document_assets_immutable BEFORE UPDATE OR DELETE ON document_assets
    FOR EACH ROW EXECUTE FUNCTION reject_mutation();

-- One row per fetch, whatever it returned.
CREATE TABLE document_observations (
    id                uuid PRIMARY KEY,
    policy_id         uuid        NOT NULL REFERENCES policies (id),
    run_id            uuid        NOT NULL REFERENCES discovery_runs (id),
    document_asset_id uuid        REFERENCES document_assets (id),
    url               text        NOT NULL,
    final_url         text        NOT NULL DEFAULT '',
    http_status       integer     NOT NULL DEFAULT 0,
    headers           jsonb       NOT NULL DEFAULT '{}'::jsonb,
    redirect_chain    jsonb       NOT NULL DEFAULT '[]'::jsonb,
    timings_ms        jsonb       NOT NULL DEFAULT '{}'::jsonb,
    attempts          integer     NOT NULL DEFAULT 0,
    size_bytes        bigint      NOT NULL DEFAULT 0,
    raw_sha256        text        NOT NULL DEFAULT '',
    media_type        text        NOT NULL DEFAULT '',
    error_kind        text        NOT NULL DEFAULT '',
    error             text        NOT NULL DEFAULT '',
    fetched_at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX document_observations_policy ON document_observations (policy_id, fetched_at DESC);
CREATE TRIGGER document_observations_immutable BEFORE UPDATE OR DELETE ON document_observations
    FOR EACH ROW EXECUTE FUNCTION reject_mutation();

CREATE TABLE document_versions (
    id                     uuid PRIMARY KEY,
    policy_id              uuid        NOT NULL REFERENCES policies (id),
    number                 integer     NOT NULL,
    document_asset_id      uuid        NOT NULL REFERENCES document_assets (id),
    canonical_content_hash text        NOT NULL,
    canonical_text         text        NOT NULL,
    sections               jsonb       NOT NULL,
    created_at             timestamptz NOT NULL DEFAULT now(),
    UNIQUE (policy_id, number)
);
CREATE TRIGGER document_versions_immutable BEFORE UPDATE OR DELETE ON document_versions
    FOR EACH ROW EXECUTE FUNCTION reject_mutation();

CREATE TABLE extracted_facts (
    id                  uuid PRIMARY KEY,
    policy_id           uuid        NOT NULL REFERENCES policies (id),
    version_id          uuid        NOT NULL REFERENCES document_versions (id),
    previous_version_id uuid        NOT NULL REFERENCES document_versions (id),
    change_type         text        NOT NULL,
    summary             text        NOT NULL,
    affected_codes      text[]      NOT NULL DEFAULT '{}',
    evidence_quote      text        NOT NULL,
    evidence_side       text        NOT NULL CHECK (evidence_side IN ('current', 'previous')),
    section             text        NOT NULL DEFAULT '',
    status              text        NOT NULL CHECK (status IN ('VERIFIED', 'NO_VERIFIABLE_EVIDENCE')),
    created_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX extracted_facts_policy ON extracted_facts (policy_id, created_at);
CREATE TRIGGER extracted_facts_immutable BEFORE UPDATE OR DELETE ON extracted_facts
    FOR EACH ROW EXECUTE FUNCTION reject_mutation();

CREATE TABLE evidence_spans (
    id                     uuid PRIMARY KEY,
    fact_id                uuid        NOT NULL UNIQUE REFERENCES extracted_facts (id),
    document_asset_id      uuid        NOT NULL REFERENCES document_assets (id),
    raw_sha256             text        NOT NULL,
    canonical_content_hash text        NOT NULL,
    source_url             text        NOT NULL,
    section                text        NOT NULL,
    version_id             uuid        NOT NULL REFERENCES document_versions (id),
    quote                  text        NOT NULL,
    side                   text        NOT NULL CHECK (side IN ('current', 'previous')),
    created_at             timestamptz NOT NULL DEFAULT now()
);
CREATE TRIGGER evidence_spans_immutable BEFORE UPDATE OR DELETE ON evidence_spans
    FOR EACH ROW EXECUTE FUNCTION reject_mutation();

-- Most specific wins: (source, type), then (NULL, type), then (NULL, NULL).
CREATE TABLE confidence_thresholds (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source_id    uuid REFERENCES sources (id),
    change_type  text,
    auto_publish numeric(4, 3) NOT NULL CHECK (auto_publish BETWEEN 0 AND 1),
    review       numeric(4, 3) NOT NULL CHECK (review BETWEEN 0 AND 1),
    CHECK (review <= auto_publish),
    CHECK (source_id IS NULL OR change_type IS NOT NULL),
    UNIQUE NULLS NOT DISTINCT (source_id, change_type)
);
INSERT INTO confidence_thresholds (source_id, change_type, auto_publish, review) VALUES
    (NULL, NULL, 0.85, 0.6),
    (NULL, 'coverage_removed', 0.95, 0.75),
    (NULL, 'prior_auth_added', 0.95, 0.75),
    (NULL, 'code_removed', 0.95, 0.75);

CREATE TABLE change_events (
    id                         uuid PRIMARY KEY,
    fact_id                    uuid          NOT NULL UNIQUE REFERENCES extracted_facts (id),
    policy_id                  uuid          NOT NULL REFERENCES policies (id),
    source_id                  uuid          NOT NULL REFERENCES sources (id),
    change_type                text          NOT NULL,
    status                     text          NOT NULL
                               CHECK (status IN ('AUTO_PUBLISHED', 'PENDING_REVIEW', 'REJECTED', 'NO_VERIFIABLE_EVIDENCE')),
    confidence                 numeric(5, 4) NOT NULL,
    confidence_components      jsonb         NOT NULL,
    auto_publish_threshold     numeric(4, 3) NOT NULL,
    review_threshold           numeric(4, 3) NOT NULL,
    threshold_scope            text          NOT NULL,
    supersedes_change_event_id uuid REFERENCES change_events (id),
    created_at                 timestamptz   NOT NULL DEFAULT now()
);
CREATE INDEX change_events_page ON change_events (created_at DESC, id DESC);
CREATE INDEX change_events_status ON change_events (status, created_at DESC, id DESC);
CREATE TRIGGER change_events_immutable BEFORE UPDATE OR DELETE ON change_events
    FOR EACH ROW EXECUTE FUNCTION reject_mutation();

-- +goose StatementBegin
-- README "Policies, facts and the ledger": a change event reaches AUTO_PUBLISHED only with verified
-- evidence. Enforced here so that no code path can publish a fact without an evidence span.
CREATE FUNCTION change_event_requires_evidence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'AUTO_PUBLISHED' AND NOT EXISTS (SELECT 1 FROM evidence_spans WHERE fact_id = NEW.fact_id) THEN
        RAISE EXCEPTION 'change event % cannot be published without verified evidence', NEW.id
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER change_events_evidence BEFORE INSERT ON change_events
    FOR EACH ROW EXECUTE FUNCTION change_event_requires_evidence();

-- +goose Down
DROP TABLE change_events, confidence_thresholds, evidence_spans, extracted_facts, document_versions,
    document_observations, document_assets, policies, discovery_runs, sources;
DROP FUNCTION change_event_requires_evidence, reject_mutation;
