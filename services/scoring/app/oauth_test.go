package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/oauth2-proxy/mockoidc"
	"golang.org/x/oauth2"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
)

// oauthStack is the service with its OAuth sign-in bridge pointed at a local OpenID Connect provider
// (mockoidc: authorization code with PKCE and nonce, RS256 ID tokens).
type oauthStack struct {
	*stack
	idp *mockoidc.MockOIDC
}

// freeAddr returns a loopback address nobody listens on: the service's public URL (its issuer and
// the identity provider's redirect target) must be known before it starts.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func startOAuthService(t *testing.T) *oauthStack {
	t.Helper()
	return startOAuthServiceWith(t, nil)
}

// startOAuthServiceWith is startOAuthService with extra variables.
func startOAuthServiceWith(t *testing.T, extra map[string]string) *oauthStack {
	t.Helper()
	idp, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = idp.Shutdown() })
	addr := freeAddr(t)
	cfg := idp.Config()
	env := map[string]string{
		"SCORING_HTTP_ADDR":          addr,
		"SCORING_PUBLIC_URL":         "http://" + addr,
		"SCORING_OIDC_ISSUER":        cfg.Issuer,
		"SCORING_OIDC_CLIENT_ID":     cfg.ClientID,
		"SCORING_OIDC_CLIENT_SECRET": cfg.ClientSecret,
	}
	maps.Copy(env, extra)
	s := startService(t, env)
	return &oauthStack{stack: s, idp: idp}
}

// browser is a user agent that keeps cookies and does not follow redirects, so that every hop of
// the flow is checked.
type browser struct {
	t      *testing.T
	client *http.Client
}

func newBrowser(t *testing.T) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(method, rawURL string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, rawURL, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, rawURL, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out)
}

// redirect GETs rawURL and returns where it redirects, failing unless it does.
func (b *browser) redirect(rawURL string) *url.URL {
	b.t.Helper()
	resp, body := b.do("GET", rawURL, nil)
	if resp.StatusCode != http.StatusFound && resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("GET %s: %d %s, want a redirect", rawURL, resp.StatusCode, body)
	}
	loc, err := resp.Location()
	if err != nil {
		b.t.Fatal(err)
	}
	return loc
}

var consentTokenRE = regexp.MustCompile(`name="consent_token" value="([^"]+)"`)

// consent GETs the authorize URL of a signed-in browser, checks the consent page, and answers it;
// it returns the redirect to the client.
func (b *browser) consent(authorizeURL, answer string) *url.URL {
	b.t.Helper()
	resp, page := b.do("GET", authorizeURL, nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "Test agent") || !strings.Contains(page, "jane.doe@example.com") {
		b.t.Fatalf("consent page: %d %s", resp.StatusCode, page)
	}
	m := consentTokenRE.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("consent page without a token: %s", page)
	}
	resp, body := b.do("POST", authorizeURL, url.Values{"consent": {answer}, "consent_token": {m[1]}})
	if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusFound {
		b.t.Fatalf("consent %s: %d %s, want a redirect to the client", answer, resp.StatusCode, body)
	}
	loc, _ := resp.Location()
	return loc
}

const clientRedirect = "http://127.0.0.1:43117/callback"

// registerClient registers a public client as an MCP client does (the MCP SDK's RFC 7591 client).
func (s *oauthStack) registerClient(t *testing.T) *oauth2.Config {
	t.Helper()
	reg, err := oauthex.RegisterClient(context.Background(), s.URL+"/oauth/register", &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{clientRedirect}, ClientName: "Test agent", TokenEndpointAuthMethod: "none",
		GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
	}, nil)
	if err != nil {
		t.Fatalf("register: %v", err)
	}
	if reg.ClientID == "" || reg.ClientSecret != "" || reg.TokenEndpointAuthMethod != "none" {
		t.Fatalf("registration: %+v, want a public client", reg)
	}
	return &oauth2.Config{
		ClientID: reg.ClientID, RedirectURL: clientRedirect, Scopes: []string{"scoring", "offline_access"},
		Endpoint: oauth2.Endpoint{AuthURL: s.URL + "/oauth/authorize", TokenURL: s.URL + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams},
	}
}

// authorize runs the authorization request of cfg in b up to the code; a browser that is not yet
// signed in goes through the identity provider first.
func (s *oauthStack) authorize(t *testing.T, b *browser, cfg *oauth2.Config, verifier string) string {
	t.Helper()
	state := "state-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier))
	resp, _ := b.do("GET", authURL, nil)
	if resp.StatusCode == http.StatusFound {
		// Not signed in: /oauth/authorize -> /oauth/login -> identity provider -> /oauth/callback -> back.
		login, _ := resp.Location()
		if login.Path != "/oauth/login" || login.Query().Get("return_to") == "" {
			t.Fatalf("unsigned authorize redirects to %s, want /oauth/login?return_to=...", login)
		}
		idp := b.redirect(login.String())
		if !strings.HasPrefix(idp.String(), s.idp.Issuer()) || idp.Query().Get("code_challenge_method") != "S256" || idp.Query().Get("nonce") == "" {
			t.Fatalf("login redirects to %s, want the identity provider with PKCE S256 and a nonce", idp)
		}
		callback := b.redirect(idp.String())
		if callback.Path != "/oauth/callback" {
			t.Fatalf("identity provider redirects to %s", callback)
		}
		back := b.redirect(callback.String())
		if back.Path != "/oauth/authorize" || back.Query().Get("client_id") != cfg.ClientID {
			t.Fatalf("callback redirects to %s, want the authorize request back", back)
		}
		authURL = s.URL + back.RequestURI()
	}
	loc := b.consent(authURL, "allow")
	if got := loc.Scheme + "://" + loc.Host + loc.Path; got != clientRedirect || loc.Query().Get("state") != state || loc.Query().Get("code") == "" {
		t.Fatalf("authorize redirects to %s, want %s with the state and a code", loc, clientRedirect)
	}
	return loc.Query().Get("code")
}

// tokenRequest POSTs a token request and returns the status and JSON body.
func (s *oauthStack) tokenRequest(t *testing.T, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := http.PostForm(s.URL+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("token response is not JSON: %v", err)
	}
	return resp.StatusCode, body
}

func (s *oauthStack) exchange(t *testing.T, cfg *oauth2.Config, code, verifier string) (int, map[string]any) {
	t.Helper()
	return s.tokenRequest(t, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {clientRedirect},
		"client_id": {cfg.ClientID}, "code_verifier": {verifier}})
}

// usage returns the billable calls of the key behind token, once they reach want.
func (s *oauthStack) waitUsage(t *testing.T, token string, want float64) {
	t.Helper()
	var last servicetest.Reply
	for range 100 {
		last = s.Do("GET", "/v1/usage", nil, bearer(token))
		if last.Status == 200 && last.Object(t)["billable_calls"] == want {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("usage: %d %s, want billable_calls %v", last.Status, last.Body, want)
}

func TestOAuthEndToEnd(t *testing.T) {
	t.Parallel()
	s := startOAuthService(t)
	ctx := context.Background()

	// The metadata names this server and passes the MCP SDK's checks (PKCE, issuer, URL schemes).
	meta, err := oauthex.GetAuthServerMeta(ctx, s.URL+"/.well-known/oauth-authorization-server", s.URL, nil)
	if err != nil || meta == nil {
		t.Fatalf("metadata: %v", err)
	}
	if meta.TokenEndpoint != s.URL+"/oauth/token" || meta.RegistrationEndpoint != s.URL+"/oauth/register" ||
		strings.Join(meta.CodeChallengeMethodsSupported, ",") != "S256" || strings.Join(meta.TokenEndpointAuthMethodsSupported, ",") != "none" {
		t.Fatalf("metadata: %+v", meta)
	}

	cfg := s.registerClient(t)
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	code := s.authorize(t, b, cfg, verifier)

	// A wrong verifier is refused (RFC 7636 4.6), and so the code is spent.
	status, body := s.exchange(t, cfg, code, oauth2.GenerateVerifier())
	if status != 400 || body["error"] != "invalid_grant" {
		t.Fatalf("wrong verifier: %d %v, want 400 invalid_grant", status, body)
	}

	// A second authorization in the same browser needs no new sign-in.
	code = s.authorize(t, b, cfg, verifier)
	status, tok := s.exchange(t, cfg, code, verifier)
	access, _ := tok["access_token"].(string)
	refresh, _ := tok["refresh_token"].(string)
	if status != 200 || !strings.HasPrefix(access, "ory_at_") || refresh == "" || tok["token_type"] != "bearer" {
		t.Fatalf("token: %d %v", status, tok)
	}
	if exp, _ := tok["expires_in"].(float64); exp < 800 || exp > 900 {
		t.Fatalf("expires_in %v, want about 15 minutes", tok["expires_in"])
	}

	// The token scores, metered to the user's workspace agent key.
	if r := s.stack.scoreDenial(access); r.Status != 200 {
		t.Fatalf("score with the access token: %d %s", r.Status, r.Body)
	}
	var keyID, prefix string
	if err := s.Pool.QueryRow(ctx, `
SELECT k.id, k.prefix FROM api_keys k JOIN accounts a ON a.id = k.account_id
WHERE a.email = 'jane.doe@example.com' AND k.name = 'agent' AND k.revoked_at IS NULL`).Scan(&keyID, &prefix); err != nil {
		t.Fatalf("the workspace's agent key: %v", err)
	}
	s.waitUsage(t, access, 1)
	if u := s.Do("GET", "/v1/usage", nil, bearer(access)).Object(t); u["key_prefix"] != prefix {
		t.Fatalf("usage of key %v, want the agent key %s", u["key_prefix"], prefix)
	}
	var calls int
	for i := 0; calls != 1 && i < 100; i++ {
		if err := s.Pool.QueryRow(ctx, `SELECT coalesce(sum(calls), 0) FROM usage_counters WHERE key_id = $1`, keyID).Scan(&calls); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if calls != 1 {
		t.Fatalf("agent key usage in the database: %d, want 1", calls)
	}

	// A code is good once; its reuse also revokes what it gave (RFC 6749 4.1.2).
	status, body = s.exchange(t, cfg, code, verifier)
	if status != 400 || body["error"] != "invalid_grant" {
		t.Fatalf("reused code: %d %v, want 400 invalid_grant", status, body)
	}
	if r := s.stack.scoreDenial(access); r.Status != 401 {
		t.Fatalf("score after the code's reuse: %d %s, want 401", r.Status, r.Body)
	}
	if status, body = s.tokenRequest(t, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {cfg.ClientID}}); status != 400 || body["error"] != "invalid_grant" {
		t.Fatalf("refresh after the code's reuse: %d %v, want 400 invalid_grant", status, body)
	}

	// A fresh grant: its access token expires (set in the past in the database, rather than waiting
	// 15 minutes), the refresh token gives a new one, and a refresh token works once.
	code = s.authorize(t, b, cfg, verifier)
	status, tok = s.exchange(t, cfg, code, verifier)
	if status != 200 {
		t.Fatalf("token: %d %v", status, tok)
	}
	access, refresh = tok["access_token"].(string), tok["refresh_token"].(string)
	if _, err := s.Pool.Exec(ctx, `
UPDATE oauth_tokens SET session = jsonb_set(session, '{expires_at,access_token}', '"2001-01-01T00:00:00Z"') WHERE kind = 'access_token'`); err != nil {
		t.Fatal(err)
	}
	if r := s.stack.scoreDenial(access); r.Status != 401 || r.Object(t)["detail"] == nil {
		t.Fatalf("score with an expired token: %d %s, want 401 with a detail", r.Status, r.Body)
	}
	refreshForm := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {cfg.ClientID}}
	status, tok = s.tokenRequest(t, refreshForm)
	newAccess, _ := tok["access_token"].(string)
	if status != 200 || newAccess == "" || tok["refresh_token"] == refresh {
		t.Fatalf("refresh: %d %v, want a new access token and a rotated refresh token", status, tok)
	}
	if r := s.Do("GET", "/v1/limits", nil, bearer(newAccess)); r.Status != 200 || r.Object(t)["key_prefix"] != prefix {
		t.Fatalf("limits with the refreshed token: %d %s", r.Status, r.Body)
	}
	if status, body = s.tokenRequest(t, refreshForm); status != 400 || body["error"] != "invalid_grant" {
		t.Fatalf("reused refresh token: %d %v, want 400 invalid_grant", status, body)
	}
	if r := s.Do("GET", "/v1/limits", nil, bearer(newAccess)); r.Status != 401 {
		t.Fatalf("the refreshed grant after its refresh token's reuse: %d %s, want 401 (revoked)", r.Status, r.Body)
	}

	// Revoking the workspace key revokes the tokens bound to it (within the key cache's 5 s).
	code = s.authorize(t, b, cfg, verifier)
	if status, tok = s.exchange(t, cfg, code, verifier); status != 200 {
		t.Fatalf("token: %d %v", status, tok)
	}
	access = tok["access_token"].(string)
	if _, err := s.Pool.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = $1`, keyID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for r := s.Do("GET", "/v1/limits", nil, bearer(access)); r.Status != 401; r = s.Do("GET", "/v1/limits", nil, bearer(access)) {
		if time.Now().After(deadline) {
			t.Fatalf("token of a revoked key: %d %s, want 401", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Plain API keys are unaffected.
	if r := s.stack.scoreDenial(s.paidKey()); r.Status != 200 {
		t.Fatalf("score with an API key: %d %s", r.Status, r.Body)
	}
}

func TestOAuthTokensOutliveAnAdminTokenChangeWithTheirOwnSecret(t *testing.T) {
	t.Parallel()
	s := startOAuthServiceWith(t, map[string]string{"SCORING_OAUTH_SECRET": "oauth-secret-of-this-test-0123456789abcdef"})
	cfg := s.registerClient(t)
	verifier := oauth2.GenerateVerifier()
	status, tok := s.exchange(t, cfg, s.authorize(t, newBrowser(t), cfg, verifier), verifier)
	access, _ := tok["access_token"].(string)
	if status != 200 || access == "" {
		t.Fatalf("token: %d %v", status, tok)
	}

	// The same database and address, another admin token: replicas restarted after a rotation.
	restart := func(change func(env map[string]string)) *stack {
		s.Stop()
		env := maps.Clone(s.Env)
		change(env)
		return startWithEnv(t, env)
	}
	rotated := restart(func(env map[string]string) { env["SCORING_ADMIN_TOKEN"] = "a-rotated-admin-token-0123456789" })
	if r := rotated.scoreDenial(access); r.Status != 200 {
		t.Fatalf("score after the admin token changed, with SCORING_OAUTH_SECRET set: %d %s, want 200", r.Status, r.Body)
	}
	// Without the setting the key comes from the admin token, and the rotation signs agents out.
	s.stack = rotated
	derived := restart(func(env map[string]string) { delete(env, "SCORING_OAUTH_SECRET") })
	if r := derived.scoreDenial(access); r.Status != 401 {
		t.Fatalf("score with a key derived from the new admin token: %d %s, want 401", r.Status, r.Body)
	}
}

func TestOAuthRefusals(t *testing.T) {
	t.Parallel()
	s := startOAuthService(t)
	cfg := s.registerClient(t)

	// A user who denies consent sends the client access_denied.
	b := newBrowser(t)
	verifier := oauth2.GenerateVerifier()
	s.authorize(t, b, cfg, verifier) // signs the browser in
	loc := b.consent(cfg.AuthCodeURL("state-deny-1234", oauth2.S256ChallengeOption(verifier)), "deny")
	if loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" {
		t.Fatalf("denied consent redirects to %s, want error=access_denied", loc)
	}

	// A consent form posted without the page's token (another site posting it) is refused.
	authURL := cfg.AuthCodeURL("state-forged-1234", oauth2.S256ChallengeOption(verifier))
	resp, _ := b.do("POST", authURL, url.Values{"consent": {"allow"}, "consent_token": {"forged"}})
	if loc, _ := resp.Location(); loc == nil || loc.Query().Get("code") != "" || loc.Query().Get("error") == "" {
		t.Fatalf("forged consent: %d %v, want an error to the client and no code", resp.StatusCode, loc)
	}

	// The authorize request itself is checked by fosite: PKCE is required (S256 only), the client
	// and its redirect URI must be registered.
	for name, tc := range map[string]struct {
		url       string
		wantError string
	}{
		"no PKCE":        {cfg.AuthCodeURL("state-nopkce-1234"), "invalid_request"},
		"plain PKCE":     {cfg.AuthCodeURL("state-plain-1234", oauth2.SetAuthURLParam("code_challenge", verifier), oauth2.SetAuthURLParam("code_challenge_method", "plain")), "invalid_request"},
		"unknown scope":  {(&oauth2.Config{ClientID: cfg.ClientID, RedirectURL: clientRedirect, Endpoint: cfg.Endpoint, Scopes: []string{"admin"}}).AuthCodeURL("state-scope-1234", oauth2.S256ChallengeOption(verifier)), "invalid_scope"},
		"unknown client": {(&oauth2.Config{ClientID: "nobody", RedirectURL: clientRedirect, Endpoint: cfg.Endpoint}).AuthCodeURL("state-client-1234", oauth2.S256ChallengeOption(verifier)), "invalid_client"},
		"other redirect": {(&oauth2.Config{ClientID: cfg.ClientID, RedirectURL: "https://evil.example/cb", Endpoint: cfg.Endpoint}).AuthCodeURL("state-redir-1234", oauth2.S256ChallengeOption(verifier)), "invalid_request"},
	} {
		resp, body := b.do("GET", tc.url, nil)
		got := ""
		if loc, _ := resp.Location(); loc != nil {
			got = loc.Query().Get("error")
			if loc.Host == "evil.example" {
				t.Errorf("%s: redirected to an unregistered URI %s", name, loc)
			}
		} else {
			var m map[string]any
			_ = json.Unmarshal([]byte(body), &m)
			got, _ = m["error"].(string)
		}
		if got != tc.wantError {
			t.Errorf("%s: %d error %q (%s), want %q", name, resp.StatusCode, got, body, tc.wantError)
		}
	}

	// An account whose e-mail the identity provider has not verified gets no session.
	s.idp.QueueUser(&mockoidc.MockUser{Subject: "u2", Email: "unverified@example.com", EmailVerified: false})
	b2 := newBrowser(t)
	resp, _ = b2.do("GET", cfg.AuthCodeURL("state-unverified-1234", oauth2.S256ChallengeOption(verifier)), nil)
	login, _ := resp.Location()
	callback := b2.redirect(b2.redirect(login.String()).String())
	resp, body := b2.do("GET", callback.String(), nil)
	if resp.StatusCode != 400 || !strings.Contains(body, "verified e-mail") {
		t.Fatalf("unverified e-mail: %d %s, want 400 with a detail", resp.StatusCode, body)
	}

	// A callback in a browser that did not start the sign-in (login CSRF) is refused.
	b3 := newBrowser(t)
	resp, _ = b3.do("GET", cfg.AuthCodeURL("state-csrf-12345", oauth2.S256ChallengeOption(verifier)), nil)
	login, _ = resp.Location()
	callback = b3.redirect(b3.redirect(login.String()).String())
	resp, body = newBrowser(t).do("GET", callback.String(), nil)
	if resp.StatusCode != 400 || !strings.Contains(body, "detail") {
		t.Fatalf("callback in another browser: %d %s, want 400", resp.StatusCode, body)
	}
	// The same callback twice in the right browser: the second is refused.
	if resp, _ = b3.do("GET", callback.String(), nil); resp.StatusCode != http.StatusFound {
		t.Fatalf("callback: %d, want a redirect", resp.StatusCode)
	}
	if resp, _ = b3.do("GET", callback.String(), nil); resp.StatusCode != 400 {
		t.Fatalf("replayed callback: %d, want 400", resp.StatusCode)
	}
	// A return_to that is not this server's authorize endpoint is dropped (no open redirect).
	resp, _ = b3.do("GET", s.URL+"/oauth/login?return_to=https://evil.example/x", nil)
	idp, _ := resp.Location()
	callback = b3.redirect(idp.String())
	resp, body = b3.do("GET", callback.String(), nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "Signed in as") {
		t.Fatalf("login without a valid return_to: %d %s, want the signed-in page", resp.StatusCode, body)
	}

	// A token this server never issued, and a made-up one with its prefix, are 401.
	for _, tok := range []string{"ory_at_bm90LWEtdG9rZW4.bm90LWEtc2lnbmF0dXJl", "ory_at_", "not-a-key"} {
		if r := s.stack.scoreDenial(tok); r.Status != 401 || r.Object(t)["detail"] == nil {
			t.Errorf("score with %q: %d %s, want 401", tok, r.Status, r.Body)
		}
	}
}

func TestOAuthRegistration(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	for _, tc := range []struct {
		name      string
		body      string
		wantError string // "" for 201
	}{
		{"loopback http", `{"redirect_uris":["http://127.0.0.1:5000/cb"]}`, ""},
		{"localhost http", `{"redirect_uris":["http://localhost:5000/cb"],"client_name":"x"}`, ""},
		{"ipv6 loopback", `{"redirect_uris":["http://[::1]:5000/cb"]}`, ""},
		{"https", `{"redirect_uris":["https://agent.example/cb"],"token_endpoint_auth_method":"none","scope":"scoring"}`, ""},
		{"no redirect", `{"client_name":"x"}`, "invalid_redirect_uri"},
		{"http elsewhere", `{"redirect_uris":["http://agent.example/cb"]}`, "invalid_redirect_uri"},
		{"custom scheme", `{"redirect_uris":["cursor://callback"]}`, "invalid_redirect_uri"},
		{"fragment", `{"redirect_uris":["https://agent.example/cb#x"]}`, "invalid_redirect_uri"},
		{"relative", `{"redirect_uris":["/cb"]}`, "invalid_redirect_uri"},
		{"javascript", `{"redirect_uris":["javascript:alert(1)"]}`, "invalid_redirect_uri"},
		{"secret auth", `{"redirect_uris":["https://agent.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`, "invalid_client_metadata"},
		{"implicit", `{"redirect_uris":["https://agent.example/cb"],"grant_types":["implicit"]}`, "invalid_client_metadata"},
		{"token response", `{"redirect_uris":["https://agent.example/cb"],"response_types":["token"]}`, "invalid_client_metadata"},
		{"unknown scope", `{"redirect_uris":["https://agent.example/cb"],"scope":"admin"}`, "invalid_client_metadata"},
		{"not JSON", `redirect_uris=x`, "invalid_client_metadata"},
	} {
		resp, err := http.Post(s.URL+"/oauth/register", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		switch {
		case tc.wantError == "" && (resp.StatusCode != 201 || m["client_id"] == nil || m["token_endpoint_auth_method"] != "none"):
			t.Errorf("%s: %d %v, want 201 with a public client", tc.name, resp.StatusCode, m)
		case tc.wantError != "" && (resp.StatusCode != 400 || m["error"] != tc.wantError || m["error_description"] == nil):
			t.Errorf("%s: %d %v, want 400 %s", tc.name, resp.StatusCode, m, tc.wantError)
		}
	}
}

func TestOAuthWithoutIdentityProvider(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	// The metadata is complete without an identity provider: only sign-in is unavailable.
	meta, err := oauthex.GetAuthServerMeta(context.Background(), s.URL+"/.well-known/oauth-authorization-server", "http://127.0.0.1:8082", nil)
	if err != nil || meta == nil || meta.AuthorizationEndpoint != "http://127.0.0.1:8082/oauth/authorize" {
		t.Fatalf("metadata: %+v %v", meta, err)
	}
	for _, path := range []string{"/oauth/login", "/oauth/callback?state=x&code=y"} {
		r := s.Do("GET", path, nil, nil)
		if detail, _ := r.Object(t)["detail"].(string); r.Status != 503 || !strings.Contains(detail, "SCORING_OIDC_ISSUER") {
			t.Errorf("GET %s: %d %s, want 503 naming the settings", path, r.Status, r.Body)
		}
	}
}

// codeFetcher is the MCP SDK's AuthorizationCodeFetcher for a user who signs in and consents in
// browser b: it follows the authorize URL through the identity provider and the consent page to
// the client's redirect URI. It runs on the SDK's goroutine, so it returns errors instead of failing.
func codeFetcher(b *browser) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		next := args.URL
		for range 10 {
			req, err := http.NewRequestWithContext(ctx, "GET", next, nil)
			if err != nil {
				return nil, err
			}
			resp, err := b.client.Do(req)
			if err != nil {
				return nil, err
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				m := consentTokenRE.FindSubmatch(page)
				if m == nil {
					return nil, fmt.Errorf("GET %s: a page that is not the consent page: %s", next, page)
				}
				form := url.Values{"consent": {"allow"}, "consent_token": {string(m[1])}}
				if resp, err = b.client.PostForm(next, form); err != nil {
					return nil, err
				}
				resp.Body.Close()
			}
			loc, err := resp.Location()
			if err != nil {
				return nil, fmt.Errorf("GET %s: %d, want a redirect", next, resp.StatusCode)
			}
			if loc.Scheme+"://"+loc.Host+loc.Path == clientRedirect {
				return &auth.AuthorizationResult{Code: loc.Query().Get("code"), State: loc.Query().Get("state")}, nil
			}
			next = loc.String()
		}
		return nil, errors.New("too many redirects")
	}
}

// An MCP client without a key is told where to authenticate (401 with the protected-resource
// metadata), discovers this authorization server, registers, has the user sign in and consent,
// and scores with the access token, metered to the user's workspace agent key.
func TestOAuthMCPAgent(t *testing.T) {
	t.Parallel()
	s := startOAuthService(t)
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{clientRedirect}, ClientName: "Test agent", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"},
		}},
		RedirectURL:              clientRedirect,
		AuthorizationCodeFetcher: codeFetcher(newBrowser(t)),
		RequestRefreshToken:      true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "scoring-oauth-agent", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.URL + "/mcp", OAuthHandler: handler}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: "score_workflow", Arguments: scoreArgs(denialClaim())})
	if err != nil || res.IsError {
		t.Fatalf("tools/call score_workflow through OAuth: %v %+v", err, res)
	}
	if sc := structured(t, res); sc["score"] == nil {
		t.Fatalf("tool result without a score: %v", sc)
	}
	ts, err := handler.TokenSource(ctx)
	if err != nil || ts == nil {
		t.Fatalf("token source: %v", err)
	}
	tok, err := ts.Token()
	if err != nil || !strings.HasPrefix(tok.AccessToken, "ory_at_") || tok.RefreshToken == "" {
		t.Fatalf("agent token: %v %+v", err, tok)
	}
	var prefix string
	if err := s.Pool.QueryRow(ctx, `
SELECT k.prefix FROM api_keys k JOIN accounts a ON a.id = k.account_id
WHERE a.email = 'jane.doe@example.com' AND k.name = 'agent' AND k.revoked_at IS NULL`).Scan(&prefix); err != nil {
		t.Fatalf("the workspace's agent key: %v", err)
	}
	s.waitUsage(t, tok.AccessToken, 1)
	if u := s.Do("GET", "/v1/usage", nil, bearer(tok.AccessToken)).Object(t); u["key_prefix"] != prefix {
		t.Fatalf("the tool call was metered to %v, want the agent key %s", u["key_prefix"], prefix)
	}
}

// Concurrent exchanges of one code: at most one gets tokens, every other is told invalid_grant (not a
// server error), and since the code was used more than once the tokens issued are revoked (RFC 6749
// 4.1.2). None gets tokens when a loser spends the code before the winner's transaction does.
func TestOAuthCodeExchangedConcurrently(t *testing.T) {
	t.Parallel()
	s := startOAuthService(t)
	cfg := s.registerClient(t)
	verifier := oauth2.GenerateVerifier()
	code := s.authorize(t, newBrowser(t), cfg, verifier)

	const n = 8
	type answer struct {
		status int
		body   map[string]any
	}
	answers := make([]answer, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() {
			<-start
			status, body := s.exchange(t, cfg, code, verifier)
			answers[i] = answer{status, body}
		})
	}
	close(start)
	wg.Wait()
	var access string
	for _, a := range answers {
		switch {
		case a.status == 200 && access == "":
			access, _ = a.body["access_token"].(string)
		case a.status == 400 && a.body["error"] == "invalid_grant":
		default:
			t.Fatalf("answers %v: want at most one 200 and otherwise 400 invalid_grant", answers)
		}
	}
	if access == "" {
		return
	}
	if r := s.stack.scoreDenial(access); r.Status != 401 {
		t.Fatalf("score with the token of a code used %d times: %d %s, want 401", n, r.Status, r.Body)
	}
}
