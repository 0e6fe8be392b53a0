package app_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
)

const cpPassword = "correct horse battery staple"

// cpSignup signs up email with cpPassword and returns the session token.
func (s *stack) cpSignup(email string) string {
	s.t.Helper()
	r := s.call("POST", "/v1/control-plane/auth/signup", map[string]any{"email": email, "password": cpPassword}, nil)
	if r.status != 201 {
		s.t.Fatalf("signup %s: %d %s", email, r.status, r.body)
	}
	return r.obj(s.t)["session_token"].(string)
}

func (s *stack) cpLogin(email, password string, header map[string]string) reply {
	return s.call("POST", "/v1/control-plane/auth/login", map[string]any{"email": email, "password": password}, header)
}

// cpCreateKey creates a workspace key and returns the answer's body.
func (s *stack) cpCreateKey(session string, body map[string]any) map[string]any {
	s.t.Helper()
	r := s.call("POST", "/v1/control-plane/workspace/api-keys", body, bearer(session))
	if r.status != 201 {
		s.t.Fatalf("create key: %d %s", r.status, r.body)
	}
	return r.obj(s.t)
}

// cpKeyStatus returns the list's status of key id ("" when it is not listed).
func (s *stack) cpKeyStatus(session, id string) string {
	s.t.Helper()
	r := s.call("GET", "/v1/control-plane/workspace/api-keys", nil, bearer(session))
	if r.status != 200 {
		s.t.Fatalf("list keys: %d %s", r.status, r.body)
	}
	for _, k := range r.obj(s.t)["api_keys"].([]any) {
		if k := k.(map[string]any); k["id"] == id {
			return k["status"].(string)
		}
	}
	return ""
}

func TestControlPlaneSignupAndLogin(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	signup := func(body map[string]any) reply { return s.call("POST", "/v1/control-plane/auth/signup", body, nil) }

	// The acceptance check: signup, then a wrong password.
	r := signup(map[string]any{"email": "acceptance@example.com", "password": cpPassword})
	if r.status != 201 {
		t.Fatalf("signup: got %d %s, want 201", r.status, r.body)
	}
	b := r.obj(t)
	ws, _ := b["workspace"].(map[string]any)
	if tok, _ := b["session_token"].(string); !strings.HasPrefix(tok, "wss_") || b["token_type"] != "Bearer" || b["expires_at"] == nil ||
		b["idle_timeout_seconds"] != 86400.0 || ws["email"] != "acceptance@example.com" || ws["workspace_name"] != "acceptance" || ws["plan"] != "trial" {
		t.Fatalf("signup body: %s", r.body)
	}
	if strings.Contains(string(r.body), cpPassword) || strings.Contains(s.logs.String(), cpPassword) {
		t.Fatal("the password appears in the answer or the log")
	}
	wrong := s.cpLogin("acceptance@example.com", "correct horse battery stable", nil)
	if wrong.status != 401 || strings.TrimSpace(string(wrong.body)) != `{"detail":"invalid email or password"}` {
		t.Fatalf("wrong password: got %d %s, want 401 invalid email or password", wrong.status, wrong.body)
	}
	// An unknown e-mail is told exactly the same.
	unknown := s.cpLogin("nobody@example.com", cpPassword, nil)
	if unknown.status != 401 || string(unknown.body) != string(wrong.body) {
		t.Fatalf("unknown e-mail: got %d %s, want the wrong password's answer", unknown.status, unknown.body)
	}

	// A second run of the acceptance suite: the same signup logs in (200), a new session each time.
	again := signup(map[string]any{"email": "Acceptance@Example.com", "password": cpPassword})
	if again.status != 200 || again.obj(t)["session_token"] == b["session_token"] {
		t.Fatalf("repeated signup: got %d %s, want 200 with a new session", again.status, again.body)
	}
	if wrong := s.cpLogin("acceptance@example.com", "correct horse battery stable", nil); wrong.status != 401 {
		t.Fatalf("second run's wrong password: got %d %s, want 401", wrong.status, wrong.body)
	}
	if r := signup(map[string]any{"email": "acceptance@example.com", "password": "another long passphrase here"}); r.status != 409 {
		t.Fatalf("signup with another password: got %d %s, want 409", r.status, r.body)
	}
	if r := s.cpLogin("ACCEPTANCE@example.com", cpPassword, nil); r.status != 200 || r.obj(t)["workspace"].(map[string]any)["id"] != ws["id"] {
		t.Fatalf("login: got %d %s, want 200 on the same workspace", r.status, r.body)
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
		if d, _ := r.obj(t)["detail"].(string); r.status != 422 || !strings.Contains(d, tt.detail) {
			t.Errorf("signup %v: got %d %s, want 422 mentioning %q", tt.body, r.status, r.body, tt.detail)
		}
	}
	if r := s.cpLogin("not-an-email", cpPassword, nil); r.status != 422 {
		t.Errorf("login with a malformed e-mail: got %d %s, want 422", r.status, r.body)
	}
	var hash string
	if err := s.pool.QueryRow(context.Background(), `SELECT password_hash FROM accounts WHERE email = 'acceptance@example.com'`).Scan(&hash); err != nil ||
		!strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("stored password: got %q, %v; want an argon2id PHC string", hash, err)
	}
}

func TestControlPlaneWorkspaceAndKeys(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	session := s.cpSignup("owner@example.com")
	auth := bearer(session)

	if r := s.call("GET", "/v1/control-plane/workspace", nil, auth); r.status != 200 || r.obj(t)["workspace_name"] != "owner" {
		t.Fatalf("workspace: %d %s", r.status, r.body)
	}
	if r := s.call("POST", "/v1/control-plane/workspace", map[string]any{"workspace_name": " Acme Billing "}, auth); r.status != 200 || r.obj(t)["workspace_name"] != "Acme Billing" {
		t.Fatalf("rename: got %d %s, want 200 Acme Billing", r.status, r.body)
	}
	if r := s.call("POST", "/v1/control-plane/workspace", map[string]any{"workspace_name": ""}, auth); r.status != 422 {
		t.Fatalf("rename to nothing: got %d %s, want 422", r.status, r.body)
	}

	// Workspace routes take a session, and only a session.
	trial := s.trialKey()
	for _, h := range []map[string]string{nil, bearer("wss_forged"), bearer(trial)} {
		if r := s.call("GET", "/v1/control-plane/workspace/api-keys", nil, h); r.status != 401 {
			t.Errorf("list keys with %v: got %d %s, want 401", h, r.status, r.body)
		}
	}
	if r := s.call("GET", "/v1/limits", nil, auth); r.status != 401 {
		t.Errorf("a session as an API key: got %d %s, want 401", r.status, r.body)
	}

	created := s.cpCreateKey(session, map[string]any{"name": "claims worker"})
	secret, _ := created["key"].(string)
	id, _ := created["id"].(string)
	if !strings.HasPrefix(secret, "sk_") || created["name"] != "claims worker" || created["plan"] != "trial" ||
		created["prefix"] != secret[:11] || created["created_at"] == nil || created["delivery"] != "response" || created["setup_url"] != nil {
		t.Fatalf("created key: %v", created)
	}
	// The key is an ordinary key of the workspace's account.
	lim := s.call("GET", "/v1/limits", nil, bearer(secret))
	if lim.status != 200 || lim.obj(t)["plan"] != "trial" {
		t.Fatalf("the new key's limits: %d %s", lim.status, lim.body)
	}
	list := s.call("GET", "/v1/control-plane/workspace/api-keys", nil, auth)
	if list.status != 200 || strings.Contains(string(list.body), secret) || s.cpKeyStatus(session, id) != "active" {
		t.Fatalf("list: %d %s, want the key active and no secret", list.status, list.body)
	}

	// Another workspace neither sees nor revokes it.
	other := s.cpSignup("other@example.com")
	if s.cpKeyStatus(other, id) != "" {
		t.Fatal("another workspace lists the key")
	}
	for _, path := range []string{id, "6f1c1f8e-8d4b-4c39-a0d3-7c2f5a1e9b10", "not-a-uuid"} {
		if r := s.call("DELETE", "/v1/control-plane/workspace/api-keys/"+path, nil, bearer(other)); r.status != 404 {
			t.Errorf("revoke %s from another workspace: got %d %s, want 404", path, r.status, r.body)
		}
	}

	// Revocation holds at once on this replica, although the key was just cached.
	if r := s.call("DELETE", "/v1/control-plane/workspace/api-keys/"+id, nil, auth); r.status != 204 {
		t.Fatalf("revoke: got %d %s, want 204", r.status, r.body)
	}
	if r := s.call("GET", "/v1/limits", nil, bearer(secret)); r.status != 401 {
		t.Fatalf("revoked key: got %d %s, want 401", r.status, r.body)
	}
	if st := s.cpKeyStatus(session, id); st != "revoked" {
		t.Fatalf("revoked key's status: got %q, want revoked", st)
	}
	if r := s.call("DELETE", "/v1/control-plane/workspace/api-keys/"+id, nil, auth); r.status != 204 {
		t.Fatalf("revoking again: got %d %s, want 204", r.status, r.body)
	}
	if r := s.call("POST", "/v1/control-plane/workspace/api-keys", map[string]any{"delivery": "carrier pigeon"}, auth); r.status != 422 {
		t.Fatalf("unknown delivery: got %d %s, want 422", r.status, r.body)
	}

	// Logout ends the session.
	if r := s.call("POST", "/v1/control-plane/auth/logout", nil, auth); r.status != 204 {
		t.Fatalf("logout: got %d %s, want 204", r.status, r.body)
	}
	if r := s.call("GET", "/v1/control-plane/workspace", nil, auth); r.status != 401 {
		t.Fatalf("after logout: got %d %s, want 401", r.status, r.body)
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
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*)::text FROM key_setup_links WHERE sealed IS NOT NULL`).Scan(&token); err != nil || token != "1" {
		t.Fatalf("sealed secrets stored: %q, %v", token, err)
	}

	// GET (a link preview, a mail scanner) shows the link without using it, as often as it likes.
	for range 2 {
		r := s.call("GET", path, nil, nil)
		if b := r.obj(t); r.status != 200 || b["status"] != "pending" || b["key_id"] != id || b["key"] != nil {
			t.Fatalf("GET setup link: %d %s", r.status, r.body)
		}
	}
	// POST reveals it once; several at once still reveal it once.
	results := make([]reply, 5)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = s.call("POST", path, nil, nil) })
	}
	wg.Wait()
	var secret string
	gone := 0
	for _, r := range results {
		switch r.status {
		case 200:
			if secret != "" {
				t.Fatal("the link revealed its key twice")
			}
			secret, _ = r.obj(t)["key"].(string)
			if r.obj(t)["id"] != id {
				t.Fatalf("revealed: %s", r.body)
			}
		case 410:
			gone++
		default:
			t.Fatalf("concurrent reveal: %d %s", r.status, r.body)
		}
	}
	if secret == "" || gone != 4 {
		t.Fatalf("concurrent reveals: got key %q and %d times 410, want one key and 4 times 410", secret, gone)
	}
	if r := s.call("GET", "/v1/limits", nil, bearer(secret)); r.status != 200 {
		t.Fatalf("the revealed key: %d %s", r.status, r.body)
	}
	for _, method := range []string{"POST", "GET"} {
		if r := s.call(method, path, nil, nil); r.status != 410 {
			t.Fatalf("%s a used link: got %d %s, want 410", method, r.status, r.body)
		}
	}
	if st := s.cpKeyStatus(session, id); st != "active" {
		t.Fatalf("status after the link is used: got %q, want active", st)
	}
	if r := s.call("POST", "/v1/control-plane/setup?token=kst_unknown", nil, nil); r.status != 404 {
		t.Fatalf("unknown link: got %d %s, want 404", r.status, r.body)
	}

	// A revoked key's link reveals nothing.
	revoked := s.cpCreateKey(session, map[string]any{"delivery": "setup_link"})
	if r := s.call("DELETE", "/v1/control-plane/workspace/api-keys/"+revoked["id"].(string), nil, bearer(session)); r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	ru, _ := url.Parse(revoked["setup_url"].(string))
	if r := s.call("POST", "/v1/control-plane/setup?"+ru.RawQuery, nil, nil); r.status != 410 {
		t.Fatalf("link of a revoked key: got %d %s, want 410", r.status, r.body)
	}
	// The token never reaches the log: the access log leaves the query out.
	if strings.Contains(s.logs.String(), u.Query().Get("token")) {
		t.Fatal("the setup token appears in the log")
	}
}

func TestControlPlaneThrottlesFailedSignIns(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	s.cpSignup("target@example.com")

	// Five failures per e-mail in 15 minutes, then 429 even with the right password.
	for i := range 5 {
		if r := s.cpLogin("target@example.com", fmt.Sprintf("wrong guess number %d", i), nil); r.status != 401 {
			t.Fatalf("failure %d: got %d %s, want 401", i+1, r.status, r.body)
		}
	}
	for _, password := range []string{"wrong guess number 6", cpPassword} {
		r := s.cpLogin("target@example.com", password, nil)
		retry, err := strconv.Atoi(r.header.Get("Retry-After"))
		if r.status != 429 || err != nil || retry < 1 || retry > 900 || r.obj(t)["retry_after_seconds"] != float64(retry) {
			t.Fatalf("sixth attempt: got %d %s (Retry-After %q), want 429 with Retry-After in 1..900", r.status, r.body, r.header.Get("Retry-After"))
		}
	}
	// A repeated signup with the right password is a login: throttled too.
	if r := s.call("POST", "/v1/control-plane/auth/signup", map[string]any{"email": "target@example.com", "password": cpPassword}, nil); r.status != 429 {
		t.Fatalf("signup of a locked e-mail: got %d %s, want 429", r.status, r.body)
	}
	// Other e-mails from this address go on, up to the address's limit of 20 failures (5 spent).
	s.cpSignup("bystander@example.com")
	for i := range 15 {
		if r := s.cpLogin(fmt.Sprintf("spray%d@example.com", i), cpPassword, nil); r.status != 401 {
			t.Fatalf("spray %d: got %d %s, want 401", i, r.status, r.body)
		}
	}
	// The address is now locked for everyone behind it, and a forged X-Forwarded-For does not
	// change the address counted (no trusted proxy is configured).
	for _, h := range []map[string]string{nil, {"X-Forwarded-For": "203.0.113.9"}} {
		if r := s.cpLogin("bystander@example.com", cpPassword, h); r.status != 429 {
			t.Fatalf("login from a locked address (%v): got %d %s, want 429", h, r.status, r.body)
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
		if r := s.cpLogin(fmt.Sprintf("user%d@example.com", i), cpPassword, from("198.51.100.7")); r.status != 401 {
			t.Fatalf("failure %d: got %d %s, want 401", i+1, r.status, r.body)
		}
	}
	if r := s.cpLogin("proxied@example.com", cpPassword, from("198.51.100.7")); r.status != 429 {
		t.Fatalf("locked client: got %d %s, want 429", r.status, r.body)
	}
	if r := s.cpLogin("proxied@example.com", cpPassword, from("198.51.100.8")); r.status != 200 {
		t.Fatalf("another client behind the proxy: got %d %s, want 200", r.status, r.body)
	}
}
