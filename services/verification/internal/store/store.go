package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/tenancy"
)

// Store implements tenancy.Store on a pgx pool.
type Store struct {
	pool *pgxpool.Pool
}

var _ tenancy.Store = (*Store)(nil)

// New returns a Store.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return tenancy.ErrNotFound
	}
	return err
}

// CreateOrganization inserts an organization.
func (s *Store) CreateOrganization(ctx context.Context, o tenancy.Organization) (tenancy.Organization, error) {
	err := s.pool.QueryRow(ctx, `INSERT INTO organizations (id, name) VALUES ($1, $2) RETURNING created_at`, o.ID, o.Name).Scan(&o.CreatedAt)
	return o, err
}

// GetOrganization returns one organization.
func (s *Store) GetOrganization(ctx context.Context, id uuid.UUID) (tenancy.Organization, error) {
	o := tenancy.Organization{ID: id}
	err := s.pool.QueryRow(ctx, `SELECT name, created_at FROM organizations WHERE id = $1`, id).Scan(&o.Name, &o.CreatedAt)
	return o, notFound(err)
}

const keyColumns = `id, organization_id, name, prefix, created_at, revoked_at`

func scanKey(row pgx.Row) (tenancy.APIKey, error) {
	var k tenancy.APIKey
	err := row.Scan(&k.ID, &k.OrganizationID, &k.Name, &k.Prefix, &k.CreatedAt, &k.RevokedAt)
	return k, err
}

// CreateAPIKey stores a key by its hash.
func (s *Store) CreateAPIKey(ctx context.Context, k tenancy.APIKey, hash string) (tenancy.APIKey, error) {
	return scanKey(s.pool.QueryRow(ctx, `
INSERT INTO api_keys (id, organization_id, name, key_hash, prefix) VALUES ($1, $2, $3, $4, $5)
RETURNING `+keyColumns, k.ID, k.OrganizationID, k.Name, hash, k.Prefix))
}

// ListAPIKeys lists an organization's keys, oldest first.
func (s *Store) ListAPIKeys(ctx context.Context, organizationID uuid.UUID) ([]tenancy.APIKey, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE organization_id = $1 ORDER BY created_at, id`, organizationID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (tenancy.APIKey, error) { return scanKey(r) })
}

// RevokeAPIKey marks a key revoked, keeping the first revocation time.
func (s *Store) RevokeAPIKey(ctx context.Context, organizationID, keyID uuid.UUID) error {
	tag, err := s.pool.Exec(ctx, `
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND organization_id = $2`, keyID, organizationID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return tenancy.ErrNotFound
	}
	return nil
}

// ActiveKeyByHash returns the unrevoked key with this hash and its organization.
func (s *Store) ActiveKeyByHash(ctx context.Context, hash string) (tenancy.APIKey, tenancy.Organization, error) {
	var k tenancy.APIKey
	var o tenancy.Organization
	err := s.pool.QueryRow(ctx, `
SELECT k.id, k.organization_id, k.name, k.prefix, k.created_at, k.revoked_at, o.id, o.name, o.created_at
FROM api_keys k JOIN organizations o ON o.id = k.organization_id
WHERE k.key_hash = $1 AND k.revoked_at IS NULL`, hash).
		Scan(&k.ID, &k.OrganizationID, &k.Name, &k.Prefix, &k.CreatedAt, &k.RevokedAt, &o.ID, &o.Name, &o.CreatedAt)
	return k, o, notFound(err)
}
