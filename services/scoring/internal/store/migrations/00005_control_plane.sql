-- +goose Up
-- The control plane (v1.4.0): a workspace is an account with an e-mail, a name and, once its owner
-- set one, a password. Accounts made by identity-provider sign-in have no password yet.
-- password_hash is an argon2id PHC string (internal/controlplane/password.go).
ALTER TABLE accounts
    ADD COLUMN workspace_name text,
    ADD COLUMN password_hash  text CHECK (password_hash IS NULL OR password_hash LIKE '$argon2id$%');

-- A hidden key is one the workspace owner never sees or manages: the agent key that OAuth access
-- tokens of identity-provider sign-in stand for. An account has at most one live agent key, so that
-- two sign-ins at once cannot make two.
ALTER TABLE api_keys ADD COLUMN hidden boolean NOT NULL DEFAULT false;
CREATE UNIQUE INDEX api_keys_one_agent ON api_keys (account_id) WHERE hidden AND revoked_at IS NULL;

-- Workspace sessions: opaque random tokens stored as SHA-256 hashes, like API keys. A session ends
-- at expires_at (absolute) or when it was not used for the idle timeout (last_used_at).
CREATE TABLE workspace_sessions (
    id           uuid PRIMARY KEY,
    account_id   uuid        NOT NULL REFERENCES accounts (id),
    token_hash   text        NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX workspace_sessions_expiry ON workspace_sessions (expires_at);

-- Failed (and in-flight) sign-in attempts, one row each, per subject ("email:<address>" or
-- "ip:<address>"). Kept in PostgreSQL so that every replica counts the same attempts. A subject
-- that reached its limit records nothing more, so the rows per subject stay bounded.
CREATE TABLE auth_attempts (
    id         bigserial PRIMARY KEY,
    subject    text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX auth_attempts_subject ON auth_attempts (subject, created_at);

-- One-time setup links: the token is stored as a SHA-256 hash; the key's secret is stored only
-- encrypted under a key derived from the token (AES-256-GCM), so the table alone reveals no key.
-- Revealing clears the ciphertext: the link then answers 410.
CREATE TABLE key_setup_links (
    token_hash  text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
    key_id      uuid        NOT NULL REFERENCES api_keys (id),
    account_id  uuid        NOT NULL REFERENCES accounts (id),
    sealed      bytea,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    revealed_at timestamptz
);
CREATE INDEX key_setup_links_key ON key_setup_links (key_id);

-- +goose Down
DROP TABLE key_setup_links, auth_attempts, workspace_sessions;
DROP INDEX api_keys_one_agent;
ALTER TABLE api_keys DROP COLUMN hidden;
ALTER TABLE accounts DROP COLUMN password_hash, DROP COLUMN workspace_name;
