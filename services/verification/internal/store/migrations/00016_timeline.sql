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

-- +goose Down
DROP INDEX intel_snapshots_one_latest;
DROP TRIGGER intel_snapshots_immutable ON intel_snapshots;
DROP FUNCTION intel_snapshot_guard;
CREATE TRIGGER intel_snapshots_immutable BEFORE UPDATE OR DELETE ON intel_snapshots
    FOR EACH ROW EXECUTE FUNCTION intel_reject_mutation();
