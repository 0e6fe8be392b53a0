-- +goose Up
-- Agent reliability's billing: the processor's webhook events applied to workspaces, once each.

-- subscription_event_at is the creation time (at the processor) of the newest subscription event
-- applied to the workspace: the processor does not order its deliveries, so an older event that
-- arrives later must not undo a newer one.
ALTER TABLE reliability_workspaces ADD COLUMN subscription_event_at timestamptz;
CREATE INDEX reliability_workspaces_subscription ON reliability_workspaces (stripe_subscription_id)
    WHERE stripe_subscription_id IS NOT NULL;
CREATE INDEX reliability_workspaces_customer ON reliability_workspaces (stripe_customer_id)
    WHERE stripe_customer_id IS NOT NULL;

-- Every webhook event the service acted on, by the processor's event id: a delivery of a known id is
-- a duplicate and changes nothing. Written once, in the transaction that applied the event, with
-- what applying it did. organization_id has no foreign key: the record of a payment event outlives
-- nothing it names, and an event may name no workspace (unknown_workspace).
CREATE TABLE reliability_billing_events (
    event_id        text PRIMARY KEY,
    event_type      text        NOT NULL,
    organization_id uuid,
    outcome         text        NOT NULL,
    -- event_created_at is the event's creation time at the processor; received_at when it was applied.
    event_created_at timestamptz NOT NULL,
    received_at     timestamptz NOT NULL
);

CREATE TRIGGER reliability_billing_events_append_only BEFORE UPDATE OR DELETE ON reliability_billing_events
    FOR EACH ROW EXECUTE FUNCTION reliability_append_only();
CREATE TRIGGER reliability_billing_events_no_truncate BEFORE TRUNCATE ON reliability_billing_events
    FOR EACH STATEMENT EXECUTE FUNCTION reliability_append_only();

-- +goose Down
DROP TABLE reliability_billing_events;
DROP INDEX reliability_workspaces_customer;
DROP INDEX reliability_workspaces_subscription;
ALTER TABLE reliability_workspaces DROP COLUMN subscription_event_at;
