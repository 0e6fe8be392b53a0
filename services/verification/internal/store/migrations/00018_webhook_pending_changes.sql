-- +goose Up
-- The webhook matcher's queue: every intel.change event committed to the outbox is queued here by the
-- same transaction (a row trigger), and a statement trigger wakes the matchers with NOTIFY at commit.
-- The matcher takes each change from this database within milliseconds of its commit, instead of
-- after the outbox relay has published it and the broker has delivered it back; the relay still
-- publishes every change on intel.change.<risk> for other consumers. A matcher deletes the row in the
-- transaction that records the change's deliveries, so a change is matched once, by one replica. The
-- age of the oldest row (queued_at) is how far the matchers are behind.
CREATE TABLE webhook_pending_changes (
    seq       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload   bytea       NOT NULL,
    queued_at timestamptz NOT NULL DEFAULT now()
);

-- +goose StatementBegin
CREATE FUNCTION webhook_queue_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO webhook_pending_changes (payload) VALUES (NEW.payload);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER webhook_queue_change AFTER INSERT ON outbox
    FOR EACH ROW WHEN (NEW.subject LIKE 'intel.change.%') EXECUTE FUNCTION webhook_queue_change();

-- +goose StatementBegin
CREATE FUNCTION webhook_pending_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('webhook_pending_changes', '');
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER webhook_pending_notify AFTER INSERT ON webhook_pending_changes
    FOR EACH STATEMENT EXECUTE FUNCTION webhook_pending_notify();

-- Changes published before this migration and not yet matched are queued once more; the matcher's
-- inbox makes a copy of a change it has handled a no-op.
INSERT INTO webhook_pending_changes (payload)
SELECT o.payload FROM outbox o
WHERE o.subject LIKE 'intel.change.%'
  AND o.created_at > now() - interval '1 day'
ORDER BY o.seq;

-- +goose Down
DROP TRIGGER webhook_pending_notify ON webhook_pending_changes;
DROP FUNCTION webhook_pending_notify();
DROP TRIGGER webhook_queue_change ON outbox;
DROP FUNCTION webhook_queue_change();
DROP TABLE webhook_pending_changes;
