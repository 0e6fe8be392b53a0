-- +goose Up
-- Every replica caches bearer-key lookups (internal/identity) and must drop them the moment a key is
-- revoked anywhere: these triggers NOTIFY api_keys_changed, at commit, after any statement that
-- updates or deletes keys or organizations (a revocation is the only such route today; an operator's
-- hand-written UPDATE counts too). Statement-level with an empty payload: a listener drops its whole
-- cache, which refills at one indexed read per active key, and PostgreSQL folds the notifications of
-- one transaction into one.

-- +goose StatementBegin
CREATE FUNCTION api_keys_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('api_keys_changed', '');
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE OR TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION api_keys_notify_changed();
CREATE TRIGGER organizations_changed AFTER UPDATE OR DELETE OR TRUNCATE ON organizations
    FOR EACH STATEMENT EXECUTE FUNCTION api_keys_notify_changed();

-- +goose Down
DROP TRIGGER organizations_changed ON organizations;
DROP TRIGGER api_keys_changed ON api_keys;
DROP FUNCTION api_keys_notify_changed;
