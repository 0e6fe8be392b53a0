-- +goose Up
-- An account owns keys and is what a plan (and, later, a subscription) belongs to. A trial key gets an
-- anonymous account of its own; email is set when billing or the control plane knows one.
CREATE TABLE accounts (
    id         uuid PRIMARY KEY,
    email      text UNIQUE,
    plan       text        NOT NULL CHECK (plan IN ('trial', 'paid', 'commit', 'internal')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- API keys are stored as SHA-256 hashes with a short visible prefix (DESIGN.md "Data"); the secret is
-- shown once, at issue. A revoked key keeps its row: usage and request records still point at it.
CREATE TABLE api_keys (
    id         uuid PRIMARY KEY,
    account_id uuid        NOT NULL REFERENCES accounts (id),
    kind       text        NOT NULL CHECK (kind IN ('trial', 'issued', 'jwt')),
    name       text        NOT NULL DEFAULT '',
    key_hash   text        NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    prefix     text        NOT NULL,
    scopes     text[]      NOT NULL DEFAULT '{}',
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id, created_at);

-- +goose Down
DROP TABLE api_keys, accounts;
