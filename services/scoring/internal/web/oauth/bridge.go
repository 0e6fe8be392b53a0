package oauth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
)

// Browser sessions of the sign-in bridge. Both are short: a sign-in is a few redirects, and a
// signed-in browser only needs to last until the user answered the consent page.
const (
	loginCookie    = "scoring_oauth_login"
	signinCookie   = "scoring_oauth_signin"
	loginLifespan  = 10 * time.Minute
	signinLifespan = 10 * time.Minute
)

// bridge signs users in at the identity provider: OpenID Connect authorization code flow with PKCE
// (go-oidc verifies the ID token: signature, issuer, audience, expiry; the nonce and state are
// checked here), then a short sign-in session for this browser.
type bridge struct {
	cfg         OIDC
	redirectURL string
	secure      bool // cookies only over https when the public URL is https
	client      *http.Client
	st          Store
	log         *slog.Logger

	mu       sync.Mutex
	provider *oidc.Provider // discovered on first use, so that the service starts while the IdP is down
}

func newBridge(cfg OIDC, redirectURL string, client *http.Client, st Store, log *slog.Logger) *bridge {
	return &bridge{cfg: cfg, redirectURL: redirectURL, secure: strings.HasPrefix(redirectURL, "https://"), client: client, st: st, log: log}
}

func writeDetail(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Cache-Control", "no-store")
	gateway.WriteJSON(w, status, map[string]any{"detail": detail})
}

const notConfigured = "Sign-in through an identity provider is not configured on this deployment " +
	"(SCORING_OIDC_ISSUER, SCORING_OIDC_CLIENT_ID, SCORING_OIDC_CLIENT_SECRET); use an API key instead."

// oauthConfig discovers the identity provider (once) and returns the client configuration.
func (b *bridge) oauthConfig() (*oidc.Provider, *oauth2.Config, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.provider == nil {
		// The provider keeps this context for its later key-set fetches, so it must outlive any request.
		p, err := oidc.NewProvider(oidc.ClientContext(context.Background(), b.client), b.cfg.Issuer)
		if err != nil {
			return nil, nil, err
		}
		b.provider = p
	}
	return b.provider, &oauth2.Config{
		ClientID: b.cfg.ClientID, ClientSecret: b.cfg.ClientSecret, Endpoint: b.provider.Endpoint(),
		RedirectURL: b.redirectURL, Scopes: []string{oidc.ScopeOpenID, "email"},
	}, nil
}

// login serves GET /oauth/login: it starts a sign-in at the identity provider and, once the user is
// back, resumes the authorize request named by return_to (when it names one of this server's).
func (b *bridge) login(w http.ResponseWriter, r *http.Request) {
	if !b.cfg.Configured() {
		writeDetail(w, http.StatusServiceUnavailable, notConfigured)
		return
	}
	_, oc, err := b.oauthConfig()
	if err != nil {
		b.log.Warn("oauth sign-in: identity provider discovery failed", "error", err)
		writeDetail(w, http.StatusServiceUnavailable, "The identity provider cannot be reached; retry in a minute.")
		return
	}
	state, nonce, verifier := rand.Text(), rand.Text(), oauth2.GenerateVerifier()
	if err := b.st.CreateOAuthBrowserSession(r.Context(), store.OAuthBrowserSession{
		Kind: "login", IDHash: auth.HashAPIKey(state), Nonce: nonce, Verifier: verifier,
		ReturnTo: returnTo(r.URL.Query().Get("return_to")), ExpiresAt: time.Now().Add(loginLifespan),
	}); err != nil {
		b.log.Error("oauth sign-in: storing the login failed", "error", err)
		writeDetail(w, http.StatusInternalServerError, "The sign-in could not be started; retry later.")
		return
	}
	// The state is also this browser's cookie: the callback accepts only the browser that started
	// the sign-in (login CSRF), and the row is taken once.
	b.setCookie(w, loginCookie, state, CallbackPath, loginLifespan)
	http.Redirect(w, r, oc.AuthCodeURL(state, oidc.Nonce(nonce), oauth2.S256ChallengeOption(verifier)), http.StatusFound)
}

// returnTo keeps a return_to that is this server's authorize endpoint, and drops anything else (an
// open redirect otherwise).
func returnTo(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Path != AuthorizePath || len(raw) > 8<<10 {
		return ""
	}
	return AuthorizePath + "?" + u.RawQuery
}

var signedInPage = template.Must(template.New("signedin").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Signed in</title></head>
<body><p>Signed in as {{.}}. You can return to your agent.</p></body></html>
`))

// callback serves GET /oauth/callback, where the identity provider sends the browser back.
func (b *bridge) callback(w http.ResponseWriter, r *http.Request) {
	if !b.cfg.Configured() {
		writeDetail(w, http.StatusServiceUnavailable, notConfigured)
		return
	}
	ctx := r.Context()
	q := r.URL.Query()
	if q.Get("error") != "" {
		writeDetail(w, http.StatusBadRequest, "The identity provider did not sign you in; start again from your agent.")
		return
	}
	state := q.Get("state")
	cookie, err := r.Cookie(loginCookie)
	if err != nil || state == "" || !hmac.Equal([]byte(cookie.Value), []byte(state)) {
		writeDetail(w, http.StatusBadRequest, "This sign-in was not started in this browser, or it expired; start again from your agent.")
		return
	}
	b.setCookie(w, loginCookie, "", CallbackPath, -1)
	login, err := b.st.TakeOAuthBrowserSession(ctx, "login", auth.HashAPIKey(state))
	if errors.Is(err, fault.ErrNotFound) {
		writeDetail(w, http.StatusBadRequest, "This sign-in was already used, or it expired; start again from your agent.")
		return
	}
	if err != nil {
		b.log.Error("oauth sign-in: reading the login failed", "error", err)
		writeDetail(w, http.StatusInternalServerError, "The sign-in could not be completed; retry later.")
		return
	}
	provider, oc, err := b.oauthConfig()
	if err != nil {
		b.log.Warn("oauth sign-in: identity provider discovery failed", "error", err)
		writeDetail(w, http.StatusServiceUnavailable, "The identity provider cannot be reached; retry in a minute.")
		return
	}
	email, err := b.verify(oidc.ClientContext(ctx, b.client), provider, oc, q.Get("code"), login)
	if err != nil {
		b.log.Warn("oauth sign-in refused", "error", err)
		writeDetail(w, http.StatusBadRequest, err.Error())
		return
	}
	signin := rand.Text() + rand.Text()
	if err := b.st.CreateOAuthBrowserSession(ctx, store.OAuthBrowserSession{
		Kind: "signin", IDHash: auth.HashAPIKey(signin), Email: email, ExpiresAt: time.Now().Add(signinLifespan),
	}); err != nil {
		b.log.Error("oauth sign-in: storing the session failed", "error", err)
		writeDetail(w, http.StatusInternalServerError, "The sign-in could not be completed; retry later.")
		return
	}
	b.setCookie(w, signinCookie, signin, "/oauth/", signinLifespan)
	if login.ReturnTo != "" {
		http.Redirect(w, r, login.ReturnTo, http.StatusFound)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = signedInPage.Execute(w, email)
}

// errSignIn is a sign-in the bridge refuses; its text is written for the user.
type errSignIn string

func (e errSignIn) Error() string { return string(e) }

// verify exchanges the code (with the PKCE verifier), verifies the ID token and its nonce, and
// returns the user's e-mail, which must be verified at the identity provider: the e-mail is what
// names the user's workspace.
func (b *bridge) verify(ctx context.Context, provider *oidc.Provider, oc *oauth2.Config, code string, login store.OAuthBrowserSession) (string, error) {
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(login.Verifier))
	if err != nil {
		b.log.Warn("oauth sign-in: code exchange failed", "error", err)
		return "", errSignIn("The identity provider did not accept the sign-in; start again from your agent.")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", errSignIn("The identity provider returned no ID token.")
	}
	idt, err := provider.Verifier(&oidc.Config{ClientID: b.cfg.ClientID}).Verify(ctx, raw)
	if err != nil {
		b.log.Warn("oauth sign-in: ID token rejected", "error", err)
		return "", errSignIn("The identity provider's ID token did not verify.")
	}
	if !hmac.Equal([]byte(idt.Nonce), []byte(login.Nonce)) {
		return "", errSignIn("The identity provider's ID token is not for this sign-in (nonce).")
	}
	var claims struct {
		Email         string `json:"email"`
		EmailVerified any    `json:"email_verified"`
	}
	if err := idt.Claims(&claims); err != nil {
		return "", errSignIn("The identity provider's ID token has unreadable claims.")
	}
	// Some providers send email_verified as a string.
	verified := claims.EmailVerified == true || claims.EmailVerified == "true"
	addr, err := mail.ParseAddress(claims.Email)
	if !verified || err != nil || addr.Address != claims.Email || len(claims.Email) > 254 {
		return "", errSignIn("Your identity-provider account has no verified e-mail address; verify it there and sign in again.")
	}
	return strings.ToLower(claims.Email), nil
}

// signedIn returns this browser's sign-in cookie value and e-mail, or "" when it is not signed in.
func (b *bridge) signedIn(r *http.Request) (string, string, error) {
	c, err := r.Cookie(signinCookie)
	if err != nil || c.Value == "" {
		return "", "", nil
	}
	s, err := b.st.OAuthBrowserSession(r.Context(), "signin", auth.HashAPIKey(c.Value))
	if errors.Is(err, fault.ErrNotFound) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	return c.Value, s.Email, nil
}

func (b *bridge) setCookie(w http.ResponseWriter, name, value, path string, life time.Duration) {
	c := &http.Cookie{Name: name, Value: value, Path: path, HttpOnly: true, Secure: b.secure, SameSite: http.SameSiteLaxMode}
	if life < 0 {
		c.MaxAge = -1
	} else {
		c.MaxAge = int(life.Seconds())
	}
	http.SetCookie(w, c)
}
