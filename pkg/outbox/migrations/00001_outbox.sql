-- +goose Up
-- An event is written here in the same transaction as the state change it reports, then relayed to
-- JetStream (README "Architecture"). seq gives the relay a cheap, ordered scan of what is pending.
CREATE TABLE outbox (
    id           uuid PRIMARY KEY,
    seq          bigint GENERATED ALWAYS AS IDENTITY,
    subject      text        NOT NULL CHECK (subject <> ''),
    payload      bytea       NOT NULL,
    headers      jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz,
    attempts     integer     NOT NULL DEFAULT 0,
    last_error   text
);

CREATE INDEX outbox_pending ON outbox (seq) WHERE published_at IS NULL;
CREATE INDEX outbox_published ON outbox (published_at) WHERE published_at IS NOT NULL;

-- +goose Down
DROP TABLE outbox;
