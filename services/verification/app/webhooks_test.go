package app_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
)

// detail returns the detail object of an error body.
func detail(t *testing.T, r servicetest.Reply) map[string]any {
	t.Helper()
	d, ok := r.Object(t)["detail"].(map[string]any)
	if !ok {
		t.Fatalf("body %s has no detail object", r.Body)
	}
	return d
}

// violation returns the loc of the first entry of an HTTPValidationError.
func violation(t *testing.T, r servicetest.Reply) string {
	t.Helper()
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("got %d %s, want 422", r.Status, r.Body)
	}
	list, ok := r.Object(t)["detail"].([]any)
	if !ok || len(list) == 0 {
		t.Fatalf("body %s is not an HTTPValidationError", r.Body)
	}
	loc, _ := json.Marshal(list[0].(map[string]any)["loc"])
	return string(loc)
}

func TestWatches(t *testing.T) {
	t.Parallel()
	s := startWebhooks(t, catalog{server: true, "io.github.acme/maps": true, "io.github.acme/mail": true}, "",
		map[string]string{"VERIFICATION_WATCH_LIMIT": "2"})
	key := s.newKey("acme")
	endpointID, _ := s.endpoint(key, "https://hooks.example.com/in")

	r := s.call("POST", "/v1/intelligence/servers/io.github.acme/unknown/watch", key, map[string]any{})
	if r.Status != http.StatusNotFound || detail(t, r)["error"] != "server_not_found" {
		t.Fatalf("watch of an unknown server: got %d %s, want 404 server_not_found", r.Status, r.Body)
	}
	w := s.watch(key, server, map[string]any{"change_types": []string{"remote_url_changed"}, "min_risk": "high", "endpoint_ids": []string{endpointID}})
	filters := w["filters"].(map[string]any)
	if w["state"] != "active" || w["namespace"] != "io.github.acme" || w["name"] != "weather" || filters["min_risk"] != "high" ||
		filters["endpoint_ids"].([]any)[0] != endpointID || filters["change_types"].([]any)[0] != "remote_url_changed" {
		t.Fatalf("watch = %v, want active with the filters sent", w)
	}
	r = s.call("POST", "/v1/intelligence/servers/"+server+"/watch", key, map[string]any{})
	if d := detail(t, r); r.Status != http.StatusConflict || d["error"] != "watch_already_exists" || d["watchId"] != w["id"] {
		t.Fatalf("second watch: got %d %s, want 409 watch_already_exists with watchId %v", r.Status, r.Body, w["id"])
	}
	if got := s.must("GET", "/v1/intelligence/servers/"+server+"/watch", key, nil, http.StatusOK); got["id"] != w["id"] {
		t.Errorf("GET watch = %v, want %v", got, w["id"])
	}

	for _, tc := range []struct {
		body map[string]any
		loc  string
	}{
		{map[string]any{"min_risk": "critical"}, `["body","min_risk"]`},
		{map[string]any{"change_types": []string{"Bad Type"}}, `["body","change_types",0]`},
		{map[string]any{"endpoint_ids": []string{"not-a-uuid"}}, `["body","endpoint_ids",0]`},
		{map[string]any{"endpoint_ids": []string{endpointID, "0190a000-0000-7000-8000-000000000000"}}, `["body","endpoint_ids",1]`},
	} {
		if loc := violation(t, s.call("POST", "/v1/intelligence/servers/io.github.acme/maps/watch", key, tc.body)); loc != tc.loc {
			t.Errorf("watch %v: loc %s, want %s", tc.body, loc, tc.loc)
		}
	}

	s.watch(key, "io.github.acme/maps", nil)
	r = s.call("POST", "/v1/intelligence/servers/io.github.acme/mail/watch", key, map[string]any{})
	if d := detail(t, r); r.Status != http.StatusForbidden || d["error"] != "watch_limit_reached" || d["limit"] != 2.0 {
		t.Fatalf("watch over the cap: got %d %s, want 403 watch_limit_reached with limit 2", r.Status, r.Body)
	}
	s.must("DELETE", "/v1/intelligence/servers/io.github.acme/maps/watch", key, nil, http.StatusNoContent)
	if r := s.call("DELETE", "/v1/intelligence/servers/io.github.acme/maps/watch", key, nil); r.Status != http.StatusNotFound {
		t.Errorf("second archive: got %d, want 404", r.Status)
	}
	if r := s.call("GET", "/v1/intelligence/servers/io.github.acme/maps/watch", key, nil); r.Status != http.StatusNotFound {
		t.Errorf("archived watch read: got %d, want 404", r.Status)
	}
	s.watch(key, "io.github.acme/mail", nil)

	// Another organization has its own watches and cap.
	other := s.newKey("globex")
	s.watch(other, server, nil)
	if r := s.call("GET", "/v1/intelligence/servers/io.github.acme/mail/watch", other, nil); r.Status != http.StatusNotFound {
		t.Errorf("another organization's watch: got %d, want 404", r.Status)
	}
}

func TestEndpoints(t *testing.T) {
	t.Parallel()
	s := startWebhooks(t, catalog{}, "", map[string]string{"VERIFICATION_WEBHOOK_ENDPOINT_LIMIT": "3"})
	key := s.newKey("acme")

	created := s.must("POST", "/v1/intelligence/webhooks/endpoints", key,
		map[string]any{"url": "https://hooks.example.com/in", "description": "prod", "event_types": []string{"intel.change"}}, http.StatusCreated)
	secret := created["secret"].(string)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if !strings.HasPrefix(secret, "whsec_") || err != nil || len(raw) < 24 {
		t.Fatalf("secret %q: want whsec_ + base64 of at least 24 bytes", secret)
	}
	if created["status"] != "active" || created["description"] != "prod" {
		t.Errorf("endpoint = %v", created)
	}
	s.endpoint(key, "http://127.0.0.1:9/hook") // plain http inside the allowed private network

	list := s.call("GET", "/v1/intelligence/webhooks/endpoints", key, nil)
	if list.Status != http.StatusOK || strings.Contains(string(list.Body), "secret") || strings.Contains(string(list.Body), secret) {
		t.Fatalf("list: %d %s, want 200 without secrets", list.Status, list.Body)
	}
	var items []map[string]any
	if err := json.Unmarshal(list.Body, &items); err != nil || len(items) != 2 {
		t.Fatalf("list = %s, want a bare array of 2 endpoints", list.Body)
	}

	for _, bad := range []map[string]any{
		{},
		{"url": "http://hooks.example.com/in"},
		{"url": "ftp://hooks.example.com/in"},
		{"url": "https://user:pw@hooks.example.com/in"},
		{"url": "https://169.254.169.254/latest"},
		{"url": "https://10.1.2.3/in"},
		{"url": "http://localhost:8080/in"},
		{"url": "https://hooks.example.com/in#frag"},
		{"url": "https://" + strings.Repeat("a", 2050) + ".com/"},
		// Names that only reach private networks, and ports other than 443, refused at registration.
		{"url": "https://vault.internal:8200/"},
		{"url": "https://printer.local/"},
		{"url": "https://corp/"},
		{"url": "https://hooks.example.com:6379/in"},
	} {
		r := s.call("POST", "/v1/intelligence/webhooks/endpoints", key, bad)
		if loc := violation(t, r); loc != `["body","url"]` {
			t.Errorf("endpoint %v: loc %s, want [body url]", bad, loc)
		}
	}
	if loc := violation(t, s.call("POST", "/v1/intelligence/webhooks/endpoints", key,
		map[string]any{"url": "https://hooks.example.com/in", "event_types": []string{"x"}})); loc != `["body","event_types",0]` {
		t.Errorf("bad event type: loc %s", loc)
	}

	s.endpoint(key, "https://hooks.example.com/third")
	r := s.call("POST", "/v1/intelligence/webhooks/endpoints", key, map[string]any{"url": "https://hooks.example.com/fourth"})
	if d := detail(t, r); r.Status != http.StatusForbidden || d["error"] != "webhook_endpoint_limit_reached" || d["limit"] != 3.0 {
		t.Fatalf("endpoint over the cap: got %d %s, want 403 with limit 3", r.Status, r.Body)
	}

	id := created["id"].(string)
	other := s.newKey("globex")
	for _, path := range []string{"/v1/intelligence/webhooks/endpoints/" + id, "/v1/intelligence/webhooks/endpoints/not-a-uuid"} {
		if r := s.call("DELETE", path, other, nil); r.Status != http.StatusNotFound {
			t.Errorf("DELETE %s by another organization: got %d, want 404", path, r.Status)
		}
	}
	if r := s.call("POST", "/v1/intelligence/webhooks/endpoints/"+id+"/enable", other, nil); r.Status != http.StatusNotFound {
		t.Errorf("enable by another organization: got %d, want 404", r.Status)
	}
	s.must("DELETE", "/v1/intelligence/webhooks/endpoints/"+id, key, nil, http.StatusNoContent)
	if r := s.call("DELETE", "/v1/intelligence/webhooks/endpoints/"+id, key, nil); r.Status != http.StatusNotFound {
		t.Errorf("second revoke: got %d, want 404", r.Status)
	}
	if r := s.call("GET", "/v1/intelligence/webhooks/endpoints", "", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("no bearer: got %d, want 401", r.Status)
	}
	s.endpoint(key, "https://hooks.example.com/after-revoke") // a revoked endpoint frees its place
}

func TestDeliveryReadsAndIsolation(t *testing.T) {
	t.Parallel()
	s := startWebhooks(t, catalog{server: true}, "", nil)
	acme, globex := s.newKey("acme"), s.newKey("globex")
	recv := newReceiver(t)
	acmeEndpoint, _ := s.endpoint(acme, recv.URL+"/acme")
	globexEndpoint, _ := s.endpoint(globex, recv.URL+"/globex")
	s.watch(acme, server, nil)
	s.watch(globex, server, map[string]any{"min_risk": "high"})

	const changes = 23
	for i := range changes {
		risk := "low"
		if i%10 == 0 {
			risk = "high"
		}
		s.publish(change(server, "version_bump", risk))
	}
	eventually(t, "every delivery to succeed", func() bool {
		return s.Count(`SELECT count(*) FROM webhook_deliveries WHERE status = 'succeeded'`) == changes+3
	})
	if n := len(s.deliveries(globex, globexEndpoint)); n != 3 {
		t.Errorf("globex (min_risk high) got %d deliveries, want 3", n)
	}

	base := "/v1/intelligence/webhooks/endpoints/" + acmeEndpoint + "/deliveries"
	first := s.must("GET", base+"?limit=10", acme, nil, http.StatusOK)
	seen := map[any]bool{}
	page, pages := first, 1
	for {
		for _, it := range page["items"].([]any) {
			seen[it.(map[string]any)["id"]] = true
		}
		next, ok := page["next_cursor"].(string)
		if !ok {
			break
		}
		page = s.must("GET", base+"?limit=10&cursor="+next, acme, nil, http.StatusOK)
		pages++
	}
	if len(seen) != changes || pages != 3 {
		t.Errorf("paging saw %d deliveries in %d pages, want %d in 3", len(seen), pages, changes)
	}
	for _, q := range []string{"?limit=0", "?limit=101", "?limit=-1", "?limit=abc"} {
		if loc := violation(t, s.call("GET", base+q, acme, nil)); !strings.Contains(loc, "limit") {
			t.Errorf("%s: loc %s, want query limit", q, loc)
		}
	}
	if loc := violation(t, s.call("GET", base+"?cursor=garbage", acme, nil)); loc != `["query","cursor"]` {
		t.Errorf("bad cursor: loc %s", loc)
	}
	if n := len(s.must("GET", base+"?limit=100", acme, nil, http.StatusOK)["items"].([]any)); n != changes {
		t.Errorf("limit=100 listed %d, want %d", n, changes)
	}

	var deliveryID string
	for id := range seen {
		deliveryID = id.(string)
		break
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/intelligence/webhooks/deliveries/" + deliveryID},
		{"POST", "/v1/intelligence/webhooks/deliveries/" + deliveryID + "/replay"},
		{"GET", base},
		{"GET", "/v1/intelligence/webhooks/deliveries/not-a-uuid"},
		{"GET", "/v1/intelligence/webhooks/deliveries/0190a000-0000-7000-8000-000000000000"},
		{"POST", "/v1/intelligence/webhooks/deliveries/not-a-uuid/replay"},
		{"GET", "/v1/intelligence/webhooks/endpoints/not-a-uuid/deliveries"},
	} {
		if r := s.call(tc.method, tc.path, globex, nil); r.Status != http.StatusNotFound {
			t.Errorf("%s %s by globex: got %d %s, want 404", tc.method, tc.path, r.Status, r.Body)
		}
	}
}
