package store

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/organizations"
)

// Organizations implements organizations.Store on a pgx pool.
type Organizations struct {
	pool *pgxpool.Pool
}

var _ organizations.Store = (*Organizations)(nil)

// NewOrganizations returns the organizations store.
func NewOrganizations(pool *pgxpool.Pool) *Organizations { return &Organizations{pool: pool} }

// CreateOrganization inserts an organization.
func (s *Organizations) CreateOrganization(ctx context.Context, o organizations.Organization) (organizations.Organization, error) {
	err := s.pool.QueryRow(ctx, `INSERT INTO organizations (id, name) VALUES ($1, $2) RETURNING created_at`, o.ID, o.Name).Scan(&o.CreatedAt)
	return o, err
}

// GetOrganization returns one organization.
func (s *Organizations) GetOrganization(ctx context.Context, id uuid.UUID) (organizations.Organization, error) {
	o := organizations.Organization{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT name, created_at FROM organizations WHERE id = $1`, id).Scan(&o.Name, &o.CreatedAt)
	return o, noRows(err, fault.ErrNotFound)
}

const keyColumns = `id, organization_id, name, prefix, created_at, revoked_at`

func scanKey(row pgx.Row) (organizations.APIKey, error) {
	var k organizations.APIKey
	err := row.Scan(&k.ID, &k.OrganizationID, &k.Name, &k.Prefix, &k.CreatedAt, &k.RevokedAt)
	return k, err
}

// CreateAPIKey stores a key by its hash.
func (s *Organizations) CreateAPIKey(ctx context.Context, k organizations.APIKey, hash string) (organizations.APIKey, error) {
	return scanKey(s.pool.QueryRow(ctx, `
INSERT INTO api_keys (id, organization_id, name, key_hash, prefix) VALUES ($1, $2, $3, $4, $5)
RETURNING `+keyColumns, k.ID, k.OrganizationID, k.Name, hash, k.Prefix))
}

// ListAPIKeys lists an organization's keys, oldest first.
func (s *Organizations) ListAPIKeys(ctx context.Context, organizationID uuid.UUID) ([]organizations.APIKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE organization_id = $1 ORDER BY created_at, id`, organizationID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (organizations.APIKey, error) { return scanKey(r) })
}

// RevokeAPIKey marks a key revoked, keeping the first revocation time.
func (s *Organizations) RevokeAPIKey(ctx context.Context, organizationID, keyID uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND organization_id = $2`, keyID, organizationID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fault.ErrNotFound
	}
	return nil
}

// ActiveKeyByHash returns the unrevoked key with this hash and its organization.
func (s *Organizations) ActiveKeyByHash(ctx context.Context, hash string) (organizations.APIKey, organizations.Organization, error) {
	var k organizations.APIKey
	var o organizations.Organization
	err := s.pool.QueryRow(ctx, `
SELECT k.id, k.organization_id, k.name, k.prefix, k.created_at, k.revoked_at, o.id, o.name, o.created_at
FROM api_keys k JOIN organizations o ON o.id = k.organization_id
WHERE k.key_hash = $1 AND k.revoked_at IS NULL`, hash).
		Scan(&k.ID, &k.OrganizationID, &k.Name, &k.Prefix, &k.CreatedAt, &k.RevokedAt, &o.ID, &o.Name, &o.CreatedAt)
	return k, o, noRows(err, fault.ErrNotFound)
}
