-- +goose Up
-- Registry intelligence (README, "Registry intelligence"): what the registry sync observed (immutable
-- snapshots), what changed between consecutive snapshots (immutable, classified changes), each server's
-- current state, and each registry's sync position.

-- +goose StatementBegin
-- Immutable records (DESIGN.md "Data"): the database itself rejects UPDATE and DELETE on them. Named for
-- this migration so that other parts of the service can keep their own.
CREATE FUNCTION intel_reject_mutation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is immutable: % rejected', TG_TABLE_NAME, TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd

-- One row per configured registry base URL: the position of its sync. The high-water mark moves only
-- when a whole poll succeeded, so a failed poll is repeated from the same point.
CREATE TABLE intel_registries (
    url                  text PRIMARY KEY,
    high_water_mark      timestamptz,
    full_sync_done_at    timestamptz,
    last_poll_at         timestamptz,
    last_success_at      timestamptz,
    consecutive_failures integer     NOT NULL DEFAULT 0,
    last_error           text        NOT NULL DEFAULT '',
    last_skipped         integer     NOT NULL DEFAULT 0,
    created_at           timestamptz NOT NULL DEFAULT now()
);

-- A server is addressed as {namespace}/{name} (the server.json name). The row is its current state:
-- mutable pointers and counters over the immutable tables below.
CREATE TABLE intel_servers (
    id                     uuid PRIMARY KEY,
    namespace              text        NOT NULL CHECK (namespace ~ '^[a-zA-Z0-9.-]+$'),
    name                   text        NOT NULL CHECK (name ~ '^[a-zA-Z0-9._-]+$'),
    current_snapshot_id    uuid,
    latest_change_id       uuid,
    change_count           bigint      NOT NULL DEFAULT 0,
    high_risk_change_count bigint      NOT NULL DEFAULT 0,
    first_seen_at          timestamptz NOT NULL DEFAULT now(),
    last_seen_at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (namespace, name)
);

-- One row per observed (server, version, status, content). previous_snapshot_id is the snapshot of the
-- same version it follows (NULL for a version's first): the unique key lets each snapshot have one
-- successor per version, so two replicas that raced past the sync lock could not both append the
-- same observation. server_json is json, not jsonb: the canonical text the content hash covers is kept
-- byte for byte, so a snapshot read back decodes exactly as it was observed (jsonb rewrites numbers).
CREATE TABLE intel_snapshots (
    id                   uuid PRIMARY KEY,
    seq                  bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    server_id            uuid        NOT NULL REFERENCES intel_servers (id),
    previous_snapshot_id uuid REFERENCES intel_snapshots (id),
    registry             text        NOT NULL,
    version              text        NOT NULL CHECK (version <> ''),
    status               text        NOT NULL CHECK (status IN ('active', 'deprecated', 'deleted')),
    status_message       text        NOT NULL DEFAULT '',
    is_latest            boolean     NOT NULL,
    content_hash         text        NOT NULL CHECK (content_hash ~ '^[0-9a-f]{64}$'),
    server_json          json        NOT NULL,
    published_at         timestamptz,
    registry_updated_at  timestamptz,
    observed_at          timestamptz NOT NULL DEFAULT now(),
    UNIQUE NULLS NOT DISTINCT (server_id, version, previous_snapshot_id)
);
-- History pages (keyset on seq, newest first) and the latest snapshot of a version (diff, dedupe).
CREATE INDEX intel_snapshots_history ON intel_snapshots (server_id, seq DESC);
CREATE INDEX intel_snapshots_version ON intel_snapshots (server_id, version, seq DESC);
CREATE TRIGGER intel_snapshots_immutable BEFORE UPDATE OR DELETE ON intel_snapshots
    FOR EACH ROW EXECUTE FUNCTION intel_reject_mutation();

ALTER TABLE intel_servers ADD FOREIGN KEY (current_snapshot_id) REFERENCES intel_snapshots (id);

-- One row per classified field change between two consecutive snapshots of a server. Namespace and
-- name are copied (they never change) so that the feeds read one table.
CREATE TABLE intel_changes (
    id               uuid PRIMARY KEY,
    seq              bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    server_id        uuid        NOT NULL REFERENCES intel_servers (id),
    namespace        text        NOT NULL,
    name             text        NOT NULL,
    from_snapshot_id uuid        NOT NULL REFERENCES intel_snapshots (id),
    to_snapshot_id   uuid        NOT NULL REFERENCES intel_snapshots (id),
    from_version     text        NOT NULL,
    to_version       text        NOT NULL,
    field            text        NOT NULL,
    old_value        text        NOT NULL,
    new_value        text        NOT NULL,
    change_type      text        NOT NULL,
    risk             text        NOT NULL CHECK (risk IN ('high', 'medium', 'low')),
    summary          text        NOT NULL,
    detected_at      timestamptz NOT NULL DEFAULT now()
);
-- One index per feed, each in keyset order (seq DESC) so that a page is an index range scan: the
-- global feed reads the unique index on seq backwards; by type, high risk, per server, per server by type.
CREATE INDEX intel_changes_type ON intel_changes (change_type, seq DESC);
CREATE INDEX intel_changes_high ON intel_changes (seq DESC) WHERE risk = 'high';
CREATE INDEX intel_changes_server ON intel_changes (server_id, seq DESC);
CREATE INDEX intel_changes_server_type ON intel_changes (server_id, change_type, seq DESC);
CREATE TRIGGER intel_changes_immutable BEFORE UPDATE OR DELETE ON intel_changes
    FOR EACH ROW EXECUTE FUNCTION intel_reject_mutation();

ALTER TABLE intel_servers ADD FOREIGN KEY (latest_change_id) REFERENCES intel_changes (id);

-- +goose Down
-- One statement, since servers, snapshots and changes reference each other.
DROP TABLE intel_changes, intel_snapshots, intel_servers, intel_registries;
DROP FUNCTION intel_reject_mutation;
