-- +goose Up
CREATE TABLE organizations (
    id         uuid PRIMARY KEY,
    name       text        NOT NULL CHECK (name <> ''),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- API keys are stored as SHA-256 hashes with a short visible prefix (DESIGN.md "Data"); the secret is
-- shown once, at issue. A revoked key keeps its row for the audit trail.
CREATE TABLE api_keys (
    id              uuid PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    name            text        NOT NULL,
    key_hash        text        NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    prefix          text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    revoked_at      timestamptz
);
CREATE INDEX api_keys_organization ON api_keys (organization_id, created_at);

-- +goose Down
DROP TABLE api_keys, organizations;
