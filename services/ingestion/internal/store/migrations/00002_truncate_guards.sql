-- +goose Up
-- The immutable records of 00001 refuse UPDATE and DELETE row by row; TRUNCATE fires no row trigger,
-- so it emptied them (and TRUNCATE ... CASCADE reached all of them through their foreign keys). A
-- statement-level BEFORE TRUNCATE trigger refuses it, also through a cascade. The service itself
-- connects as an application role without TRUNCATE that owns no table and so cannot disable these
-- triggers (docs/database-roles.md at the repository root).

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

CREATE TRIGGER document_assets_no_truncate BEFORE TRUNCATE ON document_assets
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();
CREATE TRIGGER document_observations_no_truncate BEFORE TRUNCATE ON document_observations
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();
CREATE TRIGGER document_versions_no_truncate BEFORE TRUNCATE ON document_versions
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();
CREATE TRIGGER extracted_facts_no_truncate BEFORE TRUNCATE ON extracted_facts
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();
CREATE TRIGGER evidence_spans_no_truncate BEFORE TRUNCATE ON evidence_spans
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();
CREATE TRIGGER change_events_no_truncate BEFORE TRUNCATE ON change_events
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();

-- +goose Down
DROP TRIGGER change_events_no_truncate ON change_events;
DROP TRIGGER evidence_spans_no_truncate ON evidence_spans;
DROP TRIGGER extracted_facts_no_truncate ON extracted_facts;
DROP TRIGGER document_versions_no_truncate ON document_versions;
DROP TRIGGER document_observations_no_truncate ON document_observations;
DROP TRIGGER document_assets_no_truncate ON document_assets;
DROP FUNCTION reject_truncate_of_records();
