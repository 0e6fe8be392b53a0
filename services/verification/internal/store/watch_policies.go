package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/watch"
)

const watchPolicyColumns = `id, organization_id, name, rules, created_at, updated_at`

func scanWatchPolicy(row pgx.Row) (watch.Policy, error) {
	var p watch.Policy
	var rules []byte
	if err := row.Scan(&p.ID, &p.OrganizationID, &p.Name, &rules, &p.CreatedAt, &p.UpdatedAt); err != nil {
		return watch.Policy{}, err
	}
	if err := json.Unmarshal(rules, &p.Rules); err != nil {
		return watch.Policy{}, err
	}
	return p, nil
}

// policyNameTaken turns the violation of the unique name of a policy into its fault.
func policyNameTaken(err error) error {
	if code, constraint := sqlState(err); code == sqlstateUnique && constraint == "watch_policies_organization_id_name_key" {
		return fault.ErrPolicyNameExists
	}
	return err
}

// CreatePolicy stores a policy under a name its organization does not use yet.
func (s *Watches) CreatePolicy(ctx context.Context, p watch.Policy) (watch.Policy, error) {
	rules, err := json.Marshal(p.Rules)
	if err != nil {
		return watch.Policy{}, err
	}
	p, err = scanWatchPolicy(s.pool.QueryRow(ctx, `
INSERT INTO watch_policies (id, organization_id, name, rules, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+watchPolicyColumns,
		p.ID, p.OrganizationID, p.Name, rules, p.CreatedAt, p.UpdatedAt))
	return p, policyNameTaken(err)
}

// ListPolicies pages an organization's policies by (created_at, id), newest first.
func (s *Watches) ListPolicies(ctx context.Context, organizationID uuid.UUID, page watch.Page) ([]watch.Policy, string, error) {
	after, err := decodeKeyset(page.Cursor)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.pool.Query(ctx, `SELECT `+watchPolicyColumns+` FROM watch_policies
WHERE organization_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) < ($2, $3))
ORDER BY created_at DESC, id DESC LIMIT $4`, organizationID, after.at, after.id, page.Limit+1)
	if err != nil {
		return nil, "", err
	}
	return keysetPage(rows, page.Limit, func(r pgx.CollectableRow) (watch.Policy, error) { return scanWatchPolicy(r) },
		func(p watch.Policy) (time.Time, uuid.UUID) { return p.CreatedAt, p.ID })
}

// GetPolicy returns a policy of the organization.
func (s *Watches) GetPolicy(ctx context.Context, organizationID, id uuid.UUID) (watch.Policy, error) {
	p, err := scanWatchPolicy(s.pool.QueryRow(ctx, `SELECT `+watchPolicyColumns+` FROM watch_policies
WHERE id = $1 AND organization_id = $2`, id, organizationID))
	return p, noRows(err, fault.ErrNotFound)
}

// UpdatePolicy renames a policy or replaces its rules.
func (s *Watches) UpdatePolicy(ctx context.Context, organizationID, id uuid.UUID, c watch.PolicyChange) (watch.Policy, error) {
	var rules []byte
	if c.Rules != nil {
		var err error
		if rules, err = json.Marshal(*c.Rules); err != nil {
			return watch.Policy{}, err
		}
	}
	p, err := scanWatchPolicy(s.pool.QueryRow(ctx, `
UPDATE watch_policies SET name = coalesce($3::text, name), rules = coalesce($4::jsonb, rules), updated_at = $5
WHERE id = $1 AND organization_id = $2 RETURNING `+watchPolicyColumns, id, organizationID, c.Name, rules, c.At))
	if errors.Is(err, pgx.ErrNoRows) {
		return watch.Policy{}, fault.ErrNotFound
	}
	return p, policyNameTaken(err)
}

// DeletePolicy deletes a policy that no watch that is not archived uses. Archiving a watch clears
// its policy, so the foreign key of target_watches only ever refuses the deletion of a policy in use.
func (s *Watches) DeletePolicy(ctx context.Context, organizationID, id uuid.UUID) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var found uuid.UUID
		// Locked: a watch being created with this policy waits for the deletion, or the deletion for it.
		if err := tx.QueryRow(ctx, `SELECT id FROM watch_policies WHERE id = $1 AND organization_id = $2 FOR UPDATE`,
			id, organizationID).Scan(&found); err != nil {
			return noRows(err, fault.ErrNotFound)
		}
		var used bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM target_watches WHERE policy_id = $1 AND status <> 'archived')`,
			id).Scan(&used); err != nil {
			return err
		}
		if used {
			return fault.ErrPolicyInUse
		}
		_, err := tx.Exec(ctx, `DELETE FROM watch_policies WHERE id = $1`, id)
		return err
	})
	if code, _ := sqlState(err); code == sqlstateForeignKey {
		return fault.ErrPolicyInUse
	}
	return err
}
