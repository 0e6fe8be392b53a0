package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/watch"
)

// Watches implements watch.Store on a pgx pool: the watch API's keys (this file), watches
// (watch_watches.go) and policies (watch_policies.go). Migration 00009 holds their tables.
type Watches struct {
	pool *pgxpool.Pool
}

var _ watch.Store = (*Watches)(nil)

// NewWatches returns the watch API's store.
func NewWatches(pool *pgxpool.Pool) *Watches { return &Watches{pool: pool} }

// PostgreSQL error codes the watch store turns into faults.
const (
	sqlstateUnique     = "23505"
	sqlstateForeignKey = "23503"
)

// sqlState returns the SQLSTATE of err and the constraint it names ("" when err is no PostgreSQL error).
func sqlState(err error) (code, constraint string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.ConstraintName
	}
	return "", ""
}

const watchKeyColumns = `id, organization_id, name, prefix, scopes, created_at, expires_at, revoked_at`

func scanWatchKey(row pgx.Row, extra ...any) (watch.Key, error) {
	var k watch.Key
	err := row.Scan(append([]any{&k.ID, &k.OrganizationID, &k.Name, &k.Prefix, &k.Scopes, &k.CreatedAt, &k.ExpiresAt, &k.RevokedAt}, extra...)...)
	return k, err
}

// CreateKey stores a key by its hash, for an organization that exists.
func (s *Watches) CreateKey(ctx context.Context, k watch.Key, hash []byte) (watch.Key, error) {
	k, err := scanWatchKey(s.pool.QueryRow(ctx, `
INSERT INTO watch_api_keys (id, organization_id, name, prefix, key_hash, scopes, created_at, expires_at)
SELECT $1, o.id, $3, $4, $5, $6, $7, $8 FROM organizations o WHERE o.id = $2
RETURNING `+watchKeyColumns, k.ID, k.OrganizationID, k.Name, k.Prefix, hash, k.Scopes, k.CreatedAt, k.ExpiresAt))
	return k, noRows(err, fault.ErrNotFound)
}

// ListKeys lists an organization's keys, oldest first.
func (s *Watches) ListKeys(ctx context.Context, organizationID uuid.UUID) ([]watch.Key, error) {
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM organizations WHERE id = $1)`, organizationID).Scan(&exists); err != nil {
		return nil, err
	}
	if !exists {
		return nil, fault.ErrNotFound
	}
	rows, err := s.pool.Query(ctx, `SELECT `+watchKeyColumns+` FROM watch_api_keys
WHERE organization_id = $1 ORDER BY created_at, id`, organizationID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (watch.Key, error) { return scanWatchKey(r) })
}

// RevokeKey marks a key revoked, keeping the first revocation time.
func (s *Watches) RevokeKey(ctx context.Context, id uuid.UUID, at time.Time) error {
	tag, err := s.pool.Exec(ctx, `UPDATE watch_api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1`, id, at)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fault.ErrNotFound
	}
	return nil
}

// KeyByHash returns the key with this hash, and the hash as stored.
func (s *Watches) KeyByHash(ctx context.Context, hash []byte) (watch.Key, []byte, error) {
	var stored []byte
	k, err := scanWatchKey(s.pool.QueryRow(ctx, `SELECT `+watchKeyColumns+`, key_hash FROM watch_api_keys WHERE key_hash = $1`, hash), &stored)
	return k, stored, noRows(err, fault.ErrNotFound)
}
