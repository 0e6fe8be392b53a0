package oauth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ory/fosite"
	"golang.org/x/time/rate"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
)

// Registration bounds: a client is a few redirect URIs and a name; anyone may register, so a
// request is small and the rate per replica is bounded (a flood of registrations fills a table).
const (
	maxRegistrationBytes = 16 << 10
	maxRedirectURIs      = 10
	maxRedirectURILen    = 2000
	maxClientNameLen     = 200
)

// registrationRequest is the client metadata this server reads (RFC 7591 section 2); other
// members are ignored, as the RFC allows.
type registrationRequest struct {
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientName              string   `json:"client_name"`
	Scope                   string   `json:"scope"`
}

// registrationResponse is the client information response (RFC 7591 section 3.2.1).
type registrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	ClientName              string   `json:"client_name,omitempty"`
	Scope                   string   `json:"scope"`
}

// registrationError is an RFC 7591 section 3.2.2 error.
type registrationError struct {
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func (e *registrationError) Error() string { return e.Code + ": " + e.Description }

func invalidMetadata(format string, args ...any) error {
	return &registrationError{Code: "invalid_client_metadata", Description: fmt.Sprintf(format, args...)}
}

type registrar struct {
	st    Store
	limit *rate.Limiter
	log   *slog.Logger
}

func newRegistrar(st Store, log *slog.Logger) *registrar {
	return &registrar{st: st, limit: rate.NewLimiter(5, 20), log: log}
}

// serve handles POST /oauth/register: dynamic registration of a public client (no secret; token
// endpoint auth "none"; PKCE S256 at the authorize step).
func (g *registrar) serve(w http.ResponseWriter, r *http.Request) {
	if !g.limit.Allow() {
		w.Header().Set("Retry-After", "1")
		gateway.WriteJSON(w, http.StatusTooManyRequests, registrationError{Code: "temporarily_unavailable", Description: "Too many client registrations; retry in a second."})
		return
	}
	var req registrationRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxRegistrationBytes)).Decode(&req); err != nil {
		gateway.WriteJSON(w, http.StatusBadRequest, registrationError{Code: "invalid_client_metadata", Description: "The body is not a JSON object of client metadata (at most 16 KiB)."})
		return
	}
	c, err := validateRegistration(req)
	var rerr *registrationError
	if errors.As(err, &rerr) {
		gateway.WriteJSON(w, http.StatusBadRequest, rerr)
		return
	}
	c.ID = "mcp_" + rand.Text()
	c, err = g.st.CreateOAuthClient(r.Context(), c)
	if err != nil {
		g.log.Error("oauth client registration failed", "error", err)
		gateway.WriteJSON(w, http.StatusInternalServerError, registrationError{Code: "server_error", Description: "The client could not be registered; retry later."})
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	gateway.WriteJSON(w, http.StatusCreated, registrationResponse{
		ClientID: c.ID, ClientIDIssuedAt: c.CreatedAt.Unix(), RedirectURIs: c.RedirectURIs, TokenEndpointAuthMethod: "none",
		GrantTypes: c.GrantTypes, ResponseTypes: c.ResponseTypes, ClientName: c.Name, Scope: strings.Join(c.Scopes, " "),
	})
}

// validateRegistration checks client metadata and fills in defaults. Redirect URIs must be https,
// or http on a loopback host (RFC 8252 7.3: a native client listens on a port of its own); custom
// schemes, fragments and other http hosts are refused (RFC 6749 3.1.2, OAuth 2.1).
func validateRegistration(req registrationRequest) (store.OAuthClient, error) {
	c := store.OAuthClient{Name: strings.TrimSpace(req.ClientName), Scopes: Scopes}
	if len(req.RedirectURIs) == 0 || len(req.RedirectURIs) > maxRedirectURIs {
		return c, &registrationError{Code: "invalid_redirect_uri", Description: fmt.Sprintf("redirect_uris must list 1 to %d URIs", maxRedirectURIs)}
	}
	for _, raw := range req.RedirectURIs {
		u, err := url.Parse(raw)
		if len(raw) > maxRedirectURILen || err != nil || !fosite.IsValidRedirectURI(u) ||
			!fosite.IsRedirectURISecureStrict(context.Background(), u) || u.User != nil {
			return c, &registrationError{Code: "invalid_redirect_uri", Description: fmt.Sprintf(
				"redirect URI %q is not allowed: use https, or http on a loopback host (127.0.0.1, [::1], localhost), with no fragment", truncate(raw, 100))}
		}
		c.RedirectURIs = append(c.RedirectURIs, raw)
	}
	if m := req.TokenEndpointAuthMethod; m != "" && m != "none" {
		return c, invalidMetadata("token_endpoint_auth_method %q is not supported: clients are public (\"none\") and use PKCE", truncate(m, 50))
	}
	c.GrantTypes = req.GrantTypes
	if len(c.GrantTypes) == 0 {
		c.GrantTypes = []string{"authorization_code", "refresh_token"}
	}
	for _, g := range c.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return c, invalidMetadata("grant type %q is not supported (authorization_code, refresh_token)", truncate(g, 50))
		}
	}
	if !slices.Contains(c.GrantTypes, "authorization_code") {
		return c, invalidMetadata("grant_types must include authorization_code")
	}
	c.ResponseTypes = req.ResponseTypes
	if len(c.ResponseTypes) == 0 {
		c.ResponseTypes = []string{"code"}
	}
	if len(c.ResponseTypes) != 1 || c.ResponseTypes[0] != "code" {
		return c, invalidMetadata("response_types must be [\"code\"]")
	}
	if len(c.Name) > maxClientNameLen {
		return c, invalidMetadata("client_name is longer than %d characters", maxClientNameLen)
	}
	for _, sc := range strings.Fields(req.Scope) {
		if !slices.Contains(Scopes, sc) {
			return c, invalidMetadata("scope %q is not supported (%s)", truncate(sc, 50), strings.Join(Scopes, ", "))
		}
	}
	return c, nil
}

// name is a client's display name for the consent page.
func (g *registrar) name(ctx context.Context, clientID string) (string, error) {
	c, err := g.st.OAuthClientByID(ctx, clientID)
	if err != nil {
		return "An unknown client", err
	}
	if c.Name == "" {
		return "An unnamed client", nil
	}
	return c.Name, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
