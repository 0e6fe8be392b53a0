package oauth

import (
	"context"
	"errors"
	"strings"

	"github.com/ory/fosite"

	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
)

// accessTokenPrefix starts every access token this server issues (fosite's HMAC strategy prefixes
// them "ory_at_"). API keys start "trial_", "sk_" or "jwt_" and legacy JWTs have no such prefix, so
// the prefix alone picks the path: an API key costs no more than before.
const accessTokenPrefix = "ory_at_"

// Authenticator authenticates bearer tokens: this server's access tokens (introspected by fosite:
// HMAC, expiry, not revoked) become the workspace key their grant is bound to; every other token
// goes to keys.Service. It satisfies the bearer interface of the API interceptor and the MCP
// endpoint.
type Authenticator struct {
	provider fosite.OAuth2Provider
	keys     Keys
}

// Authenticate returns the key behind token. An unknown, expired or revoked access token, or one
// whose key was revoked, is keys.ErrUnauthenticated, like a bad API key.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (keys.Key, error) {
	if !strings.HasPrefix(token, accessTokenPrefix) {
		return a.keys.Authenticate(ctx, token)
	}
	_, ar, err := a.provider.IntrospectToken(ctx, token, fosite.AccessToken, &Session{})
	if err != nil {
		if errors.Is(err, errStorage) {
			return keys.Key{}, err
		}
		return keys.Key{}, keys.ErrUnauthenticated
	}
	sess, ok := ar.GetSession().(*Session)
	if !ok || sess.KeyID == "" {
		return keys.Key{}, keys.ErrUnauthenticated
	}
	return a.keys.ByID(ctx, sess.KeyID)
}
