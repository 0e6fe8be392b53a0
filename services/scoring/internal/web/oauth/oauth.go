// Package oauth is the scoring service's OAuth 2 authorization server for agent (MCP) clients, built
// on github.com/ory/fosite: RFC 8414 metadata, RFC 7591 dynamic registration of public clients, the
// authorization code grant with PKCE S256 required, rotated refresh tokens, and an Authenticator that
// accepts its access tokens wherever an API key is accepted. Users sign in through an OpenID Connect
// identity provider (bridge.go); a grant acts as the user's workspace key (the control plane's
// AgentKey), so calls with its tokens are limited and metered as that key.
package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/compose"
	"github.com/ory/fosite/handler/oauth2"

	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
)

// Paths of the routes this package serves.
const (
	MetadataPath  = "/.well-known/oauth-authorization-server"
	AuthorizePath = "/oauth/authorize"
	TokenPath     = "/oauth/token"
	RegisterPath  = "/oauth/register"
	LoginPath     = "/oauth/login"
	CallbackPath  = "/oauth/callback"
)

// Scopes a client may ask for. "scoring" names what a token is for (the workspace key's own scopes
// still decide what it may call); "offline_access" is the scope MCP clients add to ask for a
// refresh token. fosite refuses any other scope (invalid_scope).
var Scopes = []string{"scoring", "offline_access"}

// Lifespans. Access tokens are short-lived (15 minutes) so that a leaked one is worth little; an
// agent refreshes, and every refresh rotates the refresh token (a reused one revokes the grant).
const (
	DefaultAccessTokenLifespan = 15 * time.Minute
	refreshTokenLifespan       = 30 * 24 * time.Hour
	authorizeCodeLifespan      = 10 * time.Minute
)

// Workspaces resolves the signed-in user's workspace key: the control plane's AgentKey finds or
// creates the workspace owned by email and returns the id of its agent key, issuing one if needed.
type Workspaces interface {
	AgentKey(ctx context.Context, email string) (keyID string, err error)
}

// Keys is what the Authenticator needs of keys.Service.
type Keys interface {
	Authenticate(ctx context.Context, token string) (keys.Key, error)
	ByID(ctx context.Context, id string) (keys.Key, error)
}

// OIDC is the identity provider the sign-in bridge delegates to. All three fields are set, or none
// (the bridge then answers 503).
type OIDC struct {
	Issuer       string
	ClientID     string
	ClientSecret string
}

// Configured reports whether an identity provider is set.
func (o OIDC) Configured() bool { return o.Issuer != "" }

// Config configures the authorization server.
type Config struct {
	// Issuer is the server's issuer identifier and the base of its endpoints: the service's public URL.
	Issuer string
	// Secret keys the HMAC of tokens (at least 32 bytes); replicas must share it (DeriveSecret).
	Secret []byte
	// OIDC is the identity provider of the sign-in bridge.
	OIDC OIDC
	// AccessTokenLifespan defaults to DefaultAccessTokenLifespan.
	AccessTokenLifespan time.Duration
	// HTTPClient reaches the identity provider (nil: a client with a 10 s timeout).
	HTTPClient *http.Client
	Log        *slog.Logger
}

// DeriveSecret derives the token HMAC secret from a secret every replica has: SCORING_OAUTH_SECRET,
// or else the admin token, as keys.DeriveJWTSecret does for legacy JWTs. The replicas then verify
// each other's tokens, no token is keyed with the admin token itself, and the key is 32 bytes
// whatever the length of the setting. Changing that secret invalidates every OAuth token.
func DeriveSecret(secret string) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("scoring oauth token hmac v1"))
	return m.Sum(nil)
}

// Server is the authorization server.
type Server struct {
	secret      []byte // keys the consent tokens
	issuer      string
	metadataDoc []byte
	st          Store
	provider    fosite.OAuth2Provider
	tokens      *storage                // fosite's storage: the token endpoint revokes a grant through it
	codes       *oauth2.HMACSHAStrategy // fosite's token strategy: the signature of a code is its storage key
	bridge      *bridge
	auth        *Authenticator
	log         *slog.Logger
	register    *registrar
}

// New builds the server. Routes are served once Mount is called; the Authenticator works at once.
// A Secret shorter than 32 bytes is a programming error (DeriveSecret makes 32): New panics.
func New(cfg Config, st Store, k Keys) *Server {
	if len(cfg.Secret) < 32 {
		panic("oauth: the token secret must be at least 32 bytes")
	}
	if cfg.AccessTokenLifespan == 0 {
		cfg.AccessTokenLifespan = DefaultAccessTokenLifespan
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	issuer := strings.TrimRight(cfg.Issuer, "/")
	fc := &fosite.Config{
		AccessTokenLifespan:   cfg.AccessTokenLifespan,
		RefreshTokenLifespan:  refreshTokenLifespan,
		AuthorizeCodeLifespan: authorizeCodeLifespan,
		GlobalSecret:          cfg.Secret,
		TokenURL:              issuer + TokenPath,
		// PKCE with S256 for every client (OAuth 2.1; the MCP authorization spec requires it).
		EnforcePKCE:                    true,
		EnforcePKCEForPublicClients:    true,
		EnablePKCEPlainChallengeMethod: false,
		// A refresh token with every grant, whatever the scope: agents run unattended.
		RefreshTokenScopes: []string{},
		ScopeStrategy:      fosite.ExactScopeStrategy,
		// Redirect URIs: https, or http on a loopback host (RFC 8252 7.3); no custom schemes.
		RedirectSecureChecker: fosite.IsRedirectURISecureStrict,
	}
	stg := &storage{st: st}
	strategy := compose.NewOAuth2HMACStrategy(fc)
	provider := compose.Compose(fc, stg, strategy,
		compose.OAuth2AuthorizeExplicitFactory,
		compose.OAuth2RefreshTokenGrantFactory,
		compose.OAuth2PKCEFactory,
		compose.OAuth2TokenIntrospectionFactory,
	)
	s := &Server{
		secret: cfg.Secret, issuer: issuer, metadataDoc: metadataJSON(issuer), st: st, provider: provider, tokens: stg, codes: strategy, log: cfg.Log,
		bridge:   newBridge(cfg.OIDC, issuer+CallbackPath, cfg.HTTPClient, st, cfg.Log),
		register: newRegistrar(st, cfg.Log),
	}
	s.auth = &Authenticator{provider: provider, keys: k}
	return s
}

// Authenticator returns the bearer authenticator that accepts this server's access tokens and,
// for every other token, falls back to keys.Service.
func (s *Server) Authenticator() *Authenticator { return s.auth }

// Mux is where Mount adds the routes (serve.Server).
type Mux interface {
	Handle(pattern string, h http.Handler)
}

// Mount serves the metadata, registration, authorize, token and sign-in routes on mux. Grants act
// as the workspace key that ws resolves for the signed-in user.
func (s *Server) Mount(mux Mux, ws Workspaces) {
	mux.Handle("GET "+MetadataPath, http.HandlerFunc(s.metadata))
	mux.Handle("POST "+RegisterPath, http.HandlerFunc(s.register.serve))
	authorize := s.authorize(ws)
	mux.Handle("GET "+AuthorizePath, authorize)
	mux.Handle("POST "+AuthorizePath, authorize)
	mux.Handle("POST "+TokenPath, http.HandlerFunc(s.token))
	mux.Handle("GET "+LoginPath, http.HandlerFunc(s.bridge.login))
	mux.Handle("GET "+CallbackPath, http.HandlerFunc(s.bridge.callback))
}

// PurgeExpired deletes long-expired tokens and sign-in sessions; run it periodically.
func (s *Server) PurgeExpired(ctx context.Context) {
	n, err := s.st.PurgeExpiredOAuth(ctx)
	if err != nil {
		s.log.Warn("oauth purge failed", "error", err)
		return
	}
	if n > 0 {
		s.log.Debug("oauth purge", "rows", n)
	}
}
