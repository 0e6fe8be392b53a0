package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/pkce"
	fositestorage "github.com/ory/fosite/storage"

	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
)

// Store is the persistence the authorization server needs (internal/store/oauth.go). Methods that
// find nothing return an error matching fault.ErrNotFound.
type Store interface {
	CreateOAuthClient(ctx context.Context, c store.OAuthClient) (store.OAuthClient, error)
	OAuthClientByID(ctx context.Context, id string) (store.OAuthClient, error)
	CreateOAuthToken(ctx context.Context, t store.OAuthToken) error
	OAuthToken(ctx context.Context, kind, signatureHash string) (store.OAuthToken, error)
	DeleteOAuthToken(ctx context.Context, kind, signatureHash string) error
	DeactivateOAuthToken(ctx context.Context, kind, signatureHash string) error
	DeactivateOAuthGrant(ctx context.Context, kind, requestID string) error
	DeleteOAuthGrant(ctx context.Context, kind, requestID string) error
	CreateOAuthBrowserSession(ctx context.Context, b store.OAuthBrowserSession) error
	TakeOAuthBrowserSession(ctx context.Context, kind, idHash string) (store.OAuthBrowserSession, error)
	OAuthBrowserSession(ctx context.Context, kind, idHash string) (store.OAuthBrowserSession, error)
	PurgeExpiredOAuth(ctx context.Context) (int64, error)
	BeginOAuthTx(ctx context.Context) (context.Context, error)
	CommitOAuthTx(ctx context.Context) error
	RollbackOAuthTx(ctx context.Context) error
}

// Kinds of stored token rows (migration 00006).
const (
	kindCode    = "authorize_code"
	kindPKCE    = "pkce"
	kindAccess  = "access_token"
	kindRefresh = "refresh_token"
)

// errStorage marks a failure of the database, as opposed to a token that is unknown, spent or
// expired: the Authenticator answers the first with a 500 and the second with a 401.
var errStorage = errors.New("oauth storage")

// storage adapts Store to the fosite storage interfaces of the grants this server offers:
// authorization code with PKCE, refresh token (rotated), and introspection of access tokens.
type storage struct {
	st Store
}

var (
	_ fosite.ClientManager          = (*storage)(nil)
	_ oauth2.CoreStorage            = (*storage)(nil)
	_ oauth2.TokenRevocationStorage = (*storage)(nil)
	_ pkce.PKCERequestStorage       = (*storage)(nil)
	_ fositestorage.Transactional   = (*storage)(nil)
)

// signatureHash is what is stored for a token signature: a database copy holds no token material.
func signatureHash(signature string) string {
	sum := sha256.Sum256([]byte(signature))
	return hex.EncodeToString(sum[:])
}

func storageErr(err error) error {
	if errors.Is(err, fault.ErrNotFound) {
		return fosite.ErrNotFound
	}
	return fmt.Errorf("%w: %w", errStorage, err)
}

// GetClient returns a registered client (fosite.ErrNotFound for an unknown id).
func (s *storage) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	c, err := s.st.OAuthClientByID(ctx, id)
	if err != nil {
		return nil, storageErr(err)
	}
	return toFositeClient(c), nil
}

func toFositeClient(c store.OAuthClient) *fosite.DefaultClient {
	return &fosite.DefaultClient{
		ID: c.ID, RedirectURIs: c.RedirectURIs, GrantTypes: c.GrantTypes, ResponseTypes: c.ResponseTypes,
		Scopes: c.Scopes, Public: true,
	}
}

// ClientAssertionJWTValid accepts every JTI: clients are public, so fosite never authenticates one
// with a JWT assertion (it refuses assertions from clients that are not OpenID Connect clients).
func (s *storage) ClientAssertionJWTValid(context.Context, string) error { return nil }

// SetClientAssertionJWT is never reached for public clients; it refuses, should that change.
func (s *storage) SetClientAssertionJWT(context.Context, string, time.Time) error {
	return errors.New("oauth: client assertions are not supported")
}

func (s *storage) create(ctx context.Context, kind, signature string, r fosite.Requester, expiresAt time.Time) error {
	sess, ok := r.GetSession().(*Session)
	if !ok {
		return fmt.Errorf("oauth: session of type %T, want *Session", r.GetSession())
	}
	sessJSON, err := json.Marshal(sess)
	if err != nil {
		return err
	}
	form, err := json.Marshal(r.GetRequestForm())
	if err != nil {
		return err
	}
	if expiresAt.IsZero() {
		// Every grant sets its expiry; a row without one still goes after the longest lifespan.
		expiresAt = time.Now().Add(refreshTokenLifespan)
	}
	err = s.st.CreateOAuthToken(ctx, store.OAuthToken{
		Kind: kind, SignatureHash: signatureHash(signature), RequestID: r.GetID(), ClientID: r.GetClient().GetID(),
		RequestedAt: r.GetRequestedAt(), RequestedScopes: r.GetRequestedScopes(), GrantedScopes: r.GetGrantedScopes(),
		RequestedAudience: r.GetRequestedAudience(), GrantedAudience: r.GetGrantedAudience(),
		Form: form, Session: sessJSON, ExpiresAt: expiresAt,
	})
	if err != nil {
		return storageErr(err)
	}
	return nil
}

// get returns the stored request of a token, hydrating session, and whether the token is active.
func (s *storage) get(ctx context.Context, kind, signature string, session fosite.Session) (fosite.Requester, bool, error) {
	t, err := s.st.OAuthToken(ctx, kind, signatureHash(signature))
	if err != nil {
		return nil, false, storageErr(err)
	}
	client, err := s.GetClient(ctx, t.ClientID)
	if err != nil {
		return nil, false, err
	}
	if session == nil {
		session = &Session{}
	}
	if err := json.Unmarshal(t.Session, session); err != nil {
		return nil, false, fmt.Errorf("%w: session of %s: %w", errStorage, kind, err)
	}
	form := url.Values{}
	if err := json.Unmarshal(t.Form, &form); err != nil {
		return nil, false, fmt.Errorf("%w: form of %s: %w", errStorage, kind, err)
	}
	return &fosite.Request{
		ID: t.RequestID, RequestedAt: t.RequestedAt, Client: client,
		RequestedScope: t.RequestedScopes, GrantedScope: t.GrantedScopes,
		RequestedAudience: t.RequestedAudience, GrantedAudience: t.GrantedAudience,
		Form: form, Session: session,
	}, t.Active, nil
}

// CreateAuthorizeCodeSession stores an authorization code's request.
func (s *storage) CreateAuthorizeCodeSession(ctx context.Context, code string, r fosite.Requester) error {
	return s.create(ctx, kindCode, code, r, r.GetSession().GetExpiresAt(fosite.AuthorizeCode))
}

// GetAuthorizeCodeSession returns a code's request; a spent code returns it with
// fosite.ErrInvalidatedAuthorizeCode, so that fosite revokes the tokens the code gave (RFC 6749 4.1.2).
func (s *storage) GetAuthorizeCodeSession(ctx context.Context, code string, session fosite.Session) (fosite.Requester, error) {
	r, active, err := s.get(ctx, kindCode, code, session)
	if err != nil {
		return nil, err
	}
	if !active {
		return r, fosite.ErrInvalidatedAuthorizeCode
	}
	return r, nil
}

// InvalidateAuthorizeCodeSession marks a code spent; fosite.ErrInvalidatedAuthorizeCode when another
// exchange did first (the token endpoint's codeUsedTwice then answers for it).
func (s *storage) InvalidateAuthorizeCodeSession(ctx context.Context, code string) error {
	err := s.st.DeactivateOAuthToken(ctx, kindCode, signatureHash(code))
	if errors.Is(err, fault.ErrNotFound) {
		return fosite.ErrInvalidatedAuthorizeCode
	}
	if err != nil {
		return storageErr(err)
	}
	return nil
}

// codeUsed reports whether another exchange used the code, and the code's grant (request id). A spent
// code was used. An active code whose PKCE session is gone is being exchanged by another request at
// this moment: fosite deletes that session before it spends the code in the exchange's transaction.
// This request then spends the code itself, waiting for that transaction if it holds the code's row,
// so that the other exchange either fails or has committed its tokens by the time the caller revokes
// the grant. Called after the exchange failed, outside its transaction.
func (s *storage) codeUsed(ctx context.Context, signature string) (string, bool) {
	h := signatureHash(signature)
	t, err := s.st.OAuthToken(ctx, kindCode, h)
	if err != nil {
		return "", false
	}
	if t.Active {
		if _, err := s.st.OAuthToken(ctx, kindPKCE, h); !errors.Is(err, fault.ErrNotFound) {
			return "", false
		}
		if err := s.st.DeactivateOAuthToken(ctx, kindCode, h); err != nil && !errors.Is(err, fault.ErrNotFound) {
			return "", false
		}
	}
	return t.RequestID, true
}

// revokeGrant revokes every token of a grant (request id): its access tokens and refresh tokens.
func (s *storage) revokeGrant(ctx context.Context, requestID string) error {
	return errors.Join(s.RevokeAccessToken(ctx, requestID), s.RevokeRefreshToken(ctx, requestID))
}

// CreatePKCERequestSession stores the code challenge of an authorization code.
func (s *storage) CreatePKCERequestSession(ctx context.Context, code string, r fosite.Requester) error {
	return s.create(ctx, kindPKCE, code, r, r.GetSession().GetExpiresAt(fosite.AuthorizeCode))
}

// GetPKCERequestSession returns the code challenge's request.
func (s *storage) GetPKCERequestSession(ctx context.Context, code string, session fosite.Session) (fosite.Requester, error) {
	r, _, err := s.get(ctx, kindPKCE, code, session)
	return r, err
}

// DeletePKCERequestSession deletes a code challenge once it was checked.
func (s *storage) DeletePKCERequestSession(ctx context.Context, code string) error {
	if err := s.st.DeleteOAuthToken(ctx, kindPKCE, signatureHash(code)); err != nil {
		return storageErr(err)
	}
	return nil
}

// CreateAccessTokenSession stores an access token's request.
func (s *storage) CreateAccessTokenSession(ctx context.Context, signature string, r fosite.Requester) error {
	return s.create(ctx, kindAccess, signature, r, r.GetSession().GetExpiresAt(fosite.AccessToken))
}

// GetAccessTokenSession returns an access token's request (revoked tokens are deleted).
func (s *storage) GetAccessTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	r, _, err := s.get(ctx, kindAccess, signature, session)
	return r, err
}

// DeleteAccessTokenSession deletes an access token.
func (s *storage) DeleteAccessTokenSession(ctx context.Context, signature string) error {
	if err := s.st.DeleteOAuthToken(ctx, kindAccess, signatureHash(signature)); err != nil {
		return storageErr(err)
	}
	return nil
}

// CreateRefreshTokenSession stores a refresh token's request.
func (s *storage) CreateRefreshTokenSession(ctx context.Context, signature, _ string, r fosite.Requester) error {
	return s.create(ctx, kindRefresh, signature, r, r.GetSession().GetExpiresAt(fosite.RefreshToken))
}

// GetRefreshTokenSession returns a refresh token's request; a rotated (spent) one returns it with
// fosite.ErrInactiveToken, so that fosite treats its use as reuse and revokes the grant.
func (s *storage) GetRefreshTokenSession(ctx context.Context, signature string, session fosite.Session) (fosite.Requester, error) {
	r, active, err := s.get(ctx, kindRefresh, signature, session)
	if err != nil {
		return nil, err
	}
	if !active {
		return r, fosite.ErrInactiveToken
	}
	return r, nil
}

// DeleteRefreshTokenSession deletes a refresh token.
func (s *storage) DeleteRefreshTokenSession(ctx context.Context, signature string) error {
	if err := s.st.DeleteOAuthToken(ctx, kindRefresh, signatureHash(signature)); err != nil {
		return storageErr(err)
	}
	return nil
}

// RotateRefreshToken spends the refresh token being used and revokes the access tokens of its grant,
// inside the transaction fosite opened for the refresh. When a concurrent refresh spent the token
// first, it answers fosite.ErrInactiveToken and fosite rolls back: one of two racing uses wins.
func (s *storage) RotateRefreshToken(ctx context.Context, requestID, signature string) error {
	if err := s.st.DeactivateOAuthToken(ctx, kindRefresh, signatureHash(signature)); err != nil {
		if errors.Is(err, fault.ErrNotFound) {
			return fosite.ErrInactiveToken
		}
		return storageErr(err)
	}
	return s.RevokeAccessToken(ctx, requestID)
}

// RevokeRefreshToken spends every refresh token of a grant (RFC 7009 2.1).
func (s *storage) RevokeRefreshToken(ctx context.Context, requestID string) error {
	if err := s.st.DeactivateOAuthGrant(ctx, kindRefresh, requestID); err != nil {
		return storageErr(err)
	}
	return nil
}

// RevokeAccessToken deletes every access token of a grant.
func (s *storage) RevokeAccessToken(ctx context.Context, requestID string) error {
	if err := s.st.DeleteOAuthGrant(ctx, kindAccess, requestID); err != nil {
		return storageErr(err)
	}
	return nil
}

// BeginTX starts the transaction of a token exchange or refresh.
func (s *storage) BeginTX(ctx context.Context) (context.Context, error) {
	return s.st.BeginOAuthTx(ctx)
}

// Commit commits it.
func (s *storage) Commit(ctx context.Context) error { return s.st.CommitOAuthTx(ctx) }

// Rollback rolls it back.
func (s *storage) Rollback(ctx context.Context) error { return s.st.RollbackOAuthTx(ctx) }
