package app_test

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestOrganizationsAndKeys(t *testing.T) {
	t.Parallel()
	s := startService(t)

	for _, h := range []map[string]string{nil, {"X-Admin-Token": "wrong-token-0123456789"}} {
		r := s.Do("POST", "/v1/intelligence/organizations", map[string]any{"name": "Acme"}, h)
		if d, ok := r.Object(t)["detail"].(string); r.Status != 401 || !ok || d == "" {
			t.Errorf("create organization with %v: got %d %s, want 401 with a string detail", h, r.Status, r.Body)
		}
	}
	for _, body := range []map[string]any{{}, {"name": "  "}, {"name": strings.Repeat("x", 201)}} {
		r := s.Do("POST", "/v1/intelligence/organizations", body, admin)
		var v struct {
			Detail []struct {
				Loc []any `json:"loc"`
			} `json:"detail"`
		}
		if r.Status != 422 || json.Unmarshal(r.Body, &v) != nil || len(v.Detail) != 1 || v.Detail[0].Loc[1] != "name" {
			t.Errorf("create organization %v: got %d %s, want 422 locating body.name", body, r.Status, r.Body)
		}
	}

	org := s.Do("POST", "/v1/intelligence/organizations", map[string]any{"name": "Acme Health"}, admin)
	if org.Status != 201 || org.Object(t)["name"] != "Acme Health" || org.Object(t)["id"] == "" {
		t.Fatalf("create organization: %d %s", org.Status, org.Body)
	}
	orgID := org.Object(t)["id"].(string)
	keys := "/v1/intelligence/organizations/" + orgID + "/api-keys"

	issued := s.Do("POST", keys, map[string]any{"name": "ci"}, admin)
	k := issued.Object(t)
	secret, _ := k["api_key"].(string)
	if issued.Status != 201 || !strings.HasPrefix(secret, "vk_") || len(secret) < 40 || !strings.HasPrefix(secret, k["prefix"].(string)) {
		t.Fatalf("issue key: %d %s", issued.Status, issued.Body)
	}
	var stored string
	if err := s.Pool.QueryRow(t.Context(), `SELECT key_hash FROM api_keys WHERE id = $1`, k["id"]).Scan(&stored); err != nil || strings.Contains(stored, secret) || len(stored) != 64 {
		t.Errorf("stored key: %q %v, want only a SHA-256 hash", stored, err)
	}

	list := s.Do("GET", keys, nil, admin)
	var items []map[string]any
	if err := json.Unmarshal(list.Body, &items); list.Status != 200 || err != nil || len(items) != 1 {
		t.Fatalf("list keys: %d %s, want a JSON array of one key", list.Status, list.Body)
	}
	if strings.Contains(string(list.Body), secret) || items[0]["revoked"] != false || items[0]["name"] != "ci" {
		t.Errorf("list keys: %s", list.Body)
	}
	if r := s.Do("GET", keys, nil, nil); r.Status != 401 {
		t.Errorf("list keys without admin token: got %d, want 401", r.Status)
	}

	who := s.Do("GET", "/v1/intelligence/whoami", nil, bearer(secret))
	if w := who.Object(t); who.Status != 200 || w["organization_id"] != orgID || w["organization_name"] != "Acme Health" || w["api_key_id"] != k["id"] {
		t.Fatalf("whoami: %d %s", who.Status, who.Body)
	}
	for name, h := range map[string]map[string]string{
		"no header":        nil,
		"not bearer":       {"Authorization": "Basic dXNlcjpwYXNz"},
		"unknown key":      bearer("vk_" + strings.Repeat("A", 43)),
		"not a key at all": bearer("hello"),
	} {
		r := s.Do("GET", "/v1/intelligence/whoami", nil, h)
		if d, ok := r.Object(t)["detail"].(string); r.Status != 401 || !ok || d == "" {
			t.Errorf("whoami with %s: got %d %s, want 401 with a string detail", name, r.Status, r.Body)
		}
	}

	// Revocation works at once; revoking again is fine; unknown ids are 404.
	if r := s.Do("DELETE", keys+"/"+k["id"].(string), nil, admin); r.Status != 204 || len(r.Body) != 0 {
		t.Fatalf("revoke: %d %s, want 204 with no body", r.Status, r.Body)
	}
	if r := s.Do("GET", "/v1/intelligence/whoami", nil, bearer(secret)); r.Status != 401 {
		t.Errorf("whoami with a revoked key: got %d, want 401", r.Status)
	}
	if r := s.Do("DELETE", keys+"/"+k["id"].(string), nil, admin); r.Status != 204 {
		t.Errorf("second revoke: got %d, want 204", r.Status)
	}
	list = s.Do("GET", keys, nil, admin)
	_ = json.Unmarshal(list.Body, &items)
	if items[0]["revoked"] != true || items[0]["revoked_at"] == nil {
		t.Errorf("revoked key listed as %v", items[0])
	}
	for _, path := range []string{
		keys + "/0190a0b0-0000-7000-8000-000000000000",
		keys + "/not-a-uuid",
		"/v1/intelligence/organizations/0190a0b0-0000-7000-8000-000000000000/api-keys",
	} {
		method := "DELETE"
		if strings.HasSuffix(path, "api-keys") {
			method = "GET"
		}
		if r := s.Do(method, path, nil, admin); r.Status != 404 {
			t.Errorf("%s %s: got %d %s, want 404", method, path, r.Status, r.Body)
		}
	}
	if r := s.Do("POST", "/v1/intelligence/organizations/0190a0b0-0000-7000-8000-000000000000/api-keys", map[string]any{}, admin); r.Status != 404 {
		t.Errorf("issue a key for an unknown organization: got %d, want 404", r.Status)
	}
}

func TestKeysAreScopedToTheirOrganization(t *testing.T) {
	t.Parallel()
	s := startService(t)
	orgA, keyA := s.newKey("A")
	orgB, _ := s.newKey("B")
	who := s.Do("GET", "/v1/intelligence/whoami", nil, bearer(keyA)).Object(t)
	if who["organization_id"] != orgA {
		t.Fatalf("whoami: got %v, want organization %s", who, orgA)
	}
	var keyID string
	if err := s.Pool.QueryRow(t.Context(), `SELECT id::text FROM api_keys WHERE organization_id = $1`, orgA).Scan(&keyID); err != nil {
		t.Fatal(err)
	}
	// Revoking A's key through B's path finds nothing.
	if r := s.Do("DELETE", "/v1/intelligence/organizations/"+orgB+"/api-keys/"+keyID, nil, admin); r.Status != 404 {
		t.Errorf("revoke another organization's key: got %d, want 404", r.Status)
	}
	if r := s.Do("GET", "/v1/intelligence/whoami", nil, bearer(keyA)); r.Status != 200 {
		t.Errorf("key still works: got %d", r.Status)
	}
}
