package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/claim"
)

var _ claim.Store = (*Public)(nil)

const claimColumns = `id, namespace, name, source, intent, secret_hash, token_hash, status, coalesce(verified_method, ''),
verified_subject, verified_at, created_at, expires_at`

func scanClaim(row pgx.Row) (claim.Intent, error) {
	var i claim.Intent
	err := row.Scan(&i.ID, &i.Namespace, &i.Name, &i.Source, &i.Intent, &i.SecretHash, &i.TokenHash, &i.Status, &i.VerifiedMethod,
		&i.VerifiedSubject, &i.VerifiedAt, &i.CreatedAt, &i.ExpiresAt)
	return i, noRows(err, fault.ErrNotFound)
}

// ServerListed reports whether the registry sync knows namespace/name.
func (s *Public) ServerListed(ctx context.Context, namespace, name string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM intel_servers WHERE namespace = $1 AND name = $2)`, namespace, name).Scan(&ok)
	return ok, err
}

// InsertClaimIntent stores a new claim.
func (s *Public) InsertClaimIntent(ctx context.Context, i claim.Intent) error {
	_, err := s.pool.Exec(ctx, `
INSERT INTO claim_intents (id, namespace, name, source, intent, secret_hash, token_hash, status, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		i.ID, i.Namespace, i.Name, i.Source, i.Intent, i.SecretHash, i.TokenHash, i.Status, i.CreatedAt, i.ExpiresAt)
	return err
}

// ClaimIntent reads a claim.
func (s *Public) ClaimIntent(ctx context.Context, id uuid.UUID) (claim.Intent, error) {
	return scanClaim(s.pool.QueryRow(ctx, `SELECT `+claimColumns+` FROM claim_intents WHERE id = $1`, id))
}

// CountClaimAttempt adds one to a claim's attempts.
func (s *Public) CountClaimAttempt(ctx context.Context, id uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `UPDATE claim_intents SET attempts = attempts + 1 WHERE id = $1`, id)
	return err
}

// MarkClaimVerified verifies a pending claim; a verified one keeps its first proof.
func (s *Public) MarkClaimVerified(ctx context.Context, id uuid.UUID, method, subject string, at time.Time) (claim.Intent, error) {
	if _, err := s.pool.Exec(ctx, `
UPDATE claim_intents SET status = 'verified', verified_method = $2, verified_subject = $3, verified_at = $4, oauth_state_hash = NULL
WHERE id = $1 AND status = 'pending'`, id, method, subject, at); err != nil {
		return claim.Intent{}, err
	}
	return s.ClaimIntent(ctx, id)
}

// SetClaimState records a sign-in state's digest; a later sign-in replaces an earlier one.
func (s *Public) SetClaimState(ctx context.Context, id uuid.UUID, stateHash []byte, at time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE claim_intents SET oauth_state_hash = $2, oauth_started_at = $3 WHERE id = $1`, id, stateHash, at)
	return err
}

// TakeClaimState returns the claim of a sign-in state started after notBefore and forgets the state.
func (s *Public) TakeClaimState(ctx context.Context, stateHash []byte, notBefore time.Time) (claim.Intent, error) {
	return scanClaim(s.pool.QueryRow(ctx, `
UPDATE claim_intents SET oauth_state_hash = NULL, oauth_started_at = NULL
WHERE oauth_state_hash = $1 AND oauth_started_at >= $2
RETURNING `+claimColumns, stateHash, notBefore))
}

// PruneClaims deletes the pending claims that expired before cutoff: they can no longer be
// verified, and the intents of the overall rate limit must not pile up for ever. Verified claims stay.
func (s *Public) PruneClaims(ctx context.Context, cutoff time.Time) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM claim_intents WHERE status = 'pending' AND expires_at < $1`, cutoff)
	return err
}
