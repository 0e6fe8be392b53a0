package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/workspace"
)

// ReliabilityWorkspace implements workspace.Store on a pgx pool: agent reliability's repositories,
// targets, schedules, deployment policies, installations and deletions. Migration 00010 holds
// their tables.
type ReliabilityWorkspace struct {
	pool *pgxpool.Pool
}

var _ workspace.Store = (*ReliabilityWorkspace)(nil)

// NewReliabilityWorkspace returns agent reliability's workspace store.
func NewReliabilityWorkspace(pool *pgxpool.Pool) *ReliabilityWorkspace {
	return &ReliabilityWorkspace{pool: pool}
}

// purge lets the transaction delete rows of the append-only trails (approvals, baselines,
// evidence): their triggers refuse a DELETE unless reliability.purge is on, and SET LOCAL keeps it
// to this transaction.
func purge(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SET LOCAL reliability.purge = 'on'`)
	return err
}

// repositoryColumns reads a repository with its installation's code-host id and its target count.
const repositoryColumns = `r.id, r.organization_id, r.full_name, r.provider, coalesce(r.external_id, ''),
coalesce(i.installation_id, 0), r.default_branch, r.description,
(SELECT count(*) FROM reliability_targets t WHERE t.repository_id = r.id), r.created_at, r.updated_at`

const repositoryFrom = ` FROM reliability_repositories r LEFT JOIN reliability_installations i ON i.id = r.installation_id `

func scanRepository(row pgx.Row) (workspace.Repository, error) {
	var r workspace.Repository
	err := row.Scan(&r.ID, &r.OrganizationID, &r.FullName, &r.Provider, &r.ExternalID, &r.InstallationID,
		&r.DefaultBranch, &r.Description, &r.TargetCount, &r.CreatedAt, &r.UpdatedAt)
	return r, err
}

// repositoryNameTaken turns the violation of the unique full name into its error.
func repositoryNameTaken(err error) error {
	if code, constraint := sqlState(err); code == sqlstateUnique && constraint == "reliability_repositories_organization_id_full_name_key" {
		return workspace.ErrRepositoryExists
	}
	return err
}

// lockWorkspace serialises the transactions that check a workspace's caps (repositories,
// targets): without it, two creations could both see one slot left. A transaction-scoped advisory
// lock, so that no row has to exist for the workspace.
func lockWorkspace(ctx context.Context, tx pgx.Tx, org uuid.UUID) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('reliability.workspace:' || $1::text, 0))`, org)
	return err
}

// ListRepositories lists the organization's repositories, oldest first.
func (s *ReliabilityWorkspace) ListRepositories(ctx context.Context, org uuid.UUID) ([]workspace.Repository, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+repositoryColumns+repositoryFrom+`
WHERE r.organization_id = $1 ORDER BY r.created_at, r.id LIMIT $2`, org, workspace.MaxRepositories)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (workspace.Repository, error) { return scanRepository(r) })
}

// CreateRepository stores r within the workspace's cap.
func (s *ReliabilityWorkspace) CreateRepository(ctx context.Context, r workspace.Repository) (workspace.Repository, error) {
	var out workspace.Repository
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockWorkspace(ctx, tx, r.OrganizationID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM reliability_repositories WHERE organization_id = $1`, r.OrganizationID).Scan(&n); err != nil {
			return err
		}
		if n >= workspace.MaxRepositories {
			return &workspace.LimitError{Err: workspace.ErrRepositoryLimit, Limit: workspace.MaxRepositories}
		}
		if _, err := tx.Exec(ctx, `
INSERT INTO reliability_repositories (id, organization_id, full_name, provider, default_branch, description, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, r.ID, r.OrganizationID, r.FullName, r.Provider, r.DefaultBranch, r.Description,
			r.CreatedAt, r.UpdatedAt); err != nil {
			return repositoryNameTaken(err)
		}
		var err error
		out, err = scanRepository(tx.QueryRow(ctx, `SELECT `+repositoryColumns+repositoryFrom+`WHERE r.id = $1`, r.ID))
		return err
	})
	return out, err
}

// GetRepository returns a repository of the organization.
func (s *ReliabilityWorkspace) GetRepository(ctx context.Context, org, id uuid.UUID) (workspace.Repository, error) {
	r, err := scanRepository(s.pool.QueryRow(ctx, `SELECT `+repositoryColumns+repositoryFrom+`
WHERE r.id = $1 AND r.organization_id = $2`, id, org))
	return r, noRows(err, fault.ErrNotFound)
}

// UpdateRepository applies c to a repository of the organization.
func (s *ReliabilityWorkspace) UpdateRepository(ctx context.Context, org, id uuid.UUID, c workspace.RepositoryChange) (workspace.Repository, error) {
	var out workspace.Repository
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var provider, name string
		if err := tx.QueryRow(ctx, `SELECT provider, full_name FROM reliability_repositories WHERE id = $1 AND organization_id = $2 FOR UPDATE`,
			id, org).Scan(&provider, &name); err != nil {
			return noRows(err, fault.ErrNotFound)
		}
		if c.FullName != nil && *c.FullName != name && provider == workspace.ProviderCodeHost {
			return workspace.ErrCodeHostRepository
		}
		if _, err := tx.Exec(ctx, `
UPDATE reliability_repositories SET full_name = coalesce($2, full_name), default_branch = coalesce($3, default_branch),
    description = coalesce($4, description), updated_at = $5
WHERE id = $1`, id, c.FullName, c.DefaultBranch, c.Description, c.At); err != nil {
			return repositoryNameTaken(err)
		}
		var err error
		out, err = scanRepository(tx.QueryRow(ctx, `SELECT `+repositoryColumns+repositoryFrom+`WHERE r.id = $1`, id))
		return err
	})
	return out, err
}

// DeleteRepository deletes a repository; its targets, schedules, policy, runs, approvals,
// baselines and evidence go with it through the foreign keys' cascades, in this one transaction.
func (s *ReliabilityWorkspace) DeleteRepository(ctx context.Context, org, id uuid.UUID) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := purge(ctx, tx); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM reliability_repositories WHERE id = $1 AND organization_id = $2`, id, org)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.ErrNotFound
		}
		return nil
	})
}

const targetColumns = `id, organization_id, repository_id, name, url, evaluators, created_at, updated_at`

func scanTarget(row pgx.Row) (workspace.Target, error) {
	var t workspace.Target
	err := row.Scan(&t.ID, &t.OrganizationID, &t.RepositoryID, &t.Name, &t.URL, &t.Evaluators, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

func targetNameTaken(err error) error {
	if code, constraint := sqlState(err); code == sqlstateUnique && constraint == "reliability_targets_repository_id_name_key" {
		return workspace.ErrTargetExists
	}
	return err
}

// ListTargets lists a repository's targets, oldest first; fault.ErrNotFound for an unknown repository.
func (s *ReliabilityWorkspace) ListTargets(ctx context.Context, org, repositoryID uuid.UUID) ([]workspace.Target, error) {
	var out []workspace.Target
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var found uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT id FROM reliability_repositories WHERE id = $1 AND organization_id = $2`,
			repositoryID, org).Scan(&found); err != nil {
			return noRows(err, fault.ErrNotFound)
		}
		rows, err := tx.Query(ctx, `SELECT `+targetColumns+` FROM reliability_targets WHERE repository_id = $1
ORDER BY created_at, id LIMIT $2`, repositoryID, workspace.MaxTargetsPerRepository)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (workspace.Target, error) { return scanTarget(r) })
		return err
	})
	return out, err
}

// CreateTarget stores t within the repository's cap and the workspace plan's.
func (s *ReliabilityWorkspace) CreateTarget(ctx context.Context, t workspace.Target, planTargets func(plan string) int) (workspace.Target, error) {
	var out workspace.Target
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockWorkspace(ctx, tx, t.OrganizationID); err != nil {
			return err
		}
		var found uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT id FROM reliability_repositories WHERE id = $1 AND organization_id = $2 FOR KEY SHARE`,
			t.RepositoryID, t.OrganizationID).Scan(&found); err != nil {
			return noRows(err, fault.ErrNotFound)
		}
		var plan string
		var inWorkspace, inRepository int
		if err := tx.QueryRow(ctx, `SELECT
    coalesce((SELECT plan FROM reliability_workspaces WHERE organization_id = $1), 'free'),
    (SELECT count(*) FROM reliability_targets WHERE organization_id = $1),
    (SELECT count(*) FROM reliability_targets WHERE repository_id = $2)`, t.OrganizationID, t.RepositoryID).Scan(&plan, &inWorkspace, &inRepository); err != nil {
			return err
		}
		if limit := planTargets(plan); limit > 0 && inWorkspace >= limit {
			return &workspace.PlanLimitError{Plan: plan, Limit: limit}
		}
		if inRepository >= workspace.MaxTargetsPerRepository {
			return &workspace.LimitError{Err: workspace.ErrTargetLimit, Limit: workspace.MaxTargetsPerRepository}
		}
		var err error
		out, err = scanTarget(tx.QueryRow(ctx, `
INSERT INTO reliability_targets (id, organization_id, repository_id, name, url, evaluators, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+targetColumns,
			t.ID, t.OrganizationID, t.RepositoryID, t.Name, t.URL, t.Evaluators, t.CreatedAt, t.UpdatedAt))
		return targetNameTaken(err)
	})
	return out, err
}

// GetTarget returns a target of the organization's repository.
func (s *ReliabilityWorkspace) GetTarget(ctx context.Context, org, repositoryID, id uuid.UUID) (workspace.Target, error) {
	t, err := scanTarget(s.pool.QueryRow(ctx, `SELECT `+targetColumns+` FROM reliability_targets
WHERE id = $1 AND repository_id = $2 AND organization_id = $3`, id, repositoryID, org))
	return t, noRows(err, fault.ErrNotFound)
}

// UpdateTarget applies c to a target of the organization's repository.
func (s *ReliabilityWorkspace) UpdateTarget(ctx context.Context, org, repositoryID, id uuid.UUID, c workspace.TargetChange) (workspace.Target, error) {
	var evaluators []string
	if len(c.Evaluators) > 0 {
		evaluators = c.Evaluators
	}
	t, err := scanTarget(s.pool.QueryRow(ctx, `
UPDATE reliability_targets SET name = coalesce($4, name), url = coalesce($5, url),
    evaluators = coalesce($6, evaluators), updated_at = $7
WHERE id = $1 AND repository_id = $2 AND organization_id = $3 RETURNING `+targetColumns,
		id, repositoryID, org, c.Name, c.URL, evaluators, c.At))
	if errors.Is(err, pgx.ErrNoRows) {
		return workspace.Target{}, fault.ErrNotFound
	}
	return t, targetNameTaken(err)
}

// DeleteTarget deletes a target; its schedule, runs and their trails go with it in this transaction.
func (s *ReliabilityWorkspace) DeleteTarget(ctx context.Context, org, repositoryID, id uuid.UUID) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := purge(ctx, tx); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM reliability_targets WHERE id = $1 AND repository_id = $2 AND organization_id = $3`,
			id, repositoryID, org)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.ErrNotFound
		}
		return nil
	})
}

// GetSchedule returns a target's schedule, or an unconfigured one.
func (s *ReliabilityWorkspace) GetSchedule(ctx context.Context, org, repositoryID, targetID uuid.UUID) (workspace.Schedule, error) {
	var sc workspace.Schedule
	var configured bool
	var interval *int32
	var cron, zone *string
	var enabled *bool
	var updated *time.Time
	err := s.pool.QueryRow(ctx, `
SELECT t.updated_at, s.target_id IS NOT NULL, s.enabled, s.interval_seconds, s.cron, s.timezone, s.next_due_at, s.last_enqueued_at, s.updated_at
FROM reliability_targets t LEFT JOIN reliability_schedules s ON s.target_id = t.id
WHERE t.id = $1 AND t.repository_id = $2 AND t.organization_id = $3`, targetID, repositoryID, org).Scan(
		&sc.UpdatedAt, &configured, &enabled, &interval, &cron, &zone, &sc.NextDueAt, &sc.LastEnqueuedAt, &updated)
	if err != nil {
		return workspace.Schedule{}, noRows(err, fault.ErrNotFound)
	}
	sc.TargetID, sc.Configured, sc.Timezone = targetID, configured, "UTC"
	if configured {
		sc.Enabled, sc.UpdatedAt = *enabled, *updated
		if interval != nil {
			sc.IntervalSeconds = int(*interval)
		}
		if cron != nil {
			sc.Cron = *cron
		}
		sc.Timezone = *zone
	}
	return sc, nil
}

// PutSchedule stores a target's schedule; a schedule that changes forgets nothing of its past
// but its due time (last_enqueued_at stays).
func (s *ReliabilityWorkspace) PutSchedule(ctx context.Context, org, repositoryID uuid.UUID, sc workspace.Schedule) (workspace.Schedule, error) {
	var interval *int
	var cron *string
	if sc.Cron != "" {
		cron = &sc.Cron
	} else {
		interval = &sc.IntervalSeconds
	}
	tag, err := s.pool.Exec(ctx, `
INSERT INTO reliability_schedules (target_id, organization_id, interval_seconds, cron, timezone, enabled, next_due_at, updated_at)
SELECT t.id, t.organization_id, $4, $5, $6, $7, $8, $9 FROM reliability_targets t
WHERE t.id = $1 AND t.repository_id = $2 AND t.organization_id = $3
ON CONFLICT (target_id) DO UPDATE SET interval_seconds = EXCLUDED.interval_seconds, cron = EXCLUDED.cron,
    timezone = EXCLUDED.timezone, enabled = EXCLUDED.enabled, next_due_at = EXCLUDED.next_due_at, updated_at = EXCLUDED.updated_at`,
		sc.TargetID, repositoryID, org, interval, cron, sc.Timezone, sc.Enabled, sc.NextDueAt, sc.UpdatedAt)
	if err != nil {
		return workspace.Schedule{}, err
	}
	if tag.RowsAffected() == 0 {
		return workspace.Schedule{}, fault.ErrNotFound
	}
	return s.GetSchedule(ctx, org, repositoryID, sc.TargetID)
}

// GetPolicy returns a repository's stored policy or the default one.
func (s *ReliabilityWorkspace) GetPolicy(ctx context.Context, org, repositoryID uuid.UUID) (workspace.DeploymentPolicy, error) {
	var raw []byte
	var revision *int
	var by *string
	var at *time.Time
	err := s.pool.QueryRow(ctx, `
SELECT p.policy, p.revision, p.updated_by, p.updated_at
FROM reliability_repositories r LEFT JOIN reliability_deployment_policies p ON p.repository_id = r.id
WHERE r.id = $1 AND r.organization_id = $2`, repositoryID, org).Scan(&raw, &revision, &by, &at)
	if err != nil {
		return workspace.DeploymentPolicy{}, noRows(err, fault.ErrNotFound)
	}
	out := workspace.DeploymentPolicy{RepositoryID: repositoryID}
	if revision == nil {
		out.Policy, out.IsDefault = reliability.DefaultPolicy(), true
		return out, nil
	}
	if err := json.Unmarshal(raw, &out.Policy); err != nil {
		return workspace.DeploymentPolicy{}, err
	}
	out.Revision, out.UpdatedBy, out.UpdatedAt = *revision, *by, at
	return out, nil
}

// PutPolicy stores the next revision of a repository's policy. The repository row is locked, so
// that two PUTs make two revisions and an expected revision is checked against the latest.
func (s *ReliabilityWorkspace) PutPolicy(ctx context.Context, org, repositoryID uuid.UUID, p workspace.PolicyPut, at time.Time) (workspace.DeploymentPolicy, error) {
	raw, err := json.Marshal(p.Policy)
	if err != nil {
		return workspace.DeploymentPolicy{}, err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var current int
		if err := tx.QueryRow(ctx, `
SELECT coalesce((SELECT revision FROM reliability_deployment_policies WHERE repository_id = r.id), 0)
FROM reliability_repositories r WHERE r.id = $1 AND r.organization_id = $2 FOR UPDATE OF r`, repositoryID, org).Scan(&current); err != nil {
			return noRows(err, fault.ErrNotFound)
		}
		if p.ExpectedRevision != nil && *p.ExpectedRevision != current {
			return &workspace.RevisionError{Current: current}
		}
		_, err := tx.Exec(ctx, `
INSERT INTO reliability_deployment_policies (repository_id, organization_id, policy, revision, updated_by, updated_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (repository_id) DO UPDATE SET policy = EXCLUDED.policy, revision = EXCLUDED.revision,
    updated_by = EXCLUDED.updated_by, updated_at = EXCLUDED.updated_at`, repositoryID, org, raw, current+1, p.UpdatedBy, at)
		return err
	})
	if err != nil {
		return workspace.DeploymentPolicy{}, err
	}
	return s.GetPolicy(ctx, org, repositoryID)
}

// LinkInstallation links an installation to the organization and registers its repositories.
func (s *ReliabilityWorkspace) LinkInstallation(ctx context.Context, in workspace.Installation, repos []workspace.CodeHostRepository) (workspace.LinkResult, error) {
	out := workspace.LinkResult{InstallationID: in.InstallationID, AccountLogin: in.AccountLogin}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockWorkspace(ctx, tx, in.OrganizationID); err != nil {
			return err
		}
		// Insert, or lock the existing link: a concurrent callback of the same installation waits
		// here, and finds it linked.
		tag, err := tx.Exec(ctx, `
INSERT INTO reliability_installations (id, organization_id, installation_id, account_login, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (installation_id) DO NOTHING`,
			in.ID, in.OrganizationID, in.InstallationID, in.AccountLogin, in.CreatedAt, in.UpdatedAt)
		if err != nil {
			return err
		}
		out.Linked = tag.RowsAffected() == 1
		var rowID, owner uuid.UUID
		if err := tx.QueryRow(ctx, `SELECT id, organization_id FROM reliability_installations WHERE installation_id = $1 FOR UPDATE`,
			in.InstallationID).Scan(&rowID, &owner); err != nil {
			return err
		}
		if owner != in.OrganizationID {
			return workspace.ErrInstallationLinked
		}
		if !out.Linked {
			if _, err := tx.Exec(ctx, `UPDATE reliability_installations SET account_login = $2, updated_at = $3
WHERE id = $1 AND account_login <> $2`, rowID, in.AccountLogin, in.UpdatedAt); err != nil {
				return err
			}
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM reliability_repositories WHERE organization_id = $1`, in.OrganizationID).Scan(&n); err != nil {
			return err
		}
		for _, r := range repos {
			id, err := uuid.NewV7()
			if err != nil {
				return err
			}
			// A repository of the same full name (added by hand, or by an earlier callback) is taken
			// over; one that already says the same is not touched, so that a replay writes nothing.
			var inserted bool
			err = tx.QueryRow(ctx, `
INSERT INTO reliability_repositories AS r (id, organization_id, full_name, provider, external_id, installation_id, default_branch, description, created_at, updated_at)
VALUES ($1, $2, $3, 'code-host', $4, $5, $6, $7, $8, $8)
ON CONFLICT (organization_id, full_name) DO UPDATE SET provider = 'code-host', external_id = EXCLUDED.external_id,
    installation_id = EXCLUDED.installation_id, updated_at = EXCLUDED.updated_at
WHERE r.provider <> 'code-host' OR r.external_id IS DISTINCT FROM EXCLUDED.external_id
    OR r.installation_id IS DISTINCT FROM EXCLUDED.installation_id
RETURNING (xmax = 0)`, id, in.OrganizationID, r.FullName, r.ExternalID, rowID, r.DefaultBranch, r.Description, in.UpdatedAt).Scan(&inserted)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if inserted {
				if n >= workspace.MaxRepositories {
					return &workspace.LimitError{Err: workspace.ErrRepositoryLimit, Limit: workspace.MaxRepositories}
				}
				n++
				out.Added++
			}
		}
		rows, err := tx.Query(ctx, `SELECT `+repositoryColumns+repositoryFrom+`
WHERE r.organization_id = $1 AND r.installation_id = $2 ORDER BY r.full_name LIMIT $3`, in.OrganizationID, rowID, workspace.MaxRepositories)
		if err != nil {
			return err
		}
		out.Repositories, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (workspace.Repository, error) { return scanRepository(r) })
		return err
	})
	return out, err
}

// DeleteWorkspace deletes the organization's agent-reliability records, children first so that
// each kind is counted, in one transaction; reliability_workspaces (plan and billing) stays.
func (s *ReliabilityWorkspace) DeleteWorkspace(ctx context.Context, org uuid.UUID) (workspace.DeletionCounts, error) {
	var c workspace.DeletionCounts
	steps := []struct {
		table string
		n     *int
	}{
		{"reliability_run_evidence", &c.RunEvidence},
		{"reliability_run_approvals", &c.RunApprovals},
		{"reliability_baselines", &c.Baselines},
		{"reliability_runs", &c.Runs},
		{"reliability_schedules", &c.Schedules},
		{"reliability_deployment_policies", &c.DeploymentPolicies},
		{"reliability_targets", &c.Targets},
		{"reliability_repositories", &c.Repositories},
		{"reliability_installations", &c.Installations},
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := purge(ctx, tx); err != nil {
			return err
		}
		if err := lockWorkspace(ctx, tx, org); err != nil {
			return err
		}
		for _, st := range steps {
			// The table names are the constants above, never input.
			tag, err := tx.Exec(ctx, `DELETE FROM `+st.table+` WHERE organization_id = $1`, org)
			if err != nil {
				return err
			}
			*st.n = int(tag.RowsAffected())
		}
		return nil
	})
	if err != nil {
		return workspace.DeletionCounts{}, err
	}
	return c, nil
}
