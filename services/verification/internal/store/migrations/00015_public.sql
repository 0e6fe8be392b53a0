-- +goose Up
-- The public routes (docs/public.md): analytics events of the pages, claims of server listings and
-- the rate counters of the public POST routes.

-- Analytics events. No address, no user agent, no identifier of the visitor is stored: only the
-- event's name, the page's path and properties that passed the personal-data checks. The retention
-- loop deletes rows older than VERIFICATION_ANALYTICS_RETENTION and trims the table to
-- VERIFICATION_ANALYTICS_MAX_EVENTS, oldest first.
CREATE TABLE public_analytics_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text        NOT NULL CHECK (name ~ '^[a-z][a-z0-9_]{0,63}$'),
    page        text        NOT NULL CHECK (length(page) <= 200),
    properties  jsonb       NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(properties) = 'object' AND length(properties::text) <= 8192),
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX public_analytics_events_received ON public_analytics_events (received_at);

-- Fixed-window counters of the public POST routes, one row per subject (the route's scope and a
-- SHA-256 digest of the client address, or the scope's overall bound) and window. Old windows are
-- deleted by the same loop as old analytics events.
CREATE TABLE public_rate_counters (
    subject      text        NOT NULL CHECK (length(subject) <= 128),
    window_start timestamptz NOT NULL,
    hits         integer     NOT NULL CHECK (hits > 0),
    PRIMARY KEY (subject, window_start)
);
CREATE INDEX public_rate_counters_window ON public_rate_counters (window_start);

-- Claims of server listings. The claim secret and the verification token are stored as SHA-256
-- digests only: the secret authenticates POST /claim/start, the token is what the claimant publishes
-- (DNS TXT record or .well-known file) and is compared by digest in constant time. oauth_state_hash
-- is the digest of the state of a code-host sign-in in progress.
CREATE TABLE claim_intents (
    id               uuid PRIMARY KEY,
    namespace        text        NOT NULL CHECK (namespace ~ '^[a-zA-Z0-9.-]+$' AND length(namespace) <= 200),
    name             text        NOT NULL CHECK (name ~ '^[a-zA-Z0-9._-]+$' AND length(name) <= 200),
    source           text        NOT NULL CHECK (length(source) BETWEEN 1 AND 64),
    intent           text        NOT NULL DEFAULT '' CHECK (length(intent) <= 64),
    secret_hash      bytea       NOT NULL CHECK (length(secret_hash) = 32),
    token_hash       bytea       NOT NULL CHECK (length(token_hash) = 32),
    oauth_state_hash bytea UNIQUE CHECK (length(oauth_state_hash) = 32),
    oauth_started_at timestamptz,
    status           text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'verified')),
    verified_method  text CHECK (verified_method IN ('code_host', 'dns', 'http')),
    verified_subject text        NOT NULL DEFAULT '',
    verified_at      timestamptz,
    attempts         integer     NOT NULL DEFAULT 0,
    created_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL,
    CHECK ((status = 'verified') = (verified_at IS NOT NULL))
);
CREATE INDEX claim_intents_server ON claim_intents (namespace, name, created_at DESC);
CREATE INDEX claim_intents_expires ON claim_intents (expires_at) WHERE status = 'pending';

-- The coverage summary counts audits by URL within 30 days, and the changes of the last day.
CREATE INDEX audits_url_created ON audits (url, created_at DESC);
CREATE INDEX intel_changes_detected ON intel_changes (detected_at);

-- +goose Down
DROP INDEX intel_changes_detected;
DROP INDEX audits_url_created;
DROP TABLE claim_intents;
DROP TABLE public_rate_counters;
DROP TABLE public_analytics_events;
