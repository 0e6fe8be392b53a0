-- +goose Up
-- OAuth 2 clients, registered dynamically (RFC 7591) by MCP clients. They are all public clients
-- (token endpoint auth "none", PKCE S256 required), so no secret is stored.
CREATE TABLE oauth_clients (
    id             text PRIMARY KEY,
    name           text        NOT NULL DEFAULT '',
    redirect_uris  text[]      NOT NULL,
    grant_types    text[]      NOT NULL,
    response_types text[]      NOT NULL,
    scopes         text[]      NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);

-- What the authorization server (fosite) stores for an authorization code, its PKCE challenge, an
-- access token or a refresh token, so that every replica sees the same grants. signature_hash is the
-- SHA-256 of fosite's token signature (itself an HMAC of the token): neither the token nor its
-- signature is stored, so a copy of this table authenticates nothing. request_id ties together the
-- rows of one grant (a reused code or refresh token revokes them all). session holds the expiry
-- times and the grant's subject and workspace key id; form holds only the request parameters fosite
-- keeps (redirect_uri, code_challenge, code_challenge_method).
CREATE TABLE oauth_tokens (
    kind               text        NOT NULL CHECK (kind IN ('authorize_code', 'pkce', 'access_token', 'refresh_token')),
    signature_hash     text        NOT NULL CHECK (signature_hash ~ '^[0-9a-f]{64}$'),
    request_id         text        NOT NULL,
    client_id          text        NOT NULL REFERENCES oauth_clients (id) ON DELETE CASCADE,
    requested_at       timestamptz NOT NULL,
    requested_scopes   text[]      NOT NULL,
    granted_scopes     text[]      NOT NULL,
    requested_audience text[]      NOT NULL,
    granted_audience   text[]      NOT NULL,
    form               jsonb       NOT NULL,
    session            jsonb       NOT NULL,
    active             boolean     NOT NULL DEFAULT true,
    expires_at         timestamptz NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, signature_hash)
);
CREATE INDEX oauth_tokens_request ON oauth_tokens (request_id, kind);
CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at);

-- Browser sessions of the identity-provider sign-in bridge, keyed by the SHA-256 of the random value
-- in the browser's cookie. A 'login' row is one sign-in in progress (OIDC state, nonce and PKCE
-- verifier, and the authorize request to resume); it is taken once, by the callback. A 'signin' row
-- is a signed-in user (the verified e-mail) for a few minutes, long enough to finish authorizing.
CREATE TABLE oauth_browser_sessions (
    kind       text        NOT NULL CHECK (kind IN ('login', 'signin')),
    id_hash    text        NOT NULL CHECK (id_hash ~ '^[0-9a-f]{64}$'),
    nonce      text        NOT NULL DEFAULT '',
    verifier   text        NOT NULL DEFAULT '',
    return_to  text        NOT NULL DEFAULT '',
    email      text        NOT NULL DEFAULT '',
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (kind, id_hash)
);
CREATE INDEX oauth_browser_sessions_expiry ON oauth_browser_sessions (expires_at);

-- +goose Down
DROP TABLE oauth_browser_sessions, oauth_tokens, oauth_clients;
