-- +goose Up
-- Wakes every relay that LISTENs on outbox_pending when outbox rows are committed, so that an event is
-- published within milliseconds of its commit rather than at the relay's next poll. NOTIFY is sent at
-- commit (never for a transaction that rolls back) and identical notifications of one transaction are
-- collapsed, so a use case that writes many rows costs one notification. The names differ from the
-- trigger the verification service created in its own migration 00003 before the wake-up moved here.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outbox_pending', '');
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- +goose Down
DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION outbox_notify();
