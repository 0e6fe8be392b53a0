-- +goose Up
-- Enforcement (docs/enforcement.md): an organization's policies, their immutable versions, the
-- immutable snapshots that compile a version against the registry intelligence and audits, and the
-- immutable artifacts generated from a snapshot, whose files are stored content-addressed.

-- +goose StatementBegin
-- Versions, snapshots, artifacts and files are records a gateway's decisions are traced back to: the
-- database itself refuses to change or remove them (DESIGN.md "Data"), row by row and by TRUNCATE.
CREATE FUNCTION enforcement_reject_mutation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is immutable: % rejected', TG_TABLE_NAME, TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd

CREATE TABLE enforcement_policies (
    id              uuid PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    name            text        NOT NULL CHECK (name <> ''),
    description     text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    UNIQUE (organization_id, name)
);

-- rules is the canonical JSON (RFC 8785) that rules_sha256 covers, kept as text so that it reads
-- back byte for byte (jsonb would rewrite it).
CREATE TABLE enforcement_policy_versions (
    id              uuid PRIMARY KEY,
    policy_id       uuid        NOT NULL REFERENCES enforcement_policies (id),
    organization_id uuid        NOT NULL,
    version         integer     NOT NULL CHECK (version > 0),
    rules           text        NOT NULL,
    rules_sha256    text        NOT NULL CHECK (rules_sha256 ~ '^[0-9a-f]{64}$'),
    note            text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    UNIQUE (policy_id, version)
);

-- One snapshot per (version, content): compiling a version again over unchanged intelligence finds
-- the snapshot it made before. content is the canonical JSON that content_sha256 covers.
CREATE TABLE enforcement_snapshots (
    id                uuid PRIMARY KEY,
    organization_id   uuid        NOT NULL,
    policy_id         uuid        NOT NULL REFERENCES enforcement_policies (id),
    policy_version_id uuid        NOT NULL REFERENCES enforcement_policy_versions (id),
    version           integer     NOT NULL,
    content_sha256    text        NOT NULL CHECK (content_sha256 ~ '^[0-9a-f]{64}$'),
    content           text        NOT NULL,
    servers_allowed   integer     NOT NULL,
    servers_denied    integer     NOT NULL,
    tools_allowed     integer     NOT NULL,
    tools_denied      integer     NOT NULL,
    created_at        timestamptz NOT NULL,
    UNIQUE (policy_version_id, content_sha256)
);
-- The snapshots an organization stored lately, which ENFORCEMENT_SNAPSHOTS_PER_HOUR caps.
CREATE INDEX enforcement_snapshots_recent ON enforcement_snapshots (organization_id, created_at);

-- File contents by their SHA-256: one row per distinct content, whatever artifacts share it.
CREATE TABLE enforcement_files (
    sha256     text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    content    bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- One artifact per (snapshot, format); files lists {path, media_type, sha256, size} in path order.
CREATE TABLE enforcement_artifacts (
    id              uuid PRIMARY KEY,
    organization_id uuid        NOT NULL,
    snapshot_id     uuid        NOT NULL REFERENCES enforcement_snapshots (id),
    format          text        NOT NULL,
    sha256          text        NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    files           jsonb       NOT NULL,
    created_at      timestamptz NOT NULL,
    UNIQUE (snapshot_id, format)
);

CREATE TRIGGER enforcement_policy_versions_immutable BEFORE UPDATE OR DELETE ON enforcement_policy_versions
    FOR EACH ROW EXECUTE FUNCTION enforcement_reject_mutation();
CREATE TRIGGER enforcement_policy_versions_no_truncate BEFORE TRUNCATE ON enforcement_policy_versions
    FOR EACH STATEMENT EXECUTE FUNCTION enforcement_reject_mutation();
CREATE TRIGGER enforcement_snapshots_immutable BEFORE UPDATE OR DELETE ON enforcement_snapshots
    FOR EACH ROW EXECUTE FUNCTION enforcement_reject_mutation();
CREATE TRIGGER enforcement_snapshots_no_truncate BEFORE TRUNCATE ON enforcement_snapshots
    FOR EACH STATEMENT EXECUTE FUNCTION enforcement_reject_mutation();
CREATE TRIGGER enforcement_files_immutable BEFORE UPDATE OR DELETE ON enforcement_files
    FOR EACH ROW EXECUTE FUNCTION enforcement_reject_mutation();
CREATE TRIGGER enforcement_files_no_truncate BEFORE TRUNCATE ON enforcement_files
    FOR EACH STATEMENT EXECUTE FUNCTION enforcement_reject_mutation();
CREATE TRIGGER enforcement_artifacts_immutable BEFORE UPDATE OR DELETE ON enforcement_artifacts
    FOR EACH ROW EXECUTE FUNCTION enforcement_reject_mutation();
CREATE TRIGGER enforcement_artifacts_no_truncate BEFORE TRUNCATE ON enforcement_artifacts
    FOR EACH STATEMENT EXECUTE FUNCTION enforcement_reject_mutation();

-- A compile reads the latest audits of every remote URL it meets: by URL and kind, newest first.
CREATE INDEX enforcement_audits_url ON audits (url, kind, created_at DESC);

-- +goose Down
DROP INDEX enforcement_audits_url;
DROP TABLE enforcement_artifacts, enforcement_files, enforcement_snapshots, enforcement_policy_versions, enforcement_policies;
DROP FUNCTION enforcement_reject_mutation;
