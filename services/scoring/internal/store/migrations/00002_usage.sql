-- +goose Up
-- Billable scoring calls per key and calendar month (UTC). The meter adds its batched deltas; a row
-- is never read-modify-written by the application, so replicas only ever add.
CREATE TABLE usage_counters (
    key_id     uuid        NOT NULL REFERENCES api_keys (id),
    period     text        NOT NULL CHECK (period ~ '^[0-9]{4}-[0-9]{2}$'),
    calls      bigint      NOT NULL CHECK (calls >= 0),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key_id, period)
);

-- The batches already applied, so that a batch retried after an error that hid its commit (the
-- connection dropped after COMMIT was sent) is not counted twice. A retry follows its failure within
-- a process's life, so ids older than a week are pruned as batches are written.
CREATE TABLE usage_batches (
    id         uuid PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX usage_batches_applied_at ON usage_batches (applied_at);

-- One row per scoring response, the key of feedback (spec v1.2.0 "durable request-id validation").
-- account_id has no foreign key: the account is the key's, copied so feedback checks ownership
-- without a join.
CREATE TABLE request_records (
    request_id    text PRIMARY KEY,
    key_id        uuid        NOT NULL REFERENCES api_keys (id),
    account_id    uuid        NOT NULL,
    endpoint      text        NOT NULL CHECK (endpoint IN ('denial', 'prior_auth', 'reimbursement')),
    route_id      text        NOT NULL,
    model_version text        NOT NULL,
    scored_at     timestamptz NOT NULL
);
-- Feedback accepts request ids within a retention window; expiry and pruning go by scored_at.
CREATE INDEX request_records_scored_at ON request_records (scored_at);

-- +goose StatementBegin
-- Request records are immutable: UPDATE is always rejected, and DELETE only passes in a transaction
-- that declared itself a retention prune (SET LOCAL scoring.request_records_prune = 'on', which only
-- Store.PruneRequestRecords does), so that no stray statement removes a record feedback relies on.
CREATE FUNCTION request_records_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('scoring.request_records_prune', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is immutable: % rejected', TG_TABLE_NAME, TG_OP USING ERRCODE = 'integrity_constraint_violation';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER request_records_immutable BEFORE UPDATE OR DELETE ON request_records
    FOR EACH ROW EXECUTE FUNCTION request_records_guard();

-- +goose Down
DROP TABLE request_records, usage_batches, usage_counters;
DROP FUNCTION request_records_guard();
