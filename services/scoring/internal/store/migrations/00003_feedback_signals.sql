-- +goose Up
-- Feedback carries no PHI: notes are checked for PHI-like patterns before they get here, and nothing
-- of the claim is copied. One request may get several feedback records (a corrected outcome later).
CREATE TABLE feedback (
    id                  uuid PRIMARY KEY,
    request_id          text        NOT NULL REFERENCES request_records (request_id),
    key_id              uuid        NOT NULL REFERENCES api_keys (id),
    endpoint            text        NOT NULL,
    observed_outcome    text        NOT NULL,
    expected_outcome    text        NOT NULL,
    confidence_mismatch boolean     NOT NULL,
    notes               text        NOT NULL DEFAULT '',
    received_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX feedback_request ON feedback (request_id);

-- payer_organizations maps a caller's payer id to the organization name the ingestion service's
-- sources publish policies under (an admin maintains it).
CREATE TABLE payer_organizations (
    payer_id     bigint PRIMARY KEY CHECK (payer_id > 0),
    organization text        NOT NULL CHECK (organization <> ''),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- policy_signals are consumed policy.change.* events, keyed by the ingestion change-event id so that a
-- redelivered message is a no-op.
CREATE TABLE policy_signals (
    change_event_id text PRIMARY KEY,
    organization    text        NOT NULL,
    change_type     text        NOT NULL,
    affected_codes  text[]      NOT NULL DEFAULT '{}',
    summary         text        NOT NULL DEFAULT '',
    policy_url      text        NOT NULL DEFAULT '',
    confidence      double precision NOT NULL DEFAULT 0,
    published_at    timestamptz NOT NULL,
    received_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX policy_signals_organization ON policy_signals (organization, published_at DESC);

-- +goose Down
DROP TABLE policy_signals, payer_organizations, feedback;
