package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
)

// OAuthClient is a dynamically registered (RFC 7591) public OAuth client.
type OAuthClient struct {
	ID            string
	Name          string
	RedirectURIs  []string
	GrantTypes    []string
	ResponseTypes []string
	Scopes        []string
	CreatedAt     time.Time
}

// OAuthToken is one stored authorization code, PKCE request, access token or refresh token: the
// authorization request behind it, by the hash of its signature (migration 00006).
type OAuthToken struct {
	Kind              string
	SignatureHash     string
	RequestID         string
	ClientID          string
	RequestedAt       time.Time
	RequestedScopes   []string
	GrantedScopes     []string
	RequestedAudience []string
	GrantedAudience   []string
	Form              []byte // JSON object of string arrays
	Session           []byte // JSON
	Active            bool
	ExpiresAt         time.Time
}

// OAuthBrowserSession is a sign-in in progress ("login") or a signed-in browser ("signin").
type OAuthBrowserSession struct {
	Kind      string
	IDHash    string
	Nonce     string
	Verifier  string
	ReturnTo  string
	Email     string
	ExpiresAt time.Time
}

// querier is what both the pool and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

type oauthTxKey struct{}

// BeginOAuthTx starts a transaction that the OAuth methods called with the returned context join:
// fosite rotates a refresh token (revoke the old grant's tokens, store the new ones) through
// BeginTX/Commit/Rollback, so that two concurrent uses of one refresh token cannot both succeed.
func (s *Store) BeginOAuthTx(ctx context.Context) (context.Context, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, oauthTxKey{}, tx), nil
}

// CommitOAuthTx commits the transaction of ctx (BeginOAuthTx).
func (s *Store) CommitOAuthTx(ctx context.Context) error {
	tx, ok := ctx.Value(oauthTxKey{}).(pgx.Tx)
	if !ok {
		return errors.New("store: no OAuth transaction in the context")
	}
	return tx.Commit(ctx)
}

// RollbackOAuthTx rolls the transaction of ctx back; after a commit it does nothing.
func (s *Store) RollbackOAuthTx(ctx context.Context) error {
	tx, ok := ctx.Value(oauthTxKey{}).(pgx.Tx)
	if !ok {
		return errors.New("store: no OAuth transaction in the context")
	}
	if err := tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		return err
	}
	return nil
}

func (s *Store) oauthQ(ctx context.Context) querier {
	if tx, ok := ctx.Value(oauthTxKey{}).(pgx.Tx); ok {
		return tx
	}
	return s.pool
}

// CreateOAuthClient stores a registered client.
func (s *Store) CreateOAuthClient(ctx context.Context, c OAuthClient) (OAuthClient, error) {
	err := s.oauthQ(ctx).QueryRow(ctx, `
INSERT INTO oauth_clients (id, name, redirect_uris, grant_types, response_types, scopes) VALUES ($1, $2, $3, $4, $5, $6)
RETURNING created_at`, c.ID, c.Name, c.RedirectURIs, c.GrantTypes, c.ResponseTypes, c.Scopes).Scan(&c.CreatedAt)
	return c, err
}

// OAuthClientByID returns a registered client, or fault.ErrNotFound.
func (s *Store) OAuthClientByID(ctx context.Context, id string) (OAuthClient, error) {
	var c OAuthClient
	err := s.oauthQ(ctx).QueryRow(ctx, `
SELECT id, name, redirect_uris, grant_types, response_types, scopes, created_at FROM oauth_clients WHERE id = $1`, id).
		Scan(&c.ID, &c.Name, &c.RedirectURIs, &c.GrantTypes, &c.ResponseTypes, &c.Scopes, &c.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, fault.ErrNotFound
	}
	return c, err
}

// CreateOAuthToken stores a token's request.
func (s *Store) CreateOAuthToken(ctx context.Context, t OAuthToken) error {
	_, err := s.oauthQ(ctx).Exec(ctx, `
INSERT INTO oauth_tokens (kind, signature_hash, request_id, client_id, requested_at, requested_scopes, granted_scopes,
    requested_audience, granted_audience, form, session, active, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, true, $12)`,
		t.Kind, t.SignatureHash, t.RequestID, t.ClientID, t.RequestedAt, nonNil(t.RequestedScopes), nonNil(t.GrantedScopes),
		nonNil(t.RequestedAudience), nonNil(t.GrantedAudience), t.Form, t.Session, t.ExpiresAt)
	return err
}

// OAuthToken returns the stored token of kind by signature hash, active or not, or fault.ErrNotFound.
func (s *Store) OAuthToken(ctx context.Context, kind, signatureHash string) (OAuthToken, error) {
	t := OAuthToken{Kind: kind, SignatureHash: signatureHash}
	err := s.oauthQ(ctx).QueryRow(ctx, `
SELECT request_id, client_id, requested_at, requested_scopes, granted_scopes, requested_audience, granted_audience,
    form, session, active, expires_at
FROM oauth_tokens WHERE kind = $1 AND signature_hash = $2`, kind, signatureHash).
		Scan(&t.RequestID, &t.ClientID, &t.RequestedAt, &t.RequestedScopes, &t.GrantedScopes, &t.RequestedAudience,
			&t.GrantedAudience, &t.Form, &t.Session, &t.Active, &t.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, fault.ErrNotFound
	}
	return t, err
}

// DeleteOAuthToken deletes a token; deleting one that does not exist is not an error.
func (s *Store) DeleteOAuthToken(ctx context.Context, kind, signatureHash string) error {
	_, err := s.oauthQ(ctx).Exec(ctx, `DELETE FROM oauth_tokens WHERE kind = $1 AND signature_hash = $2`, kind, signatureHash)
	return err
}

// DeactivateOAuthToken marks an active token used (a spent authorization code, a rotated refresh
// token); the row stays so that a second use is recognised as reuse. fault.ErrNotFound when no active token
// has that signature: under concurrent use, only the first caller deactivates it.
func (s *Store) DeactivateOAuthToken(ctx context.Context, kind, signatureHash string) error {
	tag, err := s.oauthQ(ctx).Exec(ctx, `
UPDATE oauth_tokens SET active = false WHERE kind = $1 AND signature_hash = $2 AND active`, kind, signatureHash)
	if err == nil && tag.RowsAffected() == 0 {
		return fault.ErrNotFound
	}
	return err
}

// DeactivateOAuthGrant marks every token of kind of one grant (request id) used.
func (s *Store) DeactivateOAuthGrant(ctx context.Context, kind, requestID string) error {
	_, err := s.oauthQ(ctx).Exec(ctx, `UPDATE oauth_tokens SET active = false WHERE kind = $1 AND request_id = $2`, kind, requestID)
	return err
}

// DeleteOAuthGrant deletes every token of kind of one grant (request id).
func (s *Store) DeleteOAuthGrant(ctx context.Context, kind, requestID string) error {
	_, err := s.oauthQ(ctx).Exec(ctx, `DELETE FROM oauth_tokens WHERE kind = $1 AND request_id = $2`, kind, requestID)
	return err
}

// CreateOAuthBrowserSession stores a sign-in in progress or a signed-in browser.
func (s *Store) CreateOAuthBrowserSession(ctx context.Context, b OAuthBrowserSession) error {
	_, err := s.oauthQ(ctx).Exec(ctx, `
INSERT INTO oauth_browser_sessions (kind, id_hash, nonce, verifier, return_to, email, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, b.Kind, b.IDHash, b.Nonce, b.Verifier, b.ReturnTo, b.Email, b.ExpiresAt)
	return err
}

// TakeOAuthBrowserSession deletes and returns an unexpired browser session, so that a sign-in in
// progress is completed at most once; fault.ErrNotFound when there is none.
func (s *Store) TakeOAuthBrowserSession(ctx context.Context, kind, idHash string) (OAuthBrowserSession, error) {
	b := OAuthBrowserSession{Kind: kind, IDHash: idHash}
	err := s.oauthQ(ctx).QueryRow(ctx, `
DELETE FROM oauth_browser_sessions WHERE kind = $1 AND id_hash = $2
RETURNING nonce, verifier, return_to, email, expires_at`, kind, idHash).
		Scan(&b.Nonce, &b.Verifier, &b.ReturnTo, &b.Email, &b.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !b.ExpiresAt.After(time.Now()) {
		return b, fault.ErrNotFound
	}
	return b, err
}

// OAuthBrowserSession returns an unexpired browser session, or fault.ErrNotFound.
func (s *Store) OAuthBrowserSession(ctx context.Context, kind, idHash string) (OAuthBrowserSession, error) {
	b := OAuthBrowserSession{Kind: kind, IDHash: idHash}
	err := s.oauthQ(ctx).QueryRow(ctx, `
SELECT nonce, verifier, return_to, email, expires_at FROM oauth_browser_sessions
WHERE kind = $1 AND id_hash = $2 AND expires_at > now()`, kind, idHash).
		Scan(&b.Nonce, &b.Verifier, &b.ReturnTo, &b.Email, &b.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return b, fault.ErrNotFound
	}
	return b, err
}

// PurgeExpiredOAuth deletes tokens that expired more than a day ago (a day of spent codes and
// refresh tokens is kept, so that their reuse is still recognised and revokes the grant) and expired
// browser sessions. It returns how many rows went.
func (s *Store) PurgeExpiredOAuth(ctx context.Context) (int64, error) {
	t, err := s.oauthQ(ctx).Exec(ctx, `DELETE FROM oauth_tokens WHERE expires_at < now() - interval '1 day'`)
	if err != nil {
		return 0, err
	}
	b, err := s.oauthQ(ctx).Exec(ctx, `DELETE FROM oauth_browser_sessions WHERE expires_at < now()`)
	if err != nil {
		return 0, err
	}
	return t.RowsAffected() + b.RowsAffected(), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
