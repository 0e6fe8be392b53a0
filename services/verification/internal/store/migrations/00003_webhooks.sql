-- +goose Up
-- Watches, webhook endpoints and deliveries (services/verification/README.md, "Webhooks").

-- The secret is a signing key the service needs in clear to compute HMACs, so it cannot be hashed like
-- an API key. It is shown once at creation, never selected by a read route, never logged; only the
-- delivery worker reads it.
CREATE TABLE webhook_endpoints (
    id                   uuid PRIMARY KEY,
    organization_id      uuid        NOT NULL REFERENCES organizations (id),
    url                  text        NOT NULL CHECK (url <> ''),
    description          text        NOT NULL DEFAULT '',
    event_types          text[]      NOT NULL,
    secret               text        NOT NULL CHECK (secret LIKE 'whsec\_%'),
    consecutive_failures integer     NOT NULL DEFAULT 0,
    disabled_at          timestamptz,
    disabled_reason      text,
    created_at           timestamptz NOT NULL DEFAULT now(),
    revoked_at           timestamptz,
    CHECK ((disabled_at IS NULL) = (disabled_reason IS NULL))
);
CREATE INDEX webhook_endpoints_organization ON webhook_endpoints (organization_id, created_at)
    WHERE revoked_at IS NULL;

-- One watch per organization and server that is not archived (the spec's watch_already_exists).
CREATE TABLE webhook_watches (
    id              uuid PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    namespace       text        NOT NULL,
    name            text        NOT NULL,
    state           text        NOT NULL CHECK (state IN ('active', 'paused', 'archived')),
    change_types    text[]      NOT NULL DEFAULT '{}',
    min_risk        text        NOT NULL CHECK (min_risk IN ('low', 'medium', 'high')),
    endpoint_ids    uuid[]      NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    archived_at     timestamptz
);
CREATE UNIQUE INDEX webhook_watches_one_per_server ON webhook_watches (organization_id, namespace, name)
    WHERE state <> 'archived';
-- The matcher looks watches up by server for every change.
CREATE INDEX webhook_watches_server ON webhook_watches (namespace, name) WHERE state = 'active';

-- Changes the matcher has handled: its idempotency key (JetStream redelivers until the ack arrives).
CREATE TABLE webhook_inbox (
    change_id   text PRIMARY KEY,
    received_at timestamptz NOT NULL DEFAULT now()
);

-- An event is what receivers see: its exact body is stored once, so that every attempt and replay of
-- it sends the same bytes under the same webhook-id.
CREATE TABLE webhook_events (
    id         uuid PRIMARY KEY,
    change_id  text        NOT NULL UNIQUE,
    type       text        NOT NULL,
    payload    bytea       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- due_at is when the scheduler must next look at a pending delivery: the retry time after a failed
-- attempt, or, once a job is enqueued, a re-enqueue deadline in case the job is lost. An event goes
-- once to an endpoint (replays aside) because webhook_inbox admits each change once, in the same
-- transaction; no unique index repeats that guarantee, since every index costs each delivery an
-- insert and each of its non-HOT updates another.
CREATE TABLE webhook_deliveries (
    id              uuid PRIMARY KEY,
    -- The endpoint's organization, copied so that reads are scoped without a join; no foreign key,
    -- whose check would lock the organization's row for every delivery inserted.
    organization_id uuid        NOT NULL,
    endpoint_id     uuid        NOT NULL REFERENCES webhook_endpoints (id),
    event_id        uuid        NOT NULL REFERENCES webhook_events (id),
    replay_of       uuid REFERENCES webhook_deliveries (id),
    status          text        NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'exhausted')),
    failure_reason  text,
    attempt_count   integer     NOT NULL DEFAULT 0,
    last_status     integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    due_at          timestamptz,
    -- lease_until is set while a worker POSTs: another copy of the job finds the delivery taken.
    lease_until     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CHECK ((status = 'pending') = (due_at IS NOT NULL))
) WITH (fillfactor = 70);
-- Free space on each page lets the claim (which sets only lease_until) be a HOT update that adds no
-- index entries.
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id DESC);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at) WHERE status = 'pending';

CREATE TABLE webhook_attempts (
    delivery_id      uuid        NOT NULL REFERENCES webhook_deliveries (id),
    attempt          integer     NOT NULL CHECK (attempt > 0),
    status_code      integer     NOT NULL,
    latency_ms       bigint      NOT NULL,
    error            text        NOT NULL DEFAULT '',
    response_excerpt text        NOT NULL DEFAULT '' CHECK (octet_length(response_excerpt) <= 1024),
    started_at       timestamptz NOT NULL,
    finished_at      timestamptz NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);

-- Events and attempts are immutable records (DESIGN.md "Data"): the database itself rejects changes.
-- +goose StatementBegin
CREATE FUNCTION webhook_reject_mutation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is immutable: % rejected', TG_TABLE_NAME, TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER webhook_events_immutable BEFORE UPDATE OR DELETE ON webhook_events
    FOR EACH ROW EXECUTE FUNCTION webhook_reject_mutation();
CREATE TRIGGER webhook_attempts_immutable BEFORE UPDATE OR DELETE ON webhook_attempts
    FOR EACH ROW EXECUTE FUNCTION webhook_reject_mutation();

-- Wakes the webhook relay (LISTEN outbox_pending) when an event is committed to the outbox, so that a
-- change reaches a receiver in milliseconds instead of after the relay's 200 ms poll. NOTIFY is sent at
-- commit and collapsed within a transaction, so a batch of rows costs one notification.
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

-- +goose Down
DROP TRIGGER outbox_notify_pending ON outbox;
DROP FUNCTION outbox_notify_pending();
DROP TABLE webhook_attempts, webhook_deliveries, webhook_events, webhook_inbox, webhook_watches, webhook_endpoints;
DROP FUNCTION webhook_reject_mutation();
