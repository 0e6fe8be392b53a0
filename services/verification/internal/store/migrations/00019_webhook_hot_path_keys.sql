-- +goose Up
-- A change's deliveries and first attempts are written by the matcher in the transaction that records
-- the change's event, with endpoint ids its own match statement has just read, so their foreign keys
-- were only ever satisfied. Yet each one cost a lookup and a row lock per inserted row: the endpoint's
-- row (FOR KEY SHARE), which concurrent matchers of changes to the same endpoints all share, turning
-- its lock into a multixact that each of them rewrites; the event's; the delivery's for its attempt.
-- In the fan-out benchmark they were 30 lock-taking lookups per change at fan-out 10, and dropping
-- them cut the deliveries' insert from 672 to 376 us and the attempts' from 392 to 162 us a change.
-- What the keys still guarded was removal: the rows they pointed to are never removed instead. An
-- endpoint is revoked or disabled, never deleted; a delivery is the record of what was sent; events
-- refuse DELETE and TRUNCATE already (migrations 00003 and 00017). A replay's replay_of keeps its key:
-- it is checked for replays only.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_endpoint_id_fkey;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_event_id_fkey;
ALTER TABLE webhook_attempts DROP CONSTRAINT webhook_attempts_delivery_id_fkey;

-- +goose StatementBegin
-- Refuses any DELETE or TRUNCATE of the table, before a row goes: its rows are referenced by records
-- that have no foreign key to them.
CREATE FUNCTION reject_removal_of_referenced() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% rows are referenced by delivery records and are never removed: % rejected', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER webhook_endpoints_never_removed BEFORE DELETE OR TRUNCATE ON webhook_endpoints
    FOR EACH STATEMENT EXECUTE FUNCTION reject_removal_of_referenced();
CREATE TRIGGER webhook_deliveries_never_removed BEFORE DELETE OR TRUNCATE ON webhook_deliveries
    FOR EACH STATEMENT EXECUTE FUNCTION reject_removal_of_referenced();

-- +goose Down
DROP TRIGGER webhook_deliveries_never_removed ON webhook_deliveries;
DROP TRIGGER webhook_endpoints_never_removed ON webhook_endpoints;
DROP FUNCTION reject_removal_of_referenced();
ALTER TABLE webhook_attempts ADD CONSTRAINT webhook_attempts_delivery_id_fkey FOREIGN KEY (delivery_id) REFERENCES webhook_deliveries (id);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_event_id_fkey FOREIGN KEY (event_id) REFERENCES webhook_events (id);
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_endpoint_id_fkey FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints (id);
