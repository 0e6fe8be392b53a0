-- +goose Up
-- Agent reliability: a workspace (an organization) keeps repositories of agents; each repository has
-- targets (MCP endpoints with their evaluators); a scan of a target is a run; a run is compared with
-- the target's baseline and the repository's deployment policy decides allow, block or approval.

-- The workspace's plan and billing state; a row appears on the first write of a workspace, and a
-- missing row reads as the free plan.
CREATE TABLE reliability_workspaces (
    organization_id        uuid PRIMARY KEY REFERENCES organizations (id),
    plan                   text        NOT NULL DEFAULT 'free' CHECK (plan IN ('free', 'team', 'enterprise')),
    billing_status         text        NOT NULL DEFAULT 'none'
        CHECK (billing_status IN ('none', 'checkout_pending', 'active', 'past_due', 'canceled')),
    stripe_customer_id     text,
    stripe_subscription_id text,
    current_period_start   timestamptz,
    current_period_end     timestamptz,
    updated_at             timestamptz NOT NULL DEFAULT now()
);

-- Code-host installations linked to a workspace; an installation belongs to one workspace.
CREATE TABLE reliability_installations (
    id              uuid PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    installation_id bigint      NOT NULL UNIQUE,
    account_login   text        NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);

CREATE TABLE reliability_repositories (
    id              uuid PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    -- full_name is owner/name as the code host spells it; unique per workspace.
    full_name       text        NOT NULL,
    provider        text        NOT NULL CHECK (provider IN ('manual', 'code-host')),
    external_id     text,
    installation_id uuid REFERENCES reliability_installations (id) ON DELETE SET NULL,
    default_branch  text        NOT NULL DEFAULT 'main',
    description     text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    UNIQUE (organization_id, full_name)
);
CREATE INDEX reliability_repositories_list ON reliability_repositories (organization_id, created_at, id);

CREATE TABLE reliability_targets (
    id              uuid PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    repository_id   uuid        NOT NULL REFERENCES reliability_repositories (id) ON DELETE CASCADE,
    name            text        NOT NULL,
    url             text        NOT NULL,
    evaluators      text[]      NOT NULL CHECK (cardinality(evaluators) > 0 AND evaluators <@ ARRAY['mcp', 'readiness']),
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    UNIQUE (repository_id, name)
);
CREATE INDEX reliability_targets_list ON reliability_targets (repository_id, created_at, id);
CREATE INDEX reliability_targets_organization ON reliability_targets (organization_id);

-- A target's schedule: an interval or a cron expression; next_due_at is when enqueue-due next takes it.
CREATE TABLE reliability_schedules (
    target_id        uuid PRIMARY KEY REFERENCES reliability_targets (id) ON DELETE CASCADE,
    organization_id  uuid        NOT NULL REFERENCES organizations (id),
    interval_seconds integer CHECK (interval_seconds > 0),
    cron             text,
    timezone         text        NOT NULL DEFAULT 'UTC',
    enabled          boolean     NOT NULL,
    next_due_at      timestamptz,
    last_enqueued_at timestamptz,
    updated_at       timestamptz NOT NULL,
    CHECK ((interval_seconds IS NULL) <> (cron IS NULL))
);
CREATE INDEX reliability_schedules_due ON reliability_schedules (next_due_at) WHERE enabled;

-- A repository's deployment policy (reliability.Policy as JSON); a missing row is the default policy.
CREATE TABLE reliability_deployment_policies (
    repository_id   uuid PRIMARY KEY REFERENCES reliability_repositories (id) ON DELETE CASCADE,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    policy          jsonb       NOT NULL,
    revision        integer     NOT NULL,
    updated_by      text        NOT NULL,
    updated_at      timestamptz NOT NULL
);

-- Runs: one scan of one target. At most one run of a target is queued or running at a time (a scan
-- asked for meanwhile joins it), and a due time of a schedule enqueues at most one run.
CREATE TABLE reliability_runs (
    id               uuid PRIMARY KEY,
    organization_id  uuid        NOT NULL REFERENCES organizations (id),
    repository_id    uuid        NOT NULL REFERENCES reliability_repositories (id) ON DELETE CASCADE,
    target_id        uuid        NOT NULL REFERENCES reliability_targets (id) ON DELETE CASCADE,
    state            text        NOT NULL CHECK (state IN
        ('queued', 'running', 'succeeded', 'failed', 'needs_approval', 'approved', 'blocked')),
    trigger          text        NOT NULL CHECK (trigger IN ('manual', 'ci', 'schedule')),
    scheduled_for    timestamptz,
    commit_sha       text,
    ref              text,
    requested_by     text        NOT NULL DEFAULT '',
    -- failure_reason says why a failed run failed (a stable code and a safe message).
    failure_code     text,
    failure_message  text,
    -- The audits the run made (internal/audits), by evaluator.
    conformance_audit_id uuid,
    readiness_audit_id   uuid,
    -- summary is what diffs read: verdict, score, check statuses and the tool surface's digest.
    summary          jsonb,
    baseline_run_id  uuid REFERENCES reliability_runs (id) ON DELETE SET NULL,
    diff             jsonb,
    decision         text CHECK (decision IN ('allow', 'block', 'needs_approval')),
    decision_reasons jsonb,
    attempts         integer     NOT NULL DEFAULT 0,
    lease_owner      text,
    lease_until      timestamptz,
    created_at       timestamptz NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    updated_at       timestamptz NOT NULL
);
CREATE UNIQUE INDEX reliability_runs_one_in_flight ON reliability_runs (target_id)
    WHERE state IN ('queued', 'running');
CREATE UNIQUE INDEX reliability_runs_one_per_due_time ON reliability_runs (target_id, scheduled_for)
    WHERE scheduled_for IS NOT NULL;
CREATE INDEX reliability_runs_list ON reliability_runs (organization_id, created_at DESC, id DESC);
CREATE INDEX reliability_runs_target ON reliability_runs (target_id, created_at DESC);
CREATE INDEX reliability_runs_claimable ON reliability_runs (created_at) WHERE state IN ('queued', 'running');

-- The append-only trails: who approved a held run and why; every promotion and rollback of a
-- target's baseline (the current baseline is the newest row of a target).
CREATE TABLE reliability_run_approvals (
    id              uuid PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    run_id          uuid        NOT NULL REFERENCES reliability_runs (id) ON DELETE CASCADE,
    approved_by     text        NOT NULL,
    reason          text        NOT NULL,
    created_at      timestamptz NOT NULL
);
CREATE INDEX reliability_run_approvals_run ON reliability_run_approvals (run_id, created_at);

CREATE TABLE reliability_baselines (
    id                   uuid PRIMARY KEY,
    organization_id      uuid        NOT NULL REFERENCES organizations (id),
    target_id            uuid        NOT NULL REFERENCES reliability_targets (id) ON DELETE CASCADE,
    run_id               uuid        NOT NULL REFERENCES reliability_runs (id) ON DELETE CASCADE,
    action               text        NOT NULL CHECK (action IN ('promote', 'rollback')),
    previous_baseline_id uuid REFERENCES reliability_baselines (id) ON DELETE CASCADE,
    actor                text        NOT NULL,
    reason               text        NOT NULL DEFAULT '',
    created_at           timestamptz NOT NULL
);
CREATE INDEX reliability_baselines_target ON reliability_baselines (target_id, created_at DESC, id DESC);

-- Evidence of a finished run: the JSON document and its SHA-256, written once.
CREATE TABLE reliability_run_evidence (
    run_id          uuid PRIMARY KEY REFERENCES reliability_runs (id) ON DELETE CASCADE,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    document        jsonb       NOT NULL,
    sha256          text        NOT NULL,
    created_at      timestamptz NOT NULL
);

-- The trails and the evidence refuse UPDATE and TRUNCATE always, and DELETE except inside a purge
-- (deleting a repository or the workspace), which sets reliability.purge for its own transaction.
-- +goose StatementBegin
CREATE FUNCTION reliability_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('reliability.purge', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER reliability_run_approvals_append_only BEFORE UPDATE OR DELETE ON reliability_run_approvals
    FOR EACH ROW EXECUTE FUNCTION reliability_append_only();
CREATE TRIGGER reliability_baselines_append_only BEFORE UPDATE OR DELETE ON reliability_baselines
    FOR EACH ROW EXECUTE FUNCTION reliability_append_only();
CREATE TRIGGER reliability_run_evidence_append_only BEFORE UPDATE OR DELETE ON reliability_run_evidence
    FOR EACH ROW EXECUTE FUNCTION reliability_append_only();
CREATE TRIGGER reliability_run_approvals_no_truncate BEFORE TRUNCATE ON reliability_run_approvals
    FOR EACH STATEMENT EXECUTE FUNCTION reliability_append_only();
CREATE TRIGGER reliability_baselines_no_truncate BEFORE TRUNCATE ON reliability_baselines
    FOR EACH STATEMENT EXECUTE FUNCTION reliability_append_only();
CREATE TRIGGER reliability_run_evidence_no_truncate BEFORE TRUNCATE ON reliability_run_evidence
    FOR EACH STATEMENT EXECUTE FUNCTION reliability_append_only();

-- +goose Down
DROP TABLE reliability_run_evidence;
DROP TABLE reliability_baselines;
DROP TABLE reliability_run_approvals;
DROP TABLE reliability_runs;
DROP TABLE reliability_deployment_policies;
DROP TABLE reliability_schedules;
DROP TABLE reliability_targets;
DROP TABLE reliability_repositories;
DROP TABLE reliability_installations;
DROP TABLE reliability_workspaces;
DROP FUNCTION reliability_append_only();
