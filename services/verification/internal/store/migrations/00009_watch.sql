-- +goose Up
-- The watch API: its own API keys, named policies, watches of a target with an evaluator, and runs.

-- Watch API keys (wk_...): a token system apart from the intelligence keys, stored as SHA-256 hashes.
CREATE TABLE watch_api_keys (
    id              uuid PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    name            text        NOT NULL,
    prefix          text        NOT NULL,
    key_hash        bytea       NOT NULL UNIQUE,
    scopes          text[]      NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz,
    revoked_at      timestamptz
);
CREATE INDEX watch_api_keys_organization ON watch_api_keys (organization_id, created_at);

-- Policies: rules (JSON) that say when a run is an alert; names are unique per organization.
CREATE TABLE watch_policies (
    id              uuid PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    name            text        NOT NULL,
    rules           jsonb       NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    UNIQUE (organization_id, name)
);

-- Watches: one target URL audited with one evaluator at an interval. At most one watch that is not
-- archived per organization, target and evaluator (watch_already_exists). A policy in use cannot be
-- deleted (watch_policy_in_use): the foreign key refuses it.
CREATE TABLE target_watches (
    id               uuid PRIMARY KEY,
    organization_id  uuid        NOT NULL REFERENCES organizations (id),
    target_url       text        NOT NULL,
    target_host      text        NOT NULL,
    evaluator        text        NOT NULL CHECK (evaluator IN ('mcp', 'readiness')),
    status           text        NOT NULL CHECK (status IN ('active', 'paused', 'archived')),
    policy_id        uuid REFERENCES watch_policies (id),
    interval_seconds integer     NOT NULL CHECK (interval_seconds > 0),
    next_run_at      timestamptz NOT NULL,
    -- lease_until marks a run in progress: the scheduler of one replica took it, and no other takes
    -- it before the lease ends.
    lease_until      timestamptz,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX target_watches_one_per_pair ON target_watches (organization_id, target_url, evaluator)
    WHERE status <> 'archived';
CREATE INDEX target_watches_due ON target_watches (next_run_at) WHERE status = 'active';
CREATE INDEX target_watches_list ON target_watches (organization_id, created_at DESC, id DESC)
    WHERE status <> 'archived';

-- Runs: one audit of a watch, its result and whether it is an alert.
CREATE TABLE target_watch_runs (
    id           uuid PRIMARY KEY,
    watch_id     uuid        NOT NULL REFERENCES target_watches (id),
    status       text        NOT NULL CHECK (status IN ('running', 'succeeded', 'failed')),
    trigger      text        NOT NULL CHECK (trigger IN ('schedule', 'manual')),
    started_at   timestamptz NOT NULL,
    finished_at  timestamptz,
    audit_id     uuid,
    verdict      text,
    score        integer,
    surface_hash text,
    surface      jsonb,
    alert        boolean     NOT NULL DEFAULT false,
    reasons      text[]      NOT NULL DEFAULT '{}',
    changes      jsonb       NOT NULL DEFAULT '[]',
    error        text        NOT NULL DEFAULT ''
);
CREATE INDEX target_watch_runs_watch ON target_watch_runs (watch_id, started_at DESC, id DESC);

-- +goose Down
DROP TABLE target_watch_runs, target_watches, watch_policies, watch_api_keys;
