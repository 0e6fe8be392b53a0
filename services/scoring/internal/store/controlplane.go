package store

import (
	"context"
	"errors"
	"hash/fnv"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trustlayer/trustlayer/services/scoring/internal/controlplane"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
)

const workspaceColumns = `id, email, coalesce(workspace_name, ''), plan, created_at`

func scanWorkspace(row pgx.Row, extra ...any) (controlplane.Workspace, error) {
	var w controlplane.Workspace
	err := row.Scan(append([]any{&w.ID, &w.Email, &w.Name, &w.Plan, &w.CreatedAt}, extra...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, fault.ErrNotFound
	}
	return w, err
}

// WorkspaceByEmail returns the account of email and its password hash ("" when it has none).
func (s *Store) WorkspaceByEmail(ctx context.Context, email string) (controlplane.Workspace, string, error) {
	var hash string
	w, err := scanWorkspace(s.pool.QueryRow(ctx, `
SELECT `+workspaceColumns+`, coalesce(password_hash, '') FROM accounts WHERE email = $1`, email), &hash)
	return w, hash, err
}

// CreateWorkspace creates an account with an e-mail and password; controlplane.ErrEmailExists when the
// e-mail has an account.
func (s *Store) CreateWorkspace(ctx context.Context, w controlplane.NewWorkspace) (controlplane.Workspace, error) {
	out, err := scanWorkspace(s.pool.QueryRow(ctx, `
INSERT INTO accounts (id, email, plan, workspace_name, password_hash) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (email) DO NOTHING
RETURNING `+workspaceColumns, w.ID, w.Email, w.Plan, w.Name, w.PasswordHash))
	if errors.Is(err, fault.ErrNotFound) {
		return out, controlplane.ErrEmailExists
	}
	return out, err
}

// EnsureWorkspace returns the account of w.Email, creating it without a password when there is none.
// An account that billing or an admin made for the e-mail becomes the workspace, keeping its plan.
func (s *Store) EnsureWorkspace(ctx context.Context, w controlplane.NewWorkspace) (controlplane.Workspace, error) {
	return scanWorkspace(s.pool.QueryRow(ctx, `
INSERT INTO accounts (id, email, plan, workspace_name) VALUES ($1, $2, $3, $4)
ON CONFLICT (email) DO UPDATE SET workspace_name = coalesce(accounts.workspace_name, excluded.workspace_name)
RETURNING `+workspaceColumns, w.ID, w.Email, w.Plan, w.Name))
}

// SetPasswordHash replaces an account's password hash.
func (s *Store) SetPasswordHash(ctx context.Context, accountID, hash string) error {
	_, err := s.pool.Exec(ctx, `UPDATE accounts SET password_hash = $2, updated_at = now() WHERE id = $1`, accountID, hash)
	return err
}

// RenameWorkspace sets an account's workspace name.
func (s *Store) RenameWorkspace(ctx context.Context, accountID, name string) (controlplane.Workspace, error) {
	return scanWorkspace(s.pool.QueryRow(ctx, `
UPDATE accounts SET workspace_name = $2, updated_at = now() WHERE id = $1
RETURNING `+workspaceColumns, accountID, name))
}

// CreateSession stores a session by the hash of its token.
func (s *Store) CreateSession(ctx context.Context, n controlplane.NewSession) error {
	_, err := s.pool.Exec(ctx, `
INSERT INTO workspace_sessions (id, account_id, token_hash, created_at, last_used_at, expires_at)
VALUES ($1, $2, $3, $4, $4, $5)`, n.ID, n.AccountID, n.Hash, n.CreatedAt, n.ExpiresAt)
	return err
}

// SessionByHash finds a session, with its workspace, by the hash of its token.
func (s *Store) SessionByHash(ctx context.Context, hash string) (controlplane.Session, error) {
	var sess controlplane.Session
	w, err := scanWorkspace(s.pool.QueryRow(ctx, `
SELECT a.id, a.email, coalesce(a.workspace_name, ''), a.plan, a.created_at, s.id, s.last_used_at, s.expires_at
FROM workspace_sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = $1`, hash),
		&sess.ID, &sess.LastUsedAt, &sess.ExpiresAt)
	sess.Workspace = w
	return sess, err
}

// TouchSession records that a session was used at at.
func (s *Store) TouchSession(ctx context.Context, id string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE workspace_sessions SET last_used_at = greatest(last_used_at, $2) WHERE id = $1`, id, at)
	return err
}

// DeleteSession ends a session, and with it every session of any account that ended before now: the
// table keeps only sessions that may still be used.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM workspace_sessions WHERE id = $1 OR expires_at < now()`, id)
	return err
}

// throttleLockClass namespaces the throttle's advisory locks (pg_advisory_xact_lock(class, key)).
const throttleLockClass = 0x5c0e_0005

// ReserveAttempts implements controlplane.Store: under a transaction-scoped advisory lock per
// subject (taken in a fixed order, so two sign-ins never wait for each other in a cycle), it counts
// each subject's attempts in the window and records one more for every subject, or none when a
// subject is at its limit.
func (s *Store) ReserveAttempts(ctx context.Context, subjects []controlplane.Attempt, window time.Duration) ([]int64, time.Duration, error) {
	type lock struct {
		key int32
		a   controlplane.Attempt
	}
	locks := make([]lock, len(subjects))
	for i, a := range subjects {
		h := fnv.New32a()
		h.Write([]byte(a.Subject))
		locks[i] = lock{int32(h.Sum32()), a}
	}
	slices.SortFunc(locks, func(x, y lock) int { return int(int64(x.key) - int64(y.key)) })
	var ids []int64
	var retry time.Duration
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, l := range locks {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, int32(throttleLockClass), l.key); err != nil {
				return err
			}
		}
		for _, l := range locks {
			var n int
			var wait float64
			if err := tx.QueryRow(ctx, `
SELECT count(*), coalesce(extract(epoch FROM min(created_at) + $2 * interval '1 second' - now()), 0)::float8
FROM auth_attempts WHERE subject = $1 AND created_at > now() - $2 * interval '1 second'`, l.a.Subject, window.Seconds()).Scan(&n, &wait); err != nil {
				return err
			}
			if n >= l.a.Limit {
				retry = max(retry, time.Duration(wait*float64(time.Second)), time.Nanosecond)
			}
		}
		if retry > 0 {
			return nil
		}
		for _, a := range subjects {
			var id int64
			if err := tx.QueryRow(ctx, `INSERT INTO auth_attempts (subject) VALUES ($1) RETURNING id`, a.Subject).Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
			// Attempts that left the window are of no use to anyone.
			if _, err := tx.Exec(ctx, `DELETE FROM auth_attempts WHERE subject = $1 AND created_at <= now() - $2 * interval '1 second'`, a.Subject, window.Seconds()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if retry > 0 {
		return nil, retry, nil
	}
	return ids, 0, nil
}

// ClearAttempts deletes the attempts ids and every attempt of subject.
func (s *Store) ClearAttempts(ctx context.Context, ids []int64, subject string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM auth_attempts WHERE id = ANY($1) OR subject = $2`, ids, subject)
	return err
}

// CreateSetupLink stores a setup link by the hash of its token.
func (s *Store) CreateSetupLink(ctx context.Context, l controlplane.NewSetupLink) error {
	_, err := s.pool.Exec(ctx, `
INSERT INTO key_setup_links (token_hash, key_id, account_id, sealed, expires_at) VALUES ($1, $2, $3, $4, $5)`,
		l.Hash, l.KeyID, l.AccountID, l.Sealed, l.ExpiresAt)
	return err
}

const setupLinkColumns = `l.key_id, l.account_id, l.sealed, l.expires_at, l.revealed_at, k.revoked_at IS NOT NULL`

func scanSetupLink(row pgx.Row) (controlplane.SetupLink, error) {
	var l controlplane.SetupLink
	err := row.Scan(&l.KeyID, &l.AccountID, &l.Sealed, &l.ExpiresAt, &l.RevealedAt, &l.KeyRevoked)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, fault.ErrNotFound
	}
	return l, err
}

// SetupLinkByHash finds a setup link by the hash of its token.
func (s *Store) SetupLinkByHash(ctx context.Context, hash string) (controlplane.SetupLink, error) {
	return scanSetupLink(s.pool.QueryRow(ctx, `
SELECT `+setupLinkColumns+` FROM key_setup_links l JOIN api_keys k ON k.id = l.key_id WHERE l.token_hash = $1`, hash))
}

// ConsumeSetupLink marks a pending link of a live key, unexpired at now, revealed, clears its sealed secret
// and returns the link as it was: one statement, so only one request can consume a link.
func (s *Store) ConsumeSetupLink(ctx context.Context, hash string, now time.Time) (controlplane.SetupLink, error) {
	return scanSetupLink(s.pool.QueryRow(ctx, `
WITH used AS (
    SELECT l.token_hash, l.sealed FROM key_setup_links l JOIN api_keys k ON k.id = l.key_id
    WHERE l.token_hash = $1 AND l.revealed_at IS NULL AND l.expires_at > $2 AND k.revoked_at IS NULL
    FOR UPDATE OF l
)
UPDATE key_setup_links l SET revealed_at = now(), sealed = NULL FROM used
WHERE l.token_hash = used.token_hash
RETURNING l.key_id, l.account_id, used.sealed, l.expires_at, NULL::timestamptz, false`, hash, now))
}

// PendingSetupKeys returns the ids of the account's keys whose setup link is neither used nor
// expired at now.
func (s *Store) PendingSetupKeys(ctx context.Context, accountID string, now time.Time) (map[string]bool, error) {
	rows, err := s.pool.Query(ctx, `
SELECT key_id::text FROM key_setup_links WHERE account_id = $1 AND revealed_at IS NULL AND expires_at > $2`, accountID, now)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// CreateAccountKey implements keys.WorkspaceStore: in one transaction that holds the account's row,
// it counts the account's visible live keys and stores the new key on the account's plan.
func (s *Store) CreateAccountKey(ctx context.Context, k keys.NewKey, hidden bool, maxActive int) (keys.Key, error) {
	var out keys.Key
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT id, coalesce(email, ''), plan FROM accounts WHERE id = $1 FOR UPDATE`, k.AccountID).
			Scan(&out.AccountID, &out.Email, &out.Plan); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return fault.ErrNotFound
			}
			return err
		}
		if !hidden {
			var n int
			if err := tx.QueryRow(ctx, `
SELECT count(*) FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL AND NOT hidden AND kind <> 'jwt'`, k.AccountID).Scan(&n); err != nil {
				return err
			}
			if n >= maxActive {
				return keys.ErrTooMany
			}
		}
		scopes := k.Scopes
		if scopes == nil {
			scopes = []string{}
		}
		err := tx.QueryRow(ctx, `
INSERT INTO api_keys (id, account_id, kind, name, key_hash, prefix, scopes, hidden) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id, kind, name, prefix, scopes, created_at`, k.ID, k.AccountID, k.Kind, k.Name, k.Hash, k.Prefix, scopes, hidden).
			Scan(&out.ID, &out.Kind, &out.Name, &out.Prefix, &out.Scopes, &out.CreatedAt)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == uniqueViolation && pgErr.ConstraintName == "api_keys_one_agent" {
			return keys.ErrAgentExists
		}
		return err
	})
	return out, err
}

// AccountKeys lists the account's visible keys (not hidden, not JWT rows), newest first.
func (s *Store) AccountKeys(ctx context.Context, accountID string) ([]keys.Key, error) {
	rows, err := s.pool.Query(ctx, `
SELECT `+keyByColumns+` FROM api_keys k JOIN accounts a ON a.id = k.account_id
WHERE k.account_id = $1 AND NOT k.hidden AND k.kind <> 'jwt' ORDER BY k.created_at DESC, k.id`, accountID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (keys.Key, error) { return scanKey(row) })
}

// RevokeAccountKey revokes a visible key of the account (a revoked one stays as it was) and returns
// the hash of its secret.
func (s *Store) RevokeAccountKey(ctx context.Context, accountID, keyID string) (string, error) {
	var hash string
	err := s.pool.QueryRow(ctx, `
UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())
WHERE id = $1 AND account_id = $2 AND NOT hidden AND kind <> 'jwt'
RETURNING key_hash`, keyID, accountID).Scan(&hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fault.ErrNotFound
	}
	return hash, err
}

// AgentKey returns the account's live hidden key.
func (s *Store) AgentKey(ctx context.Context, accountID string) (keys.Key, error) {
	return scanKey(s.pool.QueryRow(ctx, `
SELECT `+keyByColumns+` FROM api_keys k JOIN accounts a ON a.id = k.account_id
WHERE k.account_id = $1 AND k.hidden AND k.revoked_at IS NULL`, accountID))
}
