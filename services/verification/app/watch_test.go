package app_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/services/verification/app"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/readiness"
)

// The watch API's tests: keys, authentication and scopes, watches, policies, limits and cursors.
// Targets are public IP literals, so that creating a watch needs no DNS.

const unknownID = "0190a0b0-0000-7000-8000-000000000000"

// watchOrg creates an organization and returns its id.
func (s *stack) watchOrg(name string) string {
	s.t.Helper()
	org := s.Must("POST", "/v1/intelligence/organizations", map[string]any{"name": name}, admin, http.StatusCreated)
	return org.Object(s.t)["id"].(string)
}

// watchKey issues a watch key of the organization with scopes and returns its secret.
func (s *stack) watchKey(org string, scopes ...string) string {
	s.t.Helper()
	k := s.Must("POST", "/v1/watch/api-keys", map[string]any{"organizationId": org, "name": "ci", "scopes": scopes}, admin, http.StatusCreated)
	return k.Object(s.t)["apiKey"].(string)
}

// watchWriter creates an organization with a read-write watch key and returns the key's header.
func (s *stack) watchWriter(name string) map[string]string {
	s.t.Helper()
	return bearer(s.watchKey(s.watchOrg(name), "watch:read", "watch:write"))
}

// target is a public IP-literal target URL, distinct for each n.
func target(n int) string { return fmt.Sprintf("https://93.184.%d.%d/mcp", 216+n/250, 1+n%250) }

// detailString is a body's detail when it is a string.
func detailString(t *testing.T, r interface {
	Object(testing.TB) map[string]any
}) string {
	t.Helper()
	d, _ := r.Object(t)["detail"].(string)
	return d
}

// detailCode is a business error's code ({"detail":{"error":...}}).
func detailCode(t *testing.T, body []byte) (string, map[string]any) {
	t.Helper()
	var v struct {
		Detail map[string]any `json:"detail"`
	}
	_ = json.Unmarshal(body, &v)
	code, _ := v.Detail["error"].(string)
	return code, v.Detail
}

// violations are the loc and type of each problem of a 422 body.
func violations(t *testing.T, body []byte) [][2]string {
	t.Helper()
	var v struct {
		Detail []struct {
			Loc  []any  `json:"loc"`
			Type string `json:"type"`
			Msg  string `json:"msg"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("422 body %s is not an HTTPValidationError", body)
	}
	var out [][2]string
	for _, d := range v.Detail {
		parts := make([]string, 0, len(d.Loc))
		for _, l := range d.Loc {
			parts = append(parts, fmt.Sprint(l))
		}
		if d.Msg == "" {
			t.Errorf("violation without msg in %s", body)
		}
		out = append(out, [2]string{strings.Join(parts, "."), d.Type})
	}
	return out
}

func TestWatchAPIKeys(t *testing.T) {
	t.Parallel()
	s := startService(t)
	org := s.watchOrg("Key holders")

	body := map[string]any{"organizationId": org, "name": "ci", "scopes": []string{"watch:read"}}
	for name, h := range map[string]map[string]string{"no admin token": nil, "wrong admin token": {"X-Admin-Token": "wrong-token-0123456789"}} {
		for _, r := range []struct{ method, path string }{
			{"POST", "/v1/watch/api-keys"}, {"GET", "/v1/watch/api-keys?organizationId=" + org}, {"DELETE", "/v1/watch/api-keys/" + unknownID},
		} {
			if got := s.Do(r.method, r.path, body, h); got.Status != 401 || detailString(t, got) == "" {
				t.Errorf("%s %s with %s: got %d %s, want 401", r.method, r.path, name, got.Status, got.Body)
			}
		}
	}
	// A watch key is no admin token.
	rw := s.watchKey(org, "watch:read", "watch:write")
	if r := s.Do("POST", "/v1/watch/api-keys", body, bearer(rw)); r.Status != 401 {
		t.Errorf("issue a key with a watch key: got %d %s, want 401", r.Status, r.Body)
	}

	for _, tt := range []struct {
		name string
		body map[string]any
		loc  string
	}{
		{"no organization", map[string]any{"name": "x", "scopes": []string{"watch:read"}}, "body.organizationId"},
		{"organization not a UUID", map[string]any{"organizationId": "acme", "name": "x", "scopes": []string{"watch:read"}}, "body.organizationId"},
		{"no name", map[string]any{"organizationId": org, "scopes": []string{"watch:read"}}, "body.name"},
		{"blank name", map[string]any{"organizationId": org, "name": "  ", "scopes": []string{"watch:read"}}, "body.name"},
		{"long name", map[string]any{"organizationId": org, "name": strings.Repeat("n", 201), "scopes": []string{"watch:read"}}, "body.name"},
		{"no scopes", map[string]any{"organizationId": org, "name": "x"}, "body.scopes"},
		{"empty scopes", map[string]any{"organizationId": org, "name": "x", "scopes": []string{}}, "body.scopes"},
		{"unknown scope", map[string]any{"organizationId": org, "name": "x", "scopes": []string{"watch:read", "admin"}}, "body.scopes.1"},
		{"zero lifetime", map[string]any{"organizationId": org, "name": "x", "scopes": []string{"watch:read"}, "expiresInSeconds": 0}, "body.expiresInSeconds"},
		{"lifetime over a year", map[string]any{"organizationId": org, "name": "x", "scopes": []string{"watch:read"}, "expiresInSeconds": 31536001}, "body.expiresInSeconds"},
	} {
		r := s.Do("POST", "/v1/watch/api-keys", tt.body, admin)
		if r.Status != 422 || !slices.ContainsFunc(violations(t, r.Body), func(v [2]string) bool { return v[0] == tt.loc }) {
			t.Errorf("%s: got %d %s, want 422 locating %s", tt.name, r.Status, r.Body, tt.loc)
		}
	}
	r := s.Do("POST", "/v1/watch/api-keys", map[string]any{"organizationId": unknownID, "name": "x", "scopes": []string{"watch:read"}}, admin)
	if code, _ := detailCode(t, r.Body); r.Status != 404 || code != "organization_not_found" {
		t.Errorf("issue a key for an unknown organization: got %d %s, want 404 organization_not_found", r.Status, r.Body)
	}

	before := time.Now()
	issued := s.Must("POST", "/v1/watch/api-keys", map[string]any{
		"organizationId": org, "name": " reader ", "scopes": []string{"watch:write", "watch:read", "watch:read"}, "expiresInSeconds": 3600,
	}, admin, http.StatusCreated).Object(t)
	secret, _ := issued["apiKey"].(string)
	if !strings.HasPrefix(secret, "wk_") || len(secret) != 3+43 || !strings.HasPrefix(secret, issued["prefix"].(string)) || len(issued["prefix"].(string)) != 11 {
		t.Fatalf("issued key %v: want wk_ and 43 base64url characters, with its 11-character prefix", issued)
	}
	if issued["name"] != "reader" || issued["organizationId"] != org || fmt.Sprint(issued["scopes"]) != "[watch:read watch:write]" || issued["id"] == "" {
		t.Errorf("issued key %v", issued)
	}
	expires, err := time.Parse(time.RFC3339Nano, fmt.Sprint(issued["expiresAt"]))
	if err != nil || expires.Before(before.Add(59*time.Minute)) || expires.After(time.Now().Add(61*time.Minute)) {
		t.Errorf("expiresAt %v, want an hour from now", issued["expiresAt"])
	}
	var stored []byte
	if err := s.Pool.QueryRow(t.Context(), `SELECT key_hash FROM watch_api_keys WHERE id = $1`, issued["id"]).Scan(&stored); err != nil ||
		len(stored) != 32 || strings.Contains(string(stored), secret) {
		t.Errorf("stored key: %x %v, want only a SHA-256", stored, err)
	}
	if n := s.Count(`SELECT count(*) FROM watch_api_keys WHERE prefix = $1 AND expires_at IS NOT NULL`, issued["prefix"]); n != 1 {
		t.Errorf("stored keys with the prefix and an expiry: %d", n)
	}
	// Without expiresInSeconds a key does not expire.
	forever := s.Must("POST", "/v1/watch/api-keys", map[string]any{"organizationId": org, "name": "forever", "scopes": []string{"watch:read"}}, admin, 201).Object(t)
	if _, ok := forever["expiresAt"]; ok {
		t.Errorf("key without a lifetime: %v, want no expiresAt", forever)
	}

	list := s.Must("GET", "/v1/watch/api-keys?organizationId="+org, nil, admin, 200)
	var keys []map[string]any
	list.Decode(t, &keys)
	if len(keys) != 3 || strings.Contains(string(list.Body), secret) || strings.Contains(string(list.Body), "apiKey") {
		t.Fatalf("list keys: %s, want 3 keys without secrets", list.Body)
	}
	if keys[1]["id"] != issued["id"] || keys[1]["prefix"] != issued["prefix"] || keys[1]["expiresAt"] == nil || keys[1]["revokedAt"] != nil {
		t.Errorf("listed key %v, want the issued one, oldest first", keys[1])
	}
	for path, want := range map[string]int{
		"/v1/watch/api-keys":                             422,
		"/v1/watch/api-keys?organizationId=acme":         422,
		"/v1/watch/api-keys?organizationId=" + unknownID: 404,
	} {
		if r := s.Do("GET", path, nil, admin); r.Status != want {
			t.Errorf("GET %s: got %d %s, want %d", path, r.Status, r.Body, want)
		}
	}

	// Revocation works at once; revoking again is 204; unknown and malformed ids are 404.
	if r := s.Do("GET", "/v1/watch/watches", nil, bearer(secret)); r.Status != 200 {
		t.Fatalf("list with the new key: %d %s", r.Status, r.Body)
	}
	if r := s.Do("DELETE", "/v1/watch/api-keys/"+issued["id"].(string), nil, admin); r.Status != 204 || len(r.Body) != 0 {
		t.Fatalf("revoke: %d %s, want 204 without a body", r.Status, r.Body)
	}
	if r := s.Do("GET", "/v1/watch/watches", nil, bearer(secret)); r.Status != 401 || detailString(t, r) != "invalid_or_revoked_api_key" {
		t.Errorf("revoked key: got %d %s, want 401 invalid_or_revoked_api_key", r.Status, r.Body)
	}
	if r := s.Do("DELETE", "/v1/watch/api-keys/"+issued["id"].(string), nil, admin); r.Status != 204 {
		t.Errorf("second revoke: got %d, want 204", r.Status)
	}
	for _, id := range []string{unknownID, "not-a-uuid"} {
		r := s.Do("DELETE", "/v1/watch/api-keys/"+id, nil, admin)
		if code, _ := detailCode(t, r.Body); r.Status != 404 || code != "watch_api_key_not_found" {
			t.Errorf("revoke %s: got %d %s, want 404 watch_api_key_not_found", id, r.Status, r.Body)
		}
	}
	s.Must("GET", "/v1/watch/api-keys?organizationId="+org, nil, admin, 200).Decode(t, &keys)
	if keys[1]["revokedAt"] == nil {
		t.Errorf("revoked key listed as %v", keys[1])
	}
}

func TestWatchAPIAuthentication(t *testing.T) {
	t.Parallel()
	s := startService(t)
	org := s.watchOrg("Authenticated")
	rw := s.watchKey(org, "watch:read", "watch:write")
	ro := s.watchKey(org, "watch:read")
	wo := s.watchKey(org, "watch:write")
	_, intelKey := s.newKey("Intelligence")

	for _, tt := range []struct {
		name   string
		header map[string]string
		want   string
	}{
		{"no header", nil, "missing_bearer_token"},
		{"not bearer", map[string]string{"Authorization": "Basic dXNlcjpwYXNz"}, "missing_bearer_token"},
		{"unknown watch key", bearer("wk_" + strings.Repeat("A", 43)), "invalid_or_revoked_api_key"},
		{"not a key", bearer("hello"), "invalid_or_revoked_api_key"},
		{"an intelligence key", bearer(intelKey), "invalid_or_revoked_api_key"},
	} {
		r := s.Do("GET", "/v1/watch/watches", nil, tt.header)
		if r.Status != 401 || strings.TrimSpace(string(r.Body)) != `{"detail":"`+tt.want+`"}` {
			t.Errorf("%s: got %d %s, want 401 %s", tt.name, r.Status, r.Body, tt.want)
		}
	}
	// A watch key opens no intelligence route.
	if r := s.Do("GET", "/v1/intelligence/whoami", nil, bearer(rw)); r.Status != 401 {
		t.Errorf("whoami with a watch key: got %d, want 401", r.Status)
	}

	// Expiry: a key past its expiresAt is refused with its own answer, and stays refused.
	short := s.Must("POST", "/v1/watch/api-keys", map[string]any{"organizationId": org, "name": "short", "scopes": []string{"watch:read"}, "expiresInSeconds": 1}, admin, 201).Object(t)
	shortKey := short["apiKey"].(string)
	if r := s.Do("GET", "/v1/watch/watches", nil, bearer(shortKey)); r.Status != 200 {
		t.Errorf("a fresh key of 1 s: got %d %s", r.Status, r.Body)
	}
	eventually(t, "the key to expire", func() bool {
		r := s.Do("GET", "/v1/watch/watches", nil, bearer(shortKey))
		return r.Status == 401 && strings.TrimSpace(string(r.Body)) == `{"detail":"expired_api_key"}`
	})
	// Revoked beats expired: a revoked key is invalid_or_revoked whatever its expiry.
	s.Must("DELETE", "/v1/watch/api-keys/"+short["id"].(string), nil, admin, 204)
	if r := s.Do("GET", "/v1/watch/watches", nil, bearer(shortKey)); detailString(t, r) != "invalid_or_revoked_api_key" {
		t.Errorf("revoked expired key: got %d %s", r.Status, r.Body)
	}

	// Scopes: reads accept watch:read or watch:write, writes need watch:write.
	w := s.Must("POST", "/v1/watch/watches", map[string]any{"targetUrl": target(1), "evaluator": "mcp"}, bearer(rw), 201).Object(t)
	p := s.Must("POST", "/v1/watch/policies", map[string]any{"name": "p", "rules": map[string]any{}}, bearer(rw), 201).Object(t)
	watchPath, policyPath := "/v1/watch/watches/"+w["id"].(string), "/v1/watch/policies/"+p["id"].(string)
	const readScopes, writeScopes = "watch:read, watch:write", "watch:write"
	for _, route := range []struct {
		method, path string
		body         any
		need         string
	}{
		{"GET", "/v1/watch/watches", nil, readScopes},
		{"GET", watchPath, nil, readScopes},
		{"GET", watchPath + "/runs", nil, readScopes},
		{"GET", "/v1/watch/policies", nil, readScopes},
		{"GET", policyPath, nil, readScopes},
		{"POST", "/v1/watch/watches", map[string]any{"targetUrl": target(2), "evaluator": "mcp"}, writeScopes},
		{"PATCH", watchPath, map[string]any{"intervalSeconds": 600}, writeScopes},
		{"DELETE", watchPath, nil, writeScopes},
		{"POST", watchPath + "/runs", map[string]any{}, writeScopes},
		{"POST", "/v1/watch/policies", map[string]any{"name": "q", "rules": map[string]any{}}, writeScopes},
		{"PATCH", policyPath, map[string]any{"name": "p2"}, writeScopes},
		{"DELETE", policyPath, nil, writeScopes},
	} {
		r := s.Do(route.method, route.path, route.body, bearer(ro))
		if route.need == writeScopes {
			if r.Status != 403 || strings.TrimSpace(string(r.Body)) != `{"detail":"api_key_missing_required_scope: need one of watch:write"}` {
				t.Errorf("%s %s with watch:read: got %d %s, want 403 needing watch:write", route.method, route.path, r.Status, r.Body)
			}
		} else if r.Status != 200 {
			t.Errorf("%s %s with watch:read: got %d %s, want 200", route.method, route.path, r.Status, r.Body)
		}
		// watch:write alone reads too.
		if route.method == "GET" {
			if r := s.Do(route.method, route.path, nil, bearer(wo)); r.Status != 200 {
				t.Errorf("%s %s with watch:write: got %d %s, want 200", route.method, route.path, r.Status, r.Body)
			}
		}
	}
}

func TestTargetWatches(t *testing.T) {
	t.Parallel()
	s := startService(t)
	rw := s.watchWriter("Watchers")
	other := s.watchWriter("Others")

	// Target refusals are 422 at body.targetUrl, typed with the audit routes' codes.
	for _, tt := range []struct{ url, code string }{
		{"", "remote_url_required"},
		{"not a url", "remote_url_required"},
		{"http://93.184.216.34/mcp", "public_https_url_required"},
		{"https://10.1.2.3/mcp", "ssrf_ip_blocked"},
		{"https://127.0.0.1/mcp", "ssrf_ip_blocked"},
		{"https://169.254.169.254/latest", "ssrf_ip_blocked"},
		{"https://[::1]/mcp", "ssrf_ip_blocked"},
		{"https://printer.local/mcp", "ssrf_host_blocked"},
		{"https://localhost/mcp", "ssrf_host_blocked"},
		{"https://u:p@93.184.216.34/mcp", "url_credentials_or_fragment_blocked"},
		{"https://93.184.216.34/mcp#x", "url_credentials_or_fragment_blocked"},
		{"https://93.184.216.34:8443/mcp", "https_port_required"},
		{"https://93.184.216.34:99999/mcp", "invalid_port"},
	} {
		r := s.Do("POST", "/v1/watch/watches", map[string]any{"targetUrl": tt.url, "evaluator": "mcp"}, rw)
		if r.Status != 422 || !slices.Contains(violations(t, r.Body), [2]string{"body.targetUrl", tt.code}) {
			t.Errorf("target %q: got %d %s, want 422 at body.targetUrl typed %s", tt.url, r.Status, r.Body, tt.code)
		}
	}
	for _, tt := range []struct {
		name string
		body map[string]any
		loc  string
	}{
		{"no evaluator", map[string]any{"targetUrl": target(1)}, "body.evaluator"},
		{"unknown evaluator", map[string]any{"targetUrl": target(1), "evaluator": "fuzz"}, "body.evaluator"},
		{"interval below the minimum", map[string]any{"targetUrl": target(1), "evaluator": "mcp", "intervalSeconds": 59}, "body.intervalSeconds"},
		{"interval above 30 days", map[string]any{"targetUrl": target(1), "evaluator": "mcp", "intervalSeconds": 2592001}, "body.intervalSeconds"},
		{"policy not a UUID", map[string]any{"targetUrl": target(1), "evaluator": "mcp", "policyId": "strict"}, "body.policyId"},
		{"unknown policy", map[string]any{"targetUrl": target(1), "evaluator": "mcp", "policyId": unknownID}, "body.policyId"},
	} {
		r := s.Do("POST", "/v1/watch/watches", tt.body, rw)
		if r.Status != 422 || !slices.ContainsFunc(violations(t, r.Body), func(v [2]string) bool { return v[0] == tt.loc }) {
			t.Errorf("%s: got %d %s, want 422 at %s", tt.name, r.Status, r.Body, tt.loc)
		}
	}
	if n := s.Count(`SELECT count(*) FROM target_watches`); n != 0 {
		t.Fatalf("%d watches stored by refused requests", n)
	}

	// Creation: active, the default interval, the first run due at once; the URL's host and scheme
	// are normalised, and so is the default port.
	created := s.Must("POST", "/v1/watch/watches", map[string]any{"targetUrl": " HTTPS://93.184.216.34:443/mcp ", "evaluator": "mcp"}, rw, 201).Object(t)
	id := created["id"].(string)
	if created["status"] != "active" || created["evaluator"] != "mcp" || created["targetUrl"] != "https://93.184.216.34/mcp" ||
		created["intervalSeconds"] != 3600.0 || created["policyId"] != "" || created["nextRunAt"] != created["createdAt"] ||
		created["createdAt"] == nil || created["organizationId"] == "" {
		t.Errorf("created watch %v", created)
	}
	var host string
	if err := s.Pool.QueryRow(t.Context(), `SELECT target_host FROM target_watches WHERE id = $1`, id).Scan(&host); err != nil || host != "93.184.216.34" {
		t.Errorf("target_host %q %v", host, err)
	}
	// The same pair again, however it is spelt: 409 with the existing watch's id.
	for _, u := range []string{"https://93.184.216.34/mcp", "https://93.184.216.34:443/mcp"} {
		r := s.Do("POST", "/v1/watch/watches", map[string]any{"targetUrl": u, "evaluator": "mcp", "intervalSeconds": 60}, rw)
		code, d := detailCode(t, r.Body)
		if r.Status != 409 || code != "watch_already_exists" || d["watchId"] != id || d["message"] == "" {
			t.Errorf("same pair %s: got %d %s, want 409 watch_already_exists with watchId %s", u, r.Status, r.Body, id)
		}
	}
	// Another evaluator, and another organization, may watch the same target.
	readiness := s.Must("POST", "/v1/watch/watches", map[string]any{"targetUrl": "https://93.184.216.34/mcp", "evaluator": "readiness", "intervalSeconds": 60}, rw, 201).Object(t)
	if readiness["intervalSeconds"] != 60.0 {
		t.Errorf("interval of 60 s: %v", readiness["intervalSeconds"])
	}
	foreign := s.Must("POST", "/v1/watch/watches", map[string]any{"targetUrl": "https://93.184.216.34/mcp", "evaluator": "mcp"}, other, 201).Object(t)

	got := s.Must("GET", "/v1/watch/watches/"+id, nil, rw, 200).Object(t)
	if got["id"] != id || got["status"] != "active" || got["lastRun"] != nil {
		t.Errorf("get: %v", got)
	}
	// Another organization's id, an unknown one and a malformed one are 404 on every route.
	for _, path := range []string{"/v1/watch/watches/" + foreign["id"].(string), "/v1/watch/watches/" + unknownID, "/v1/watch/watches/not-a-uuid"} {
		for _, m := range []string{"GET", "PATCH", "DELETE"} {
			r := s.Do(m, path, map[string]any{"status": "paused"}, rw)
			if code, _ := detailCode(t, r.Body); r.Status != 404 || code != "watch_not_found" {
				t.Errorf("%s %s: got %d %s, want 404 watch_not_found", m, path, r.Status, r.Body)
			}
		}
	}

	// PATCH: an empty body is 422; status active or paused only.
	for _, body := range []any{map[string]any{}, map[string]any{"unknown": 1}} {
		r := s.Do("PATCH", "/v1/watch/watches/"+id, body, rw)
		if r.Status != 422 || !slices.ContainsFunc(violations(t, r.Body), func(v [2]string) bool { return v[0] == "body" }) {
			t.Errorf("PATCH %v: got %d %s, want 422 at body", body, r.Status, r.Body)
		}
	}
	for _, body := range []map[string]any{{"status": "archived"}, {"status": "running"}, {"intervalSeconds": 1}, {"policyId": unknownID}} {
		if r := s.Do("PATCH", "/v1/watch/watches/"+id, body, rw); r.Status != 422 {
			t.Errorf("PATCH %v: got %d %s, want 422", body, r.Status, r.Body)
		}
	}
	paused := s.Must("PATCH", "/v1/watch/watches/"+id, map[string]any{"status": "paused"}, rw, 200).Object(t)
	if paused["status"] != "paused" || paused["updatedAt"] == created["updatedAt"] {
		t.Errorf("paused: %v", paused)
	}
	// A shorter interval brings the next run forward; a longer one does not push it back.
	s.Must("PATCH", "/v1/watch/watches/"+id, map[string]any{"status": "active"}, rw, 200)
	if _, err := s.Pool.Exec(t.Context(), `UPDATE target_watches SET next_run_at = now() + interval '1 hour' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	faster := s.Must("PATCH", "/v1/watch/watches/"+id, map[string]any{"intervalSeconds": 120}, rw, 200).Object(t)
	next, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(faster["nextRunAt"]))
	if faster["intervalSeconds"] != 120.0 || faster["status"] != "active" || next.Before(before.Add(110*time.Second)) || next.After(time.Now().Add(121*time.Second)) {
		t.Errorf("interval 120: %v, want the next run within 2 minutes", faster)
	}
	slower := s.Must("PATCH", "/v1/watch/watches/"+id, map[string]any{"intervalSeconds": 7200}, rw, 200).Object(t)
	if slower["nextRunAt"] != faster["nextRunAt"] {
		t.Errorf("a longer interval moved the next run: %v -> %v", faster["nextRunAt"], slower["nextRunAt"])
	}

	// Policies: attach, detach; another organization's policy is unknown here.
	policy := s.Must("POST", "/v1/watch/policies", map[string]any{"name": "strict", "rules": map[string]any{"minScore": 80}}, rw, 201).Object(t)
	foreignPolicy := s.Must("POST", "/v1/watch/policies", map[string]any{"name": "strict", "rules": map[string]any{}}, other, 201).Object(t)
	if r := s.Do("PATCH", "/v1/watch/watches/"+id, map[string]any{"policyId": foreignPolicy["id"]}, rw); r.Status != 422 {
		t.Errorf("attach another organization's policy: got %d %s, want 422", r.Status, r.Body)
	}
	withPolicy := s.Must("PATCH", "/v1/watch/watches/"+id, map[string]any{"policyId": policy["id"]}, rw, 200).Object(t)
	if withPolicy["policyId"] != policy["id"] || withPolicy["intervalSeconds"] != 7200.0 {
		t.Errorf("attach policy: %v", withPolicy)
	}
	if r := s.Do("DELETE", "/v1/watch/policies/"+policy["id"].(string), nil, rw); r.Status != 409 {
		t.Errorf("delete a policy in use: got %d %s, want 409", r.Status, r.Body)
	}
	if d := s.Must("PATCH", "/v1/watch/watches/"+id, map[string]any{"policyId": ""}, rw, 200).Object(t); d["policyId"] != "" {
		t.Errorf("detach policy: %v", d)
	}

	// DELETE archives: 404 afterwards, out of the list, the pair free again, its policy let go.
	s.Must("PATCH", "/v1/watch/watches/"+readiness["id"].(string), map[string]any{"policyId": policy["id"]}, rw, 200)
	if r := s.Do("DELETE", "/v1/watch/watches/"+readiness["id"].(string), nil, rw); r.Status != 204 || len(r.Body) != 0 {
		t.Fatalf("archive: %d %s, want 204", r.Status, r.Body)
	}
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		if r := s.Do(m, "/v1/watch/watches/"+readiness["id"].(string), map[string]any{"status": "active"}, rw); r.Status != 404 {
			t.Errorf("%s an archived watch: got %d, want 404", m, r.Status)
		}
	}
	var status string
	var policyID *string
	if err := s.Pool.QueryRow(t.Context(), `SELECT status, policy_id::text FROM target_watches WHERE id = $1`, readiness["id"]).Scan(&status, &policyID); err != nil ||
		status != "archived" || policyID != nil {
		t.Errorf("archived row: %s %v %v, want archived without a policy", status, policyID, err)
	}
	list := s.Must("GET", "/v1/watch/watches", nil, rw, 200).Object(t)
	if items := list["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != id {
		t.Errorf("list after archiving: %v", list)
	}
	again := s.Must("POST", "/v1/watch/watches", map[string]any{"targetUrl": "https://93.184.216.34/mcp", "evaluator": "readiness"}, rw, 201).Object(t)
	if again["id"] == readiness["id"] {
		t.Error("the archived watch came back instead of a new one")
	}
	s.Must("DELETE", "/v1/watch/policies/"+policy["id"].(string), nil, rw, 204)
}

func TestTargetWatchLimit(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{app.EnvPrefix + "WATCH_API_LIMIT": "3"})
	rw := s.watchWriter("Capped")
	ids := make([]string, 0, 3)
	for i := range 3 {
		ids = append(ids, s.Must("POST", "/v1/watch/watches", map[string]any{"targetUrl": target(i), "evaluator": "mcp"}, rw, 201).Object(t)["id"].(string))
	}
	// Paused watches count: the cap is of watches that are not archived.
	s.Must("PATCH", "/v1/watch/watches/"+ids[0], map[string]any{"status": "paused"}, rw, 200)
	r := s.Do("POST", "/v1/watch/watches", map[string]any{"targetUrl": target(3), "evaluator": "mcp"}, rw)
	if string(r.Body) == "" || r.Status != 403 || !strings.Contains(string(r.Body), `"limit":3`) || !strings.Contains(string(r.Body), `"error":"watch_limit_reached"`) {
		t.Fatalf("past the cap: got %d %s, want 403 watch_limit_reached with limit 3", r.Status, r.Body)
	}
	// The cap is per organization.
	s.Must("POST", "/v1/watch/watches", map[string]any{"targetUrl": target(3), "evaluator": "mcp"}, s.watchWriter("Another"), 201)
	// Archiving frees a place.
	s.Must("DELETE", "/v1/watch/watches/"+ids[0], nil, rw, 204)
	s.Must("POST", "/v1/watch/watches", map[string]any{"targetUrl": target(3), "evaluator": "mcp"}, rw, 201)
}

func TestTargetWatchPages(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{app.EnvPrefix + "WATCH_API_LIMIT": "50"})
	rw := s.watchWriter("Paged")
	other := s.watchWriter("Not in the list")
	s.Must("POST", "/v1/watch/watches", map[string]any{"targetUrl": target(99), "evaluator": "mcp"}, other, 201)
	var created []string
	for i := range 7 {
		created = append(created, s.Must("POST", "/v1/watch/watches", map[string]any{"targetUrl": target(i), "evaluator": "readiness"}, rw, 201).Object(t)["id"].(string))
	}
	s.Must("PATCH", "/v1/watch/watches/"+created[2], map[string]any{"status": "paused"}, rw, 200)
	s.Must("DELETE", "/v1/watch/watches/"+created[4], nil, rw, 204)

	pages := func(query string, limit int) (ids []string, pageCount int) {
		cursor := ""
		for {
			q := url.Values{"limit": {fmt.Sprint(limit)}}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			if query != "" {
				q.Set("status", query)
			}
			page := s.Must("GET", "/v1/watch/watches?"+q.Encode(), nil, rw, 200).Object(t)
			items := page["items"].([]any)
			if len(items) > limit {
				t.Fatalf("page of %d items for limit %d", len(items), limit)
			}
			for _, it := range items {
				ids = append(ids, it.(map[string]any)["id"].(string))
			}
			pageCount++
			cursor, _ = page["nextCursor"].(string)
			if cursor == "" {
				return ids, pageCount
			}
			if pageCount > 10 {
				t.Fatal("no end to the pages")
			}
		}
	}
	var want []string
	for i := len(created) - 1; i >= 0; i-- {
		if i != 4 {
			want = append(want, created[i])
		}
	}
	if ids, n := pages("", 2); !slices.Equal(ids, want) || n != 3 {
		t.Errorf("pages of 2: %v in %d pages, want %v (newest first, archived left out) in 3", ids, n, want)
	}
	if ids, _ := pages("", 100); !slices.Equal(ids, want) {
		t.Errorf("one page: %v, want %v", ids, want)
	}
	if ids, _ := pages("paused", 2); !slices.Equal(ids, []string{created[2]}) {
		t.Errorf("paused: %v, want %v", ids, created[2])
	}
	if ids, _ := pages("active", 3); len(ids) != 5 || slices.Contains(ids, created[2]) {
		t.Errorf("active: %v", ids)
	}
	def := s.Must("GET", "/v1/watch/watches", nil, rw, 200).Object(t)
	if len(def["items"].([]any)) != 6 || def["nextCursor"] != "" {
		t.Errorf("default page: %v, want 6 items and an empty nextCursor", def)
	}

	badCursors := []string{"%%%not-a-cursor", "not-a-cursor", base64.RawURLEncoding.EncodeToString([]byte("k1:{}")),
		base64.RawURLEncoding.EncodeToString([]byte(`s1:12`)), base64.RawURLEncoding.EncodeToString([]byte(`k1:{"t":"x","id":"y"}`))}
	for _, c := range badCursors {
		for _, path := range []string{"/v1/watch/watches?cursor=", "/v1/watch/policies?cursor="} {
			r := s.Do("GET", path+c, nil, rw)
			if r.Status != 422 {
				t.Errorf("GET %s%s: got %d %s, want 422", path, c, r.Status, r.Body)
			}
		}
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "status=archived", "status=deleted"} {
		for _, path := range []string{"/v1/watch/watches?", "/v1/watch/policies?", "/v1/watch/watches/" + created[0] + "/runs?"} {
			if strings.HasPrefix(q, "status") && !strings.HasSuffix(path, "watches?") {
				continue
			}
			if r := s.Do("GET", path+q, nil, rw); r.Status != 422 {
				t.Errorf("GET %s%s: got %d %s, want 422", path, q, r.Status, r.Body)
			}
		}
	}
}

func TestWatchPolicies(t *testing.T) {
	t.Parallel()
	s := startService(t)
	rw := s.watchWriter("Policy makers")
	other := s.watchWriter("Other policy makers")

	check, finding := audit.Catalog[0].ID, readiness.Rules[0].ID
	for _, tt := range []struct {
		name string
		body map[string]any
		loc  string
	}{
		{"no name", map[string]any{"rules": map[string]any{}}, "body.name"},
		{"long name", map[string]any{"name": strings.Repeat("p", 201), "rules": map[string]any{}}, "body.name"},
		{"no rules", map[string]any{"name": "p"}, "body.rules"},
		{"score below 0", map[string]any{"name": "p", "rules": map[string]any{"minScore": -1}}, "body.rules.minScore"},
		{"score above 100", map[string]any{"name": "p", "rules": map[string]any{"minScore": 101}}, "body.rules.minScore"},
		{"unknown check", map[string]any{"name": "p", "rules": map[string]any{"requiredChecks": []string{check, "no-such-check"}}}, "body.rules.requiredChecks.1"},
		{"a readiness rule as a check", map[string]any{"name": "p", "rules": map[string]any{"requiredChecks": []string{finding}}}, "body.rules.requiredChecks.0"},
		{"unknown finding", map[string]any{"name": "p", "rules": map[string]any{"forbiddenFindings": []string{"no-such-rule"}}}, "body.rules.forbiddenFindings.0"},
		{"unknown surface change", map[string]any{"name": "p", "rules": map[string]any{"surfaceChanges": []string{"tool_added", "prompt_added"}}}, "body.rules.surfaceChanges.1"},
	} {
		r := s.Do("POST", "/v1/watch/policies", tt.body, rw)
		if r.Status != 422 || !slices.ContainsFunc(violations(t, r.Body), func(v [2]string) bool { return v[0] == tt.loc }) {
			t.Errorf("%s: got %d %s, want 422 at %s", tt.name, r.Status, r.Body, tt.loc)
		}
	}

	rules := map[string]any{
		"minScore": 80, "requiredChecks": []string{check, audit.Catalog[1].ID, check}, "forbiddenFindings": []string{finding},
		"surfaceChanges": []string{"any", "tool_added", "tool_removed", "description_changed", "parameter_added", "schema_widened", "annotation_flipped"},
		"noWorseVerdict": true,
	}
	created := s.Must("POST", "/v1/watch/policies", map[string]any{"name": "strict", "rules": rules}, rw, 201).Object(t)
	id := created["id"].(string)
	got := created["rules"].(map[string]any)
	if created["name"] != "strict" || got["minScore"] != float64(80) || fmt.Sprint(got["requiredChecks"]) != fmt.Sprint([]string{check, audit.Catalog[1].ID}) ||
		fmt.Sprint(got["forbiddenFindings"]) != fmt.Sprint([]string{finding}) || len(got["surfaceChanges"].([]any)) != 7 || got["noWorseVerdict"] != true {
		t.Errorf("created policy %v", created)
	}
	if r := s.Do("POST", "/v1/watch/policies", map[string]any{"name": "strict", "rules": map[string]any{"minScore": 50}}, rw); r.Status != 409 {
		t.Errorf("same name: got %d %s, want 409", r.Status, r.Body)
	} else if code, _ := detailCode(t, r.Body); code != "watch_policy_name_exists" {
		t.Errorf("same name: %s", r.Body)
	}
	// Names are per organization; an empty rule set is a policy too.
	s.Must("POST", "/v1/watch/policies", map[string]any{"name": "strict", "rules": map[string]any{}}, other, 201)
	lenient := s.Must("POST", "/v1/watch/policies", map[string]any{"name": "lenient", "rules": map[string]any{}}, rw, 201).Object(t)
	if r := lenient["rules"].(map[string]any); r["minScore"] != nil || len(r["requiredChecks"].([]any)) != 0 {
		t.Errorf("empty rules read back as %v", r)
	}

	read := s.Must("GET", "/v1/watch/policies/"+id, nil, rw, 200).Object(t)
	if read["id"] != id || fmt.Sprint(read["rules"]) != fmt.Sprint(created["rules"]) {
		t.Errorf("get: %v, want %v", read, created)
	}
	for _, path := range []string{unknownID, "not-a-uuid", s.Must("GET", "/v1/watch/policies", nil, other, 200).Object(t)["items"].([]any)[0].(map[string]any)["id"].(string)} {
		for _, m := range []string{"GET", "PATCH", "DELETE"} {
			r := s.Do(m, "/v1/watch/policies/"+path, map[string]any{"name": "x"}, rw)
			if code, _ := detailCode(t, r.Body); r.Status != 404 || code != "watch_policy_not_found" {
				t.Errorf("%s policy %s: got %d %s, want 404 watch_policy_not_found", m, path, r.Status, r.Body)
			}
		}
	}

	// PATCH: empty is 422, rename, replace the rules, a rename onto another policy's name is 409.
	if r := s.Do("PATCH", "/v1/watch/policies/"+id, map[string]any{}, rw); r.Status != 422 {
		t.Errorf("empty PATCH: got %d %s, want 422", r.Status, r.Body)
	}
	if r := s.Do("PATCH", "/v1/watch/policies/"+id, map[string]any{"rules": map[string]any{"minScore": 200}}, rw); r.Status != 422 {
		t.Errorf("PATCH bad rules: got %d %s, want 422", r.Status, r.Body)
	}
	if r := s.Do("PATCH", "/v1/watch/policies/"+id, map[string]any{"name": "lenient"}, rw); r.Status != 409 {
		t.Errorf("rename onto lenient: got %d %s, want 409", r.Status, r.Body)
	}
	renamed := s.Must("PATCH", "/v1/watch/policies/"+id, map[string]any{"name": "stricter"}, rw, 200).Object(t)
	if renamed["name"] != "stricter" || fmt.Sprint(renamed["rules"]) != fmt.Sprint(created["rules"]) {
		t.Errorf("renamed: %v", renamed)
	}
	replaced := s.Must("PATCH", "/v1/watch/policies/"+id, map[string]any{"rules": map[string]any{"minScore": 90}}, rw, 200).Object(t)
	if r := replaced["rules"].(map[string]any); replaced["name"] != "stricter" || r["minScore"] != float64(90) || len(r["requiredChecks"].([]any)) != 0 {
		t.Errorf("replaced rules: %v", replaced)
	}

	list := s.Must("GET", "/v1/watch/policies?limit=1", nil, rw, 200).Object(t)
	if items := list["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != lenient["id"] || list["nextCursor"] == "" {
		t.Fatalf("first page: %v", list)
	}
	second := s.Must("GET", "/v1/watch/policies?limit=1&cursor="+list["nextCursor"].(string), nil, rw, 200).Object(t)
	if items := second["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != id || second["nextCursor"] != "" {
		t.Errorf("second page: %v", second)
	}

	// In use by a watch: 409; once the watch is archived the policy goes.
	w := s.Must("POST", "/v1/watch/watches", map[string]any{"targetUrl": target(1), "evaluator": "mcp", "policyId": id}, rw, 201).Object(t)
	if w["policyId"] != id {
		t.Errorf("watch with policy: %v", w)
	}
	r := s.Do("DELETE", "/v1/watch/policies/"+id, nil, rw)
	if code, _ := detailCode(t, r.Body); r.Status != 409 || code != "watch_policy_in_use" {
		t.Errorf("delete a policy in use: got %d %s, want 409 watch_policy_in_use", r.Status, r.Body)
	}
	s.Must("PATCH", "/v1/watch/watches/"+w["id"].(string), map[string]any{"status": "paused"}, rw, 200)
	if r := s.Do("DELETE", "/v1/watch/policies/"+id, nil, rw); r.Status != 409 {
		t.Errorf("delete a policy of a paused watch: got %d, want 409", r.Status)
	}
	s.Must("DELETE", "/v1/watch/watches/"+w["id"].(string), nil, rw, 204)
	if r := s.Do("DELETE", "/v1/watch/policies/"+id, nil, rw); r.Status != 204 || len(r.Body) != 0 {
		t.Fatalf("delete the policy of an archived watch: got %d %s, want 204", r.Status, r.Body)
	}
	if r := s.Do("GET", "/v1/watch/policies/"+id, nil, rw); r.Status != 404 {
		t.Errorf("deleted policy: got %d, want 404", r.Status)
	}
	if r := s.Do("DELETE", "/v1/watch/policies/"+id, nil, rw); r.Status != 404 {
		t.Errorf("delete again: got %d, want 404", r.Status)
	}
}

func TestWatchAPISettings(t *testing.T) {
	t.Parallel()
	var s app.WatchAPISettings
	if err := config.Load(func(string) string { return "" }, app.EnvPrefix, &s); err != nil {
		t.Fatal(err)
	}
	if s.Limit != 10 || s.MinInterval != time.Minute || s.DefaultInterval != time.Hour {
		t.Errorf("defaults = %+v, want 10, 1m, 1h", s)
	}
	env := map[string]string{
		"VERIFICATION_WATCH_API_LIMIT":            "0",
		"VERIFICATION_WATCH_API_MIN_INTERVAL":     "1500ms",
		"VERIFICATION_WATCH_API_DEFAULT_INTERVAL": "1000h",
	}
	err := config.Load(func(k string) string { return env[k] }, app.EnvPrefix, &s)
	if err == nil {
		t.Fatal("want errors")
	}
	for k := range env {
		if !strings.Contains(err.Error(), k+":") {
			t.Errorf("error does not name %s:\n%v", k, err)
		}
	}
	env = map[string]string{"VERIFICATION_WATCH_API_MIN_INTERVAL": "10m", "VERIFICATION_WATCH_API_DEFAULT_INTERVAL": "5m"}
	if err := config.Load(func(k string) string { return env[k] }, app.EnvPrefix, &s); err == nil || !strings.Contains(err.Error(), "VERIFICATION_WATCH_API_DEFAULT_INTERVAL:") {
		t.Errorf("a default below the minimum: %v", err)
	}
	if !slices.Contains(app.ConfigVars(), "VERIFICATION_WATCH_API_LIMIT") {
		t.Error("ConfigVars lacks VERIFICATION_WATCH_API_LIMIT")
	}
}

// TestTargetWatchRaces sends concurrent creations: the pair and the cap hold under them.
func TestTargetWatchRaces(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{app.EnvPrefix + "WATCH_API_LIMIT": "3"})
	rw := s.watchWriter("Racing")
	statuses := func(n int, body func(i int) map[string]any) map[int]int {
		got := make(chan int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { got <- s.Do("POST", "/v1/watch/watches", body(i), rw).Status })
		}
		wg.Wait()
		close(got)
		count := map[int]int{}
		for st := range got {
			count[st]++
		}
		return count
	}
	if got := statuses(8, func(int) map[string]any { return map[string]any{"targetUrl": target(0), "evaluator": "mcp"} }); got[201] != 1 || got[409] != 7 {
		t.Errorf("8 creations of one pair: %v, want one 201 and seven 409", got)
	}
	if got := statuses(8, func(i int) map[string]any { return map[string]any{"targetUrl": target(i + 1), "evaluator": "mcp"} }); got[201] != 2 || got[403] != 6 {
		t.Errorf("8 creations against 2 free places: %v, want two 201 and six 403", got)
	}
	if n := s.Count(`SELECT count(*) FROM target_watches WHERE status <> 'archived'`); n != 3 {
		t.Errorf("%d watches stored, want the cap of 3", n)
	}
}

// TestWatchAPIDocument checks what /openapi.json says of the watch routes' credentials and answers.
func TestWatchAPIDocument(t *testing.T) {
	t.Parallel()
	s := startService(t)
	var doc struct {
		SecurityDefinitions map[string]any `json:"securityDefinitions"`
		Paths               map[string]map[string]struct {
			Security  []map[string]any `json:"security"`
			Responses map[string]any   `json:"responses"`
		} `json:"paths"`
	}
	s.Must("GET", "/openapi.json", nil, nil, 200).Decode(t, &doc)
	if doc.SecurityDefinitions["watchKey"] == nil {
		t.Fatalf("no watchKey security definition: %v", doc.SecurityDefinitions)
	}
	for _, tt := range []struct {
		path, method, security string
		responses              []string
	}{
		{"/v1/watch/api-keys", "post", "adminToken", []string{"201", "401", "404", "422"}},
		{"/v1/watch/api-keys/{id}", "delete", "adminToken", []string{"204", "401", "404"}},
		{"/v1/watch/watches", "post", "watchKey", []string{"201", "401", "403", "409", "422"}},
		{"/v1/watch/watches", "get", "watchKey", []string{"200", "401", "403", "422"}},
		{"/v1/watch/watches/{id}", "delete", "watchKey", []string{"204", "404"}},
		{"/v1/watch/watches/{id}/runs", "post", "watchKey", []string{"200", "202", "404", "409"}},
		{"/v1/watch/policies/{id}", "delete", "watchKey", []string{"204", "404", "409"}},
	} {
		op, ok := doc.Paths[tt.path][tt.method]
		if !ok {
			t.Errorf("%s %s is not documented", tt.method, tt.path)
			continue
		}
		if len(op.Security) != 1 || op.Security[0][tt.security] == nil {
			t.Errorf("%s %s: security %v, want %s", tt.method, tt.path, op.Security, tt.security)
		}
		for _, status := range tt.responses {
			if op.Responses[status] == nil {
				t.Errorf("%s %s does not document %s: %v", tt.method, tt.path, status, op.Responses)
			}
		}
	}
}
