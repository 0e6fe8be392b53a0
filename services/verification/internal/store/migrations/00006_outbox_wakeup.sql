-- +goose Up
-- The outbox's own migrations now install the trigger that wakes relays (pkg/outbox 00002, same
-- channel outbox_pending), for every service; the copy migration 00003 installed would notify twice.
DROP TRIGGER IF EXISTS outbox_notify_pending ON outbox;
DROP FUNCTION IF EXISTS outbox_notify_pending();

-- +goose Down
-- +goose StatementBegin
CREATE FUNCTION outbox_notify_pending() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox_pending', '');
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER outbox_notify_pending AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify_pending();
