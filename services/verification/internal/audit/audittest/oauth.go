package audittest

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// OAuth metadata paths: RFC 9728 protected-resource metadata for the resource /mcp (the
// well-known prefix inserted before the resource's path) and RFC 8414 authorization-server
// metadata for an issuer without a path.
const (
	ProtectedResourcePath   = "/.well-known/oauth-protected-resource" + EndpointPath
	AuthorizationServerPath = "/.well-known/oauth-authorization-server"
)

// oauthDefects switches the metadata's deviations.
type oauthDefects struct {
	prmResource string // the PRM's resource instead of the endpoint's URL
	noPKCE      bool   // AS metadata without code_challenge_methods_supported
}

// Protected is Correct behind bearer authentication. A request to /mcp without
// "Authorization: Bearer <token>" is answered 401 with
// WWW-Authenticate: Bearer resource_metadata="https://HOST/.well-known/oauth-protected-resource/mcp";
// that document (RFC 9728) names the endpoint's exact URL as its resource and the origin as its
// authorization server, whose RFC 8414 metadata (authorization code with PKCE S256) is served at
// /.well-known/oauth-authorization-server. The metadata and the server card need no token. The
// origin is learnt from the request's Host, since the port is known only once the server listens.
func Protected(token string) http.Handler { return protect(token, Correct(), oauthDefects{}) }

func protect(token string, inner http.Handler, d oauthDefects) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := "https://" + r.Host
		switch r.URL.Path {
		case ProtectedResourcePath:
			w.Header().Set("Strict-Transport-Security", hsts)
			resource := origin + EndpointPath
			if d.prmResource != "" {
				resource = d.prmResource
			}
			writeJSON(w, http.StatusOK, map[string]any{
				"resource":                 resource,
				"authorization_servers":    []string{origin},
				"bearer_methods_supported": []string{"header"},
				"scopes_supported":         []string{"weather.read", "alerts.write"},
				"resource_name":            ServerTitle,
			})
		case AuthorizationServerPath:
			w.Header().Set("Strict-Transport-Security", hsts)
			md := map[string]any{
				"issuer":                                origin,
				"authorization_endpoint":                origin + "/oauth/authorize",
				"token_endpoint":                        origin + "/oauth/token",
				"registration_endpoint":                 origin + "/oauth/register",
				"scopes_supported":                      []string{"weather.read", "alerts.write"},
				"response_types_supported":              []string{"code"},
				"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
				"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic"},
				"code_challenge_methods_supported":      []string{"S256"},
			}
			if d.noPKCE {
				delete(md, "code_challenge_methods_supported")
			}
			writeJSON(w, http.StatusOK, md)
		case EndpointPath:
			if !bearer(r, token) {
				w.Header().Set("Strict-Transport-Security", hsts)
				challenge := `Bearer resource_metadata="` + origin + ProtectedResourcePath + `"`
				if r.Header.Get("Authorization") != "" {
					challenge += `, error="invalid_token"`
				}
				w.Header().Set("WWW-Authenticate", challenge)
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			inner.ServeHTTP(w, r)
		default:
			inner.ServeHTTP(w, r)
		}
	})
}

// bearer reports whether r carries the token in an Authorization: Bearer header.
func bearer(r *http.Request, token string) bool {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return token != "" && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(cred)), []byte(token)) == 1
}
