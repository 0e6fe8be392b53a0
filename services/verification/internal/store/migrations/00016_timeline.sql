-- +goose Up
-- One latest snapshot per server. is_latest is true for exactly the server's current snapshot: the
-- sync clears it on the snapshot a new current one replaces, in the same transaction. That flag is
-- the one thing about a snapshot that may change, and only from true to false; the rest of the row
-- stays immutable (DESIGN.md "Data").

-- Existing rows: before this migration a superseded snapshot kept the flag the registry gave it.
DROP TRIGGER intel_snapshots_immutable ON intel_snapshots;
UPDATE intel_snapshots x SET is_latest = EXISTS (SELECT 1 FROM intel_servers s WHERE s.current_snapshot_id = x.id)
WHERE x.is_latest IS DISTINCT FROM EXISTS (SELECT 1 FROM intel_servers s WHERE s.current_snapshot_id = x.id);

-- +goose StatementBegin
CREATE FUNCTION intel_snapshot_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.is_latest AND NOT NEW.is_latest
       AND (to_jsonb(NEW) - 'is_latest') = (to_jsonb(OLD) - 'is_latest') THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'intel_snapshots is immutable except for clearing is_latest: % rejected', TG_OP
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER intel_snapshots_immutable BEFORE UPDATE OR DELETE ON intel_snapshots
    FOR EACH ROW EXECUTE FUNCTION intel_snapshot_guard();
CREATE UNIQUE INDEX intel_snapshots_one_latest ON intel_snapshots (server_id) WHERE is_latest;

-- The joined timeline: live tool surfaces of servers' remote URLs, as audits (the audit routes, watch
-- runs, reliability scans, the remote sweep) observed them. One row per URL and distinct surface:
-- an audit that sees the surface the URL's newest row holds writes nothing. previous_id is the URL's
-- row this one follows (NULL for its first); the unique key lets each row have one successor, as
-- intel_snapshots does. surface is the digest (hashes, counts); listing the tools, prompts and
-- resources themselves (as redacted as the audit report), which the typed diff reads.
CREATE TABLE intel_surface_observations (
    id           uuid PRIMARY KEY,
    seq          bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    url          text        NOT NULL,
    previous_id  uuid REFERENCES intel_surface_observations (id),
    surface_hash text        NOT NULL CHECK (surface_hash ~ '^[0-9a-f]{64}$'),
    surface      jsonb       NOT NULL,
    listing      jsonb       NOT NULL,
    audit_id     uuid        NOT NULL,
    observed_at  timestamptz NOT NULL,
    UNIQUE NULLS NOT DISTINCT (url, previous_id)
);
CREATE INDEX intel_surface_observations_url ON intel_surface_observations (url, observed_at DESC, seq DESC);
-- +goose StatementBegin
CREATE FUNCTION intel_surface_reject_mutation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'intel_surface_observations is immutable: % rejected', TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER intel_surface_observations_immutable BEFORE UPDATE OR DELETE ON intel_surface_observations
    FOR EACH ROW EXECUTE FUNCTION intel_surface_reject_mutation();
CREATE TRIGGER intel_surface_observations_no_truncate BEFORE TRUNCATE ON intel_surface_observations
    FOR EACH STATEMENT EXECUTE FUNCTION intel_surface_reject_mutation();

-- A tool-surface change is a change row like a listing change: from_snapshot_id and to_snapshot_id
-- are then both the server's current snapshot, and these name the remote and the two observations.
-- Adding nullable columns rewrites no row.
ALTER TABLE intel_changes
    ADD COLUMN remote_url text,
    ADD COLUMN from_observation_id uuid REFERENCES intel_surface_observations (id),
    ADD COLUMN to_observation_id uuid REFERENCES intel_surface_observations (id);

-- Which servers list a remote URL (an audit's target): containment on the remotes array.
CREATE INDEX intel_snapshots_remotes ON intel_snapshots USING gin ((server_json::jsonb -> 'remotes') jsonb_path_ops);
-- The timeline's keyset, (observed_at, seq) newest first, per server.
CREATE INDEX intel_snapshots_timeline ON intel_snapshots (server_id, observed_at DESC, seq DESC);

-- The remote sweep: one row per listed remote URL and when it is next due. A replica claims due rows
-- by moving next_due_at forward (FOR UPDATE SKIP LOCKED), so each due time is audited once across
-- replicas.
CREATE TABLE intel_remote_sweeps (
    url          text PRIMARY KEY,
    next_due_at  timestamptz NOT NULL DEFAULT now(),
    last_run_at  timestamptz,
    last_error   text        NOT NULL DEFAULT ''
);
CREATE INDEX intel_remote_sweeps_due ON intel_remote_sweeps (next_due_at);

-- +goose Down
DROP TABLE intel_remote_sweeps;
DROP INDEX intel_snapshots_timeline;
DROP INDEX intel_snapshots_remotes;
ALTER TABLE intel_changes DROP COLUMN remote_url, DROP COLUMN from_observation_id, DROP COLUMN to_observation_id;
DROP TABLE intel_surface_observations;
DROP FUNCTION intel_surface_reject_mutation;
DROP INDEX intel_snapshots_one_latest;
DROP TRIGGER intel_snapshots_immutable ON intel_snapshots;
DROP FUNCTION intel_snapshot_guard;
CREATE TRIGGER intel_snapshots_immutable BEFORE UPDATE OR DELETE ON intel_snapshots
    FOR EACH ROW EXECUTE FUNCTION intel_reject_mutation();
