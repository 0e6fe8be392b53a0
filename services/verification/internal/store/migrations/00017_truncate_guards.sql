-- +goose Up
-- The immutable tables of migrations 00002-00008 refuse UPDATE and DELETE row by row; TRUNCATE fires
-- no row trigger, so it emptied them (and TRUNCATE ... CASCADE reached every one of them through its
-- foreign keys). A statement-level BEFORE TRUNCATE trigger refuses it, also when the table is reached
-- by a cascade. Tables of later migrations (00010 and after) carry their own TRUNCATE triggers.
-- The service itself connects as an application role without TRUNCATE, that owns no table and so
-- cannot disable these triggers (docs/database-roles.md at the repository root).

-- +goose StatementBegin
-- Refuses a TRUNCATE that would remove records: raised before any row goes, also when the table is
-- reached by TRUNCATE ... CASCADE. TRUNCATE takes its ACCESS EXCLUSIVE lock before this runs, so no
-- row can appear between the check and the truncation. Emptying an empty table removes nothing, so
-- it passes (a cascade from a mutable table whose immutable dependants hold no rows).
CREATE FUNCTION reject_truncate_of_records() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    found boolean;
BEGIN
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.%I)', TG_TABLE_SCHEMA, TG_TABLE_NAME) INTO found;
    IF found THEN
        RAISE EXCEPTION '% is immutable: TRUNCATE rejected', TG_TABLE_NAME USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER intel_snapshots_no_truncate BEFORE TRUNCATE ON intel_snapshots
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();
CREATE TRIGGER intel_changes_no_truncate BEFORE TRUNCATE ON intel_changes
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();
CREATE TRIGGER webhook_events_no_truncate BEFORE TRUNCATE ON webhook_events
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();
CREATE TRIGGER webhook_attempts_no_truncate BEFORE TRUNCATE ON webhook_attempts
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();
CREATE TRIGGER feed_artifacts_no_truncate BEFORE TRUNCATE ON feed_artifacts
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();
-- An audit report never changes (its row trigger refuses UPDATE); emptying the table wholesale is
-- not a retention step either.
CREATE TRIGGER audits_no_truncate BEFORE TRUNCATE ON audits
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();

-- +goose Down
DROP TRIGGER audits_no_truncate ON audits;
DROP TRIGGER feed_artifacts_no_truncate ON feed_artifacts;
DROP TRIGGER webhook_attempts_no_truncate ON webhook_attempts;
DROP TRIGGER webhook_events_no_truncate ON webhook_events;
DROP TRIGGER intel_changes_no_truncate ON intel_changes;
DROP TRIGGER intel_snapshots_no_truncate ON intel_snapshots;
DROP FUNCTION reject_truncate_of_records();
