package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/ory/fosite"
)

// metadataDoc is the authorization server metadata (RFC 8414 section 2).
type metadataDoc struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
}

// metadataJSON is the metadata document of issuer. go-sdk's oauthex.AuthServerMeta always writes
// jwks_uri, which this server, with opaque tokens, does not have.
func metadataJSON(issuer string) []byte {
	b, err := json.Marshal(metadataDoc{
		Issuer:                            issuer,
		AuthorizationEndpoint:             issuer + AuthorizePath,
		TokenEndpoint:                     issuer + TokenPath,
		RegistrationEndpoint:              issuer + RegisterPath,
		ScopesSupported:                   Scopes,
		ResponseTypesSupported:            []string{"code"},
		ResponseModesSupported:            []string{"query"},
		GrantTypesSupported:               []string{"authorization_code", "refresh_token"},
		TokenEndpointAuthMethodsSupported: []string{"none"},
		CodeChallengeMethodsSupported:     []string{"S256"},
	})
	if err != nil {
		panic("oauth: metadata document: " + err.Error()) // strings and string slices always marshal
	}
	return b
}

// metadata serves GET /.well-known/oauth-authorization-server, written once by New. It does not
// depend on the identity provider: without one the document is the same and sign-in answers 503.
func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(s.metadataDoc)
}

// consentPage asks the signed-in user to let a client act as their workspace. Clients register
// themselves (RFC 7591), so without this step anyone could register a client with their own
// redirect URI and have a signed-in user's browser hand them a code (a confused deputy).
var consentPage = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Authorize {{.Client}}</title></head>
<body>
<h1>Authorize {{.Client}}</h1>
<p>{{.Client}} asks to score claims with the workspace of <strong>{{.Email}}</strong>. Its calls count
against that workspace's usage. After you answer, your browser goes to <code>{{.RedirectHost}}</code>.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="consent_token" value="{{.Token}}">
<button type="submit" name="consent" value="allow">Allow</button>
<button type="submit" name="consent" value="deny">Deny</button>
</form>
</body></html>
`))

// authorize serves /oauth/authorize. GET validates the request (fosite) and, once the user is
// signed in through the identity provider, shows the consent page; its form POSTs the same request
// back with the user's answer, which issues the code (or access_denied) to the client's redirect URI.
func (s *Server) authorize(ws Workspaces) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		ar, err := s.provider.NewAuthorizeRequest(ctx, r)
		if err != nil {
			s.logFositeError("authorize request", err)
			s.provider.WriteAuthorizeError(ctx, w, ar, err)
			return
		}
		// fosite checks PKCE when it issues the code, after consent; a request it would refuse is
		// refused here already, so that nobody is asked to consent to it.
		if f := ar.GetRequestForm(); f.Get("code_challenge") == "" || f.Get("code_challenge_method") != "S256" {
			s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrInvalidRequest.WithHint("PKCE is required: code_challenge with code_challenge_method S256."))
			return
		}
		signin, email, err := s.bridge.signedIn(r)
		if err != nil {
			s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err))
			return
		}
		if email == "" {
			if r.Method != http.MethodGet {
				s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrLoginRequired)
				return
			}
			http.Redirect(w, r, LoginPath+"?"+url.Values{"return_to": {r.URL.RequestURI()}}.Encode(), http.StatusFound)
			return
		}
		token := s.consentToken(signin, ar)
		if r.Method == http.MethodGet {
			redirect := ar.GetRedirectURI()
			name, _ := s.register.name(ctx, ar.GetClient().GetID())
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_ = consentPage.Execute(w, map[string]string{
				"Client": name, "Email": email, "RedirectHost": redirect.Host,
				"Action": AuthorizePath + "?" + r.URL.RawQuery, "Token": token,
			})
			return
		}
		if !hmac.Equal([]byte(r.PostForm.Get("consent_token")), []byte(token)) {
			s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrRequestForbidden.WithHint("The consent form expired or was not this server's."))
			return
		}
		if r.PostForm.Get("consent") != "allow" {
			s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrAccessDenied.WithHint("The user denied the request."))
			return
		}
		keyID, err := ws.AgentKey(ctx, email)
		if err != nil {
			s.provider.WriteAuthorizeError(ctx, w, ar, fosite.ErrServerError.WithWrap(err).WithDebug(err.Error()))
			s.log.Error("oauth authorize: workspace key", "error", err)
			return
		}
		// fosite already refused scopes the client was not registered for; what is asked is granted.
		for _, scope := range ar.GetRequestedScopes() {
			ar.GrantScope(scope)
		}
		for _, aud := range ar.GetRequestedAudience() {
			ar.GrantAudience(aud)
		}
		resp, err := s.provider.NewAuthorizeResponse(ctx, ar, &Session{Subject: email, KeyID: keyID})
		if err != nil {
			s.logFositeError("authorize response", err)
			s.provider.WriteAuthorizeError(ctx, w, ar, err)
			return
		}
		s.provider.WriteAuthorizeResponse(ctx, w, ar, resp)
	})
}

// consentToken binds a consent form to the browser's sign-in session and to the authorize request
// (client, redirect URI, state, PKCE challenge, scopes), so that another site can neither post it
// for the user nor swap the request under it.
func (s *Server) consentToken(signin string, ar fosite.AuthorizeRequester) string {
	m := hmac.New(sha256.New, s.secret)
	f := ar.GetRequestForm()
	for _, part := range []string{"consent", signin, ar.GetClient().GetID(), ar.GetRedirectURI().String(), ar.GetState(),
		f.Get("code_challenge"), strings.Join(ar.GetRequestedScopes(), " ")} {
		m.Write([]byte(part))
		m.Write([]byte{0})
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// token serves POST /oauth/token: the authorization code (PKCE verifier required) and refresh token
// grants. Errors are RFC 6749 section 5.2 JSON.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ar, err := s.provider.NewAccessRequest(ctx, r, &Session{})
	if err != nil {
		err = s.codeUsedTwice(ctx, r, err)
		s.logFositeError("token request", err)
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	resp, err := s.provider.NewAccessResponse(ctx, ar)
	if err != nil {
		err = s.codeUsedTwice(ctx, r, err)
		s.logFositeError("token response", err)
		s.provider.WriteAccessError(ctx, w, ar, err)
		return
	}
	s.provider.WriteAccessResponse(ctx, w, ar, resp)
}

// codeUsedTwice turns the failure of an authorization code exchange into invalid_grant, and revokes
// every token the code gave (RFC 6749 4.1.2), when another exchange used the code. fosite does both
// only when its first read of the code finds it spent; exchanges that race past that read fail later,
// on the PKCE session the other deleted or on spending the code, as server errors or with nothing
// revoked. Of concurrent exchanges of one code, at most one gets tokens, and those are revoked.
func (s *Server) codeUsedTwice(ctx context.Context, r *http.Request, err error) error {
	if r.PostForm.Get("grant_type") != "authorization_code" {
		return err
	}
	code := r.PostForm.Get("code")
	if code == "" {
		return err
	}
	requestID, used := s.tokens.codeUsed(ctx, s.codes.AuthorizeCodeSignature(ctx, code))
	if !used {
		return err
	}
	if revokeErr := s.tokens.revokeGrant(ctx, requestID); revokeErr != nil {
		s.log.Error("oauth: revoking the grant of a code used twice failed", "error", revokeErr)
	}
	return fosite.ErrInvalidGrant.WithHint("The authorization code has already been used.")
}

// logFositeError logs server-side failures (the client only sees server_error); a client's own
// mistakes are not worth a log line.
func (s *Server) logFositeError(what string, err error) {
	rfc := fosite.ErrorToRFC6749Error(err)
	if rfc.StatusCode() >= 500 {
		s.log.Error("oauth "+what+" failed", "error", rfc.ErrorField, "debug", rfc.GetDescription()+" "+rfc.DebugField)
	}
}
