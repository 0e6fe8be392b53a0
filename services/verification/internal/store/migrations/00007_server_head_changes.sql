-- +goose Up
-- Every replica caches the server heads of the server state read (internal/readcache, Heads: the
-- row of intel_servers, by namespace and name) and must drop one the moment the row changes: the
-- registry sync moves current_snapshot_id, latest_change_id, the counters and last_seen_at. These
-- triggers NOTIFY intel_servers_changed, at commit, with the server's "namespace/name" as payload
-- (neither part may hold a '/', by the table's CHECKs), for every row inserted (a 404 may be cached
-- too), updated or deleted, and with an empty payload, which means "drop everything", on TRUNCATE and
-- for a key too long for a payload (PostgreSQL's limit is 8000 bytes; real names are far shorter).
-- Row level: a sync page touches at most a page of servers, and PostgreSQL folds equal
-- notifications of one transaction into one.

-- +goose StatementBegin
CREATE FUNCTION intel_servers_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    keys text[];
    k text;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        keys := ARRAY[''];
    ELSIF TG_OP = 'INSERT' THEN
        keys := ARRAY[NEW.namespace || '/' || NEW.name];
    ELSIF TG_OP = 'DELETE' THEN
        keys := ARRAY[OLD.namespace || '/' || OLD.name];
    ELSE
        keys := ARRAY[NEW.namespace || '/' || NEW.name];
        IF OLD.namespace <> NEW.namespace OR OLD.name <> NEW.name THEN
            keys := keys || (OLD.namespace || '/' || OLD.name);
        END IF;
    END IF;
    FOREACH k IN ARRAY keys LOOP
        IF octet_length(k) > 7000 THEN
            k := '';
        END IF;
        PERFORM pg_notify('intel_servers_changed', k);
    END LOOP;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER intel_servers_changed AFTER INSERT OR UPDATE OR DELETE ON intel_servers
    FOR EACH ROW EXECUTE FUNCTION intel_servers_notify_changed();
CREATE TRIGGER intel_servers_truncated AFTER TRUNCATE ON intel_servers
    FOR EACH STATEMENT EXECUTE FUNCTION intel_servers_notify_changed();

-- +goose Down
DROP TRIGGER intel_servers_truncated ON intel_servers;
DROP TRIGGER intel_servers_changed ON intel_servers;
DROP FUNCTION intel_servers_notify_changed;
