package app

import (
	"google.golang.org/grpc"

	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/scoring/internal/api"
	"github.com/trustlayer/trustlayer/services/scoring/internal/controlplane"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
	"github.com/trustlayer/trustlayer/services/scoring/internal/web/oauth"
)

// credentials are what authentication shares with the routes: the key service (its cache of keys is
// the one the key and billing routes update), the control plane (workspace sessions) and the OAuth
// authorization server. The platform asks for the interceptors once its database is open and before
// register runs, so they are built there, once, and register serves them.
type credentials struct {
	settings   Settings
	adminToken string
	keys       *keys.Service
	workspaces *controlplane.Service
	oauth      *oauth.Server
}

// interceptors is the platform's Spec.Unary: request ids first, then authentication.
func (c *credentials) interceptors(p *platform.Platform) []grpc.UnaryServerInterceptor {
	st := store.New(p.Pool)
	c.keys = keys.New(st, jwtSecret(c.settings, c.adminToken))
	c.workspaces = controlplane.New(st, keys.NewWorkspaceKeys(c.keys, st, controlplane.MaxActiveKeys), c.settings.PublicURL)
	c.oauth = oauth.New(oauth.Config{
		Issuer: c.settings.PublicURL, Secret: oauthSecret(c.settings, c.adminToken), Log: p.Log,
		OIDC: oauth.OIDC{Issuer: c.settings.OIDCIssuer, ClientID: c.settings.OIDCClientID, ClientSecret: c.settings.OIDCClientSecret},
	}, st, c.keys)
	return []grpc.UnaryServerInterceptor{api.RequestIDs(), api.Authenticate(c.adminToken, c.oauth.Authenticator(), api.WithSessions(c.workspaces))}
}

func jwtSecret(s Settings, adminToken string) []byte {
	if s.JWTSecret != "" {
		return []byte(s.JWTSecret)
	}
	return keys.DeriveJWTSecret(adminToken)
}

// oauthSecret keys the OAuth server's tokens: SCORING_OAUTH_SECRET, or the admin token when unset,
// hashed either way so that fosite always gets a 32-byte key.
func oauthSecret(s Settings, adminToken string) []byte {
	secret := s.OAuthSecret
	if secret == "" {
		secret = adminToken
	}
	return oauth.DeriveSecret(secret)
}
