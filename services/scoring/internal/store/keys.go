package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
)

// CreateKey stores a key, creating its account (or reusing the account of Email) in one transaction.
func (s *Store) CreateKey(ctx context.Context, k keys.NewKey) (keys.Key, error) {
	var out keys.Key
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var email *string
		if k.Email != "" {
			email = &k.Email
		}
		// An e-mail that already has an account gets its key there (billing upgrades accounts, so
		// every key of one customer must share one); otherwise a new account is made.
		if err := tx.QueryRow(ctx, `
INSERT INTO accounts (id, email, plan) VALUES ($1, $2, $3)
ON CONFLICT (email) DO UPDATE SET updated_at = now()
RETURNING id, plan`, k.AccountID, email, k.Plan).Scan(&out.AccountID, &out.Plan); err != nil {
			return err
		}
		out.Email = k.Email
		if k.Scopes == nil {
			k.Scopes = []string{}
		}
		return tx.QueryRow(ctx, `
INSERT INTO api_keys (id, account_id, kind, name, key_hash, prefix, scopes) VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING id, kind, name, prefix, scopes, created_at`, k.ID, out.AccountID, k.Kind, k.Name, k.Hash, k.Prefix, k.Scopes).
			Scan(&out.ID, &out.Kind, &out.Name, &out.Prefix, &out.Scopes, &out.CreatedAt)
	})
	return out, err
}

const keyByColumns = `k.id, k.account_id, coalesce(a.email, ''), a.plan, k.kind, k.name, k.prefix, k.scopes, k.created_at, k.revoked_at`

// keyFields are the scan targets of keyByColumns.
func keyFields(k *keys.Key) []any {
	return []any{&k.ID, &k.AccountID, &k.Email, &k.Plan, &k.Kind, &k.Name, &k.Prefix, &k.Scopes, &k.CreatedAt, &k.RevokedAt}
}

func scanKey(row pgx.Row) (keys.Key, error) {
	var k keys.Key
	err := row.Scan(keyFields(&k)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return k, fault.ErrNotFound
	}
	return k, err
}

// KeyByHash finds a key (revoked or not) by the hash of its secret.
func (s *Store) KeyByHash(ctx context.Context, hash string) (keys.Key, error) {
	return scanKey(s.pool.QueryRow(ctx, `
SELECT `+keyByColumns+` FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = $1`, hash))
}

// KeyByID finds a key by id.
func (s *Store) KeyByID(ctx context.Context, id string) (keys.Key, error) {
	return scanKey(s.pool.QueryRow(ctx, `
SELECT `+keyByColumns+` FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.id = $1`, id))
}

// KeysByHash finds the keys (revoked or not) with the given secret hashes, in one query, by hash.
func (s *Store) KeysByHash(ctx context.Context, hashes []string) (map[string]keys.Key, error) {
	return s.keysBy(ctx, `k.key_hash = q.v`, hashes)
}

// KeysByID finds the keys with the given ids (UUIDs in any form uuid.Parse takes), in one query,
// by id as given.
func (s *Store) KeysByID(ctx context.Context, ids []string) (map[string]keys.Key, error) {
	return s.keysBy(ctx, `k.id = q.v::uuid`, ids)
}

// keysBy reads the keys that match vals, keyed by the value each matched: the query returns the value
// as given, so that a caller finds its own spelling of an id again.
func (s *Store) keysBy(ctx context.Context, match string, vals []string) (map[string]keys.Key, error) {
	rows, err := s.pool.Query(ctx, `
SELECT q.v, `+keyByColumns+` FROM unnest($1::text[]) AS q(v)
JOIN api_keys k ON `+match+` JOIN accounts a ON a.id = k.account_id`, vals)
	if err != nil {
		return nil, err
	}
	out := make(map[string]keys.Key, len(vals))
	var v string
	var k keys.Key
	dest := append([]any{&v}, keyFields(&k)...)
	_, err = pgx.ForEachRow(rows, dest, func() error {
		out[v] = k
		// Start the next row from zero values: a scan could otherwise reuse this row's pointers.
		k = keys.Key{}
		return nil
	})
	return out, err
}
