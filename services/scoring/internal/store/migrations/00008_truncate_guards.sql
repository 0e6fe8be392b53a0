-- +goose Up
-- request_records refuses UPDATE, and DELETE outside a retention prune, row by row; TRUNCATE fires no
-- row trigger, so it emptied the table. A statement-level BEFORE TRUNCATE trigger refuses it (also
-- through a cascade); retention prunes rows with DELETE, which its row guard lets through. The service
-- itself connects as an application role without TRUNCATE that owns no table and so cannot disable
-- it (docs/database-roles.md at the repository root).

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

CREATE TRIGGER request_records_no_truncate BEFORE TRUNCATE ON request_records
    FOR EACH STATEMENT EXECUTE FUNCTION reject_truncate_of_records();

-- +goose Down
DROP TRIGGER request_records_no_truncate ON request_records;
DROP FUNCTION reject_truncate_of_records();
