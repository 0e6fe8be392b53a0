package app_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
)

const cpPassword = "correct horse battery staple"

// cpSignup signs up email with cpPassword and returns the session token.
func (s *stack) cpSignup(email string) string {
	s.t.Helper()
	r := s.Do("POST", "/v1/control-plane/auth/signup", map[string]any{"email": email, "password": cpPassword}, nil)
	if r.Status != 201 {
		s.t.Fatalf("signup %s: %d %s", email, r.Status, r.Body)
	}
	return r.Object(s.t)["session_token"].(string)
}

func (s *stack) cpLogin(email, password string, header map[string]string) servicetest.Reply {
	return s.Do("POST", "/v1/control-plane/auth/login", map[string]any{"email": email, "password": password}, header)
}

// cpCreateKey creates a workspace key and returns the answer's body.
func (s *stack) cpCreateKey(session string, body map[string]any) map[string]any {
	s.t.Helper()
	r := s.Do("POST", "/v1/control-plane/workspace/api-keys", body, bearer(session))
	if r.Status != 201 {
		s.t.Fatalf("create key: %d %s", r.Status, r.Body)
	}
	return r.Object(s.t)
}

// cpKeyStatus returns the list's status of key id ("" when it is not listed).
func (s *stack) cpKeyStatus(session, id string) string {
	s.t.Helper()
	r := s.Do("GET", "/v1/control-plane/workspace/api-keys", nil, bearer(session))
	if r.Status != 200 {
		s.t.Fatalf("list keys: %d %s", r.Status, r.Body)
	}
	for _, k := range r.Object(s.t)["api_keys"].([]any) {
		if k := k.(map[string]any); k["id"] == id {
			return k["status"].(string)
		}
	}
	return ""
}

func TestControlPlaneSignupAndLogin(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	signup := func(body map[string]any) servicetest.Reply {
		return s.Do("POST", "/v1/control-plane/auth/signup", body, nil)
	}

	// The acceptance check: signup, then a wrong password.
	r := signup(map[string]any{"email": "acceptance@example.com", "password": cpPassword})
	if r.Status != 201 {
		t.Fatalf("signup: got %d %s, want 201", r.Status, r.Body)
	}
	b := r.Object(t)
	ws, _ := b["workspace"].(map[string]any)
	if tok, _ := b["session_token"].(string); !strings.HasPrefix(tok, "wss_") || b["token_type"] != "Bearer" || b["expires_at"] == nil ||
		b["idle_timeout_seconds"] != 86400.0 || ws["email"] != "acceptance@example.com" || ws["workspace_name"] != "acceptance" || ws["plan"] != "trial" {
		t.Fatalf("signup body: %s", r.Body)
	}
	if strings.Contains(string(r.Body), cpPassword) || strings.Contains(s.Logs.String(), cpPassword) {
		t.Fatal("the password appears in the answer or the log")
	}
	wrong := s.cpLogin("acceptance@example.com", "correct horse battery stable", nil)
	if wrong.Status != 401 || strings.TrimSpace(string(wrong.Body)) != `{"detail":"invalid email or password"}` {
		t.Fatalf("wrong password: got %d %s, want 401 invalid email or password", wrong.Status, wrong.Body)
	}
	// An unknown e-mail is told exactly the same.
	unknown := s.cpLogin("nobody@example.com", cpPassword, nil)
	if unknown.Status != 401 || string(unknown.Body) != string(wrong.Body) {
		t.Fatalf("unknown e-mail: got %d %s, want the wrong password's answer", unknown.Status, unknown.Body)
	}

	// A second run of the acceptance suite: the same signup logs in (200), a new session each time.
	again := signup(map[string]any{"email": "Acceptance@Example.com", "password": cpPassword})
	if again.Status != 200 || again.Object(t)["session_token"] == b["session_token"] {
		t.Fatalf("repeated signup: got %d %s, want 200 with a new session", again.Status, again.Body)
	}
	if wrong := s.cpLogin("acceptance@example.com", "correct horse battery stable", nil); wrong.Status != 401 {
		t.Fatalf("second run's wrong password: got %d %s, want 401", wrong.Status, wrong.Body)
	}
	if r := signup(map[string]any{"email": "acceptance@example.com", "password": "another long passphrase here"}); r.Status != 409 {
		t.Fatalf("signup with another password: got %d %s, want 409", r.Status, r.Body)
	}
	if r := s.cpLogin("ACCEPTANCE@example.com", cpPassword, nil); r.Status != 200 || r.Object(t)["workspace"].(map[string]any)["id"] != ws["id"] {
		t.Fatalf("login: got %d %s, want 200 on the same workspace", r.Status, r.Body)
	}

	for _, tt := range []struct {
		body   map[string]any
		detail string
	}{
		{map[string]any{"email": "weak@example.com", "password": "short"}, "password must be at least 15 characters"},
		{map[string]any{"email": "weak@example.com", "password": strings.Repeat("z", 20)}, "one character repeated"},
		{map[string]any{"email": "weak@example.com"}, "password must be at least 15 characters"},
		{map[string]any{"email": "not-an-email", "password": cpPassword}, "email is not a valid e-mail address"},
		{map[string]any{"password": cpPassword}, "email is required"},
		{map[string]any{"email": "named@example.com", "password": cpPassword, "workspace_name": strings.Repeat("w", 101)}, "at most 100 characters"},
	} {
		r := signup(tt.body)
		if d, _ := r.Object(t)["detail"].(string); r.Status != 422 || !strings.Contains(d, tt.detail) {
			t.Errorf("signup %v: got %d %s, want 422 mentioning %q", tt.body, r.Status, r.Body, tt.detail)
		}
	}
	if r := s.cpLogin("not-an-email", cpPassword, nil); r.Status != 422 {
		t.Errorf("login with a malformed e-mail: got %d %s, want 422", r.Status, r.Body)
	}
	var hash string
	if err := s.Pool.QueryRow(context.Background(), `SELECT password_hash FROM accounts WHERE email = 'acceptance@example.com'`).Scan(&hash); err != nil ||
		!strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("stored password: got %q, %v; want an argon2id PHC string", hash, err)
	}
}

func TestControlPlaneWorkspaceAndKeys(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	session := s.cpSignup("owner@example.com")
	auth := bearer(session)

	if r := s.Do("GET", "/v1/control-plane/workspace", nil, auth); r.Status != 200 || r.Object(t)["workspace_name"] != "owner" {
		t.Fatalf("workspace: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/control-plane/workspace", map[string]any{"workspace_name": " Acme Billing "}, auth); r.Status != 200 || r.Object(t)["workspace_name"] != "Acme Billing" {
		t.Fatalf("rename: got %d %s, want 200 Acme Billing", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/control-plane/workspace", map[string]any{"workspace_name": ""}, auth); r.Status != 422 {
		t.Fatalf("rename to nothing: got %d %s, want 422", r.Status, r.Body)
	}

	// Workspace routes take a session, and only a session.
	trial := s.trialKey()
	for _, h := range []map[string]string{nil, bearer("wss_forged"), bearer(trial)} {
		if r := s.Do("GET", "/v1/control-plane/workspace/api-keys", nil, h); r.Status != 401 {
			t.Errorf("list keys with %v: got %d %s, want 401", h, r.Status, r.Body)
		}
	}
	if r := s.Do("GET", "/v1/limits", nil, auth); r.Status != 401 {
		t.Errorf("a session as an API key: got %d %s, want 401", r.Status, r.Body)
	}

	created := s.cpCreateKey(session, map[string]any{"name": "claims worker"})
	secret, _ := created["key"].(string)
	id, _ := created["id"].(string)
	if !strings.HasPrefix(secret, "sk_") || created["name"] != "claims worker" || created["plan"] != "trial" ||
		created["prefix"] != secret[:11] || created["created_at"] == nil || created["delivery"] != "response" || created["setup_url"] != nil {
		t.Fatalf("created key: %v", created)
	}
	// The key is an ordinary key of the workspace's account.
	lim := s.Do("GET", "/v1/limits", nil, bearer(secret))
	if lim.Status != 200 || lim.Object(t)["plan"] != "trial" {
		t.Fatalf("the new key's limits: %d %s", lim.Status, lim.Body)
	}
	list := s.Do("GET", "/v1/control-plane/workspace/api-keys", nil, auth)
	if list.Status != 200 || strings.Contains(string(list.Body), secret) || s.cpKeyStatus(session, id) != "active" {
		t.Fatalf("list: %d %s, want the key active and no secret", list.Status, list.Body)
	}

	// Another workspace neither sees nor revokes it.
	other := s.cpSignup("other@example.com")
	if s.cpKeyStatus(other, id) != "" {
		t.Fatal("another workspace lists the key")
	}
	for _, path := range []string{id, "6f1c1f8e-8d4b-4c39-a0d3-7c2f5a1e9b10", "not-a-uuid"} {
		if r := s.Do("DELETE", "/v1/control-plane/workspace/api-keys/"+path, nil, bearer(other)); r.Status != 404 {
			t.Errorf("revoke %s from another workspace: got %d %s, want 404", path, r.Status, r.Body)
		}
	}

	// Revocation holds at once on this replica, although the key was just cached.
	if r := s.Do("DELETE", "/v1/control-plane/workspace/api-keys/"+id, nil, auth); r.Status != 204 {
		t.Fatalf("revoke: got %d %s, want 204", r.Status, r.Body)
	}
	if r := s.Do("GET", "/v1/limits", nil, bearer(secret)); r.Status != 401 {
		t.Fatalf("revoked key: got %d %s, want 401", r.Status, r.Body)
	}
	if st := s.cpKeyStatus(session, id); st != "revoked" {
		t.Fatalf("revoked key's status: got %q, want revoked", st)
	}
	if r := s.Do("DELETE", "/v1/control-plane/workspace/api-keys/"+id, nil, auth); r.Status != 204 {
		t.Fatalf("revoking again: got %d %s, want 204", r.Status, r.Body)
	}
	if r := s.Do("POST", "/v1/control-plane/workspace/api-keys", map[string]any{"delivery": "carrier pigeon"}, auth); r.Status != 422 {
		t.Fatalf("unknown delivery: got %d %s, want 422", r.Status, r.Body)
	}

	// Logout ends the session.
	if r := s.Do("POST", "/v1/control-plane/auth/logout", nil, auth); r.Status != 204 {
		t.Fatalf("logout: got %d %s, want 204", r.Status, r.Body)
	}
	if r := s.Do("GET", "/v1/control-plane/workspace", nil, auth); r.Status != 401 {
		t.Fatalf("after logout: got %d %s, want 401", r.Status, r.Body)
	}
}

func TestControlPlaneSetupLink(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"SCORING_PUBLIC_URL": "https://scoring.example.com/"})
	session := s.cpSignup("links@example.com")

	created := s.cpCreateKey(session, map[string]any{"name": "for the billing team", "delivery": "setup_link"})
	setupURL, _ := created["setup_url"].(string)
	if _, shown := created["key"]; shown || created["delivery"] != "setup_link" || created["setup_expires_at"] == nil ||
		!strings.HasPrefix(setupURL, "https://scoring.example.com/v1/control-plane/setup?token=kst_") {
		t.Fatalf("created with a setup link: %v", created)
	}
	id := created["id"].(string)
	if st := s.cpKeyStatus(session, id); st != "setup_pending" {
		t.Fatalf("status before the link is used: got %q, want setup_pending", st)
	}
	u, _ := url.Parse(setupURL)
	path := "/v1/control-plane/setup?" + u.RawQuery
	var token string
	if err := s.Pool.QueryRow(context.Background(), `SELECT count(*)::text FROM key_setup_links WHERE sealed IS NOT NULL`).Scan(&token); err != nil || token != "1" {
		t.Fatalf("sealed secrets stored: %q, %v", token, err)
	}

	// GET (a link preview, a mail scanner) shows the link without using it, as often as it likes.
	for range 2 {
		r := s.Do("GET", path, nil, nil)
		if b := r.Object(t); r.Status != 200 || b["status"] != "pending" || b["key_id"] != id || b["key"] != nil {
			t.Fatalf("GET setup link: %d %s", r.Status, r.Body)
		}
	}
	// POST reveals it once; several at once still reveal it once.
	results := make([]servicetest.Reply, 5)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = s.Do("POST", path, nil, nil) })
	}
	wg.Wait()
	var secret string
	gone := 0
	for _, r := range results {
		switch r.Status {
		case 200:
			if secret != "" {
				t.Fatal("the link revealed its key twice")
			}
			secret, _ = r.Object(t)["key"].(string)
			if r.Object(t)["id"] != id {
				t.Fatalf("revealed: %s", r.Body)
			}
		case 410:
			gone++
		default:
			t.Fatalf("concurrent reveal: %d %s", r.Status, r.Body)
		}
	}
	if secret == "" || gone != 4 {
		t.Fatalf("concurrent reveals: got key %q and %d times 410, want one key and 4 times 410", secret, gone)
	}
	if r := s.Do("GET", "/v1/limits", nil, bearer(secret)); r.Status != 200 {
		t.Fatalf("the revealed key: %d %s", r.Status, r.Body)
	}
	for _, method := range []string{"POST", "GET"} {
		if r := s.Do(method, path, nil, nil); r.Status != 410 {
			t.Fatalf("%s a used link: got %d %s, want 410", method, r.Status, r.Body)
		}
	}
	if st := s.cpKeyStatus(session, id); st != "active" {
		t.Fatalf("status after the link is used: got %q, want active", st)
	}
	if r := s.Do("POST", "/v1/control-plane/setup?token=kst_unknown", nil, nil); r.Status != 404 {
		t.Fatalf("unknown link: got %d %s, want 404", r.Status, r.Body)
	}

	// A revoked key's link reveals nothing.
	revoked := s.cpCreateKey(session, map[string]any{"delivery": "setup_link"})
	if r := s.Do("DELETE", "/v1/control-plane/workspace/api-keys/"+revoked["id"].(string), nil, bearer(session)); r.Status != 204 {
		t.Fatalf("revoke: %d %s", r.Status, r.Body)
	}
	ru, _ := url.Parse(revoked["setup_url"].(string))
	if r := s.Do("POST", "/v1/control-plane/setup?"+ru.RawQuery, nil, nil); r.Status != 410 {
		t.Fatalf("link of a revoked key: got %d %s, want 410", r.Status, r.Body)
	}
	// The token never reaches the log: the access log leaves the query out.
	if strings.Contains(s.Logs.String(), u.Query().Get("token")) {
		t.Fatal("the setup token appears in the log")
	}
}

func TestControlPlaneThrottlesFailedSignIns(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	s.cpSignup("target@example.com")

	// Five failures per e-mail in 15 minutes, then 429 even with the right password.
	for i := range 5 {
		if r := s.cpLogin("target@example.com", fmt.Sprintf("wrong guess number %d", i), nil); r.Status != 401 {
			t.Fatalf("failure %d: got %d %s, want 401", i+1, r.Status, r.Body)
		}
	}
	for _, password := range []string{"wrong guess number 6", cpPassword} {
		r := s.cpLogin("target@example.com", password, nil)
		retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if r.Status != 429 || err != nil || retry < 1 || retry > 900 || r.Object(t)["retry_after_seconds"] != float64(retry) {
			t.Fatalf("sixth attempt: got %d %s (Retry-After %q), want 429 with Retry-After in 1..900", r.Status, r.Body, r.Header.Get("Retry-After"))
		}
	}
	// A repeated signup with the right password is a login: throttled too.
	if r := s.Do("POST", "/v1/control-plane/auth/signup", map[string]any{"email": "target@example.com", "password": cpPassword}, nil); r.Status != 429 {
		t.Fatalf("signup of a locked e-mail: got %d %s, want 429", r.Status, r.Body)
	}
	// Other e-mails from this address go on, up to the address's limit of 20 failures (5 spent).
	s.cpSignup("bystander@example.com")
	for i := range 15 {
		if r := s.cpLogin(fmt.Sprintf("spray%d@example.com", i), cpPassword, nil); r.Status != 401 {
			t.Fatalf("spray %d: got %d %s, want 401", i, r.Status, r.Body)
		}
	}
	// The address is now locked for everyone behind it, and a forged X-Forwarded-For does not
	// change the address counted (no trusted proxy is configured).
	for _, h := range []map[string]string{nil, {"X-Forwarded-For": "203.0.113.9"}} {
		if r := s.cpLogin("bystander@example.com", cpPassword, h); r.Status != 429 {
			t.Fatalf("login from a locked address (%v): got %d %s, want 429", h, r.Status, r.Body)
		}
	}
}

func TestControlPlaneTrustsConfiguredProxies(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"SCORING_TRUSTED_PROXY_HOPS": "1"})
	s.cpSignup("proxied@example.com")
	// Behind one proxy, the client is the address the proxy appended: clients differ, buckets differ.
	from := func(ip string) map[string]string { return map[string]string{"X-Forwarded-For": ip} }
	for i := range 20 {
		if r := s.cpLogin(fmt.Sprintf("user%d@example.com", i), cpPassword, from("198.51.100.7")); r.Status != 401 {
			t.Fatalf("failure %d: got %d %s, want 401", i+1, r.Status, r.Body)
		}
	}
	if r := s.cpLogin("proxied@example.com", cpPassword, from("198.51.100.7")); r.Status != 429 {
		t.Fatalf("locked client: got %d %s, want 429", r.Status, r.Body)
	}
	if r := s.cpLogin("proxied@example.com", cpPassword, from("198.51.100.8")); r.Status != 200 {
		t.Fatalf("another client behind the proxy: got %d %s, want 200", r.Status, r.Body)
	}
}
