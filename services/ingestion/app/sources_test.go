package app_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRegisterSourceValidation(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	valid := map[string]any{
		"organization": "Acme", "program": "Commercial", "jurisdiction": "US-CA", "allowed_hosts": []string{"docs.acme.example"},
		"adapter": "literal_url", "adapter_config": map[string]any{"url": "https://docs.acme.example/policy.pdf"},
		"cadence_seconds": 86400, "terms_review_state": "approved",
	}
	tests := []struct {
		name    string
		change  map[string]any
		wantLoc string
	}{
		{"missing organization", map[string]any{"organization": ""}, "body.organization"},
		{"organization over 200 characters", map[string]any{"organization": strings.Repeat("é", 201)}, "body.organization"},
		{"no allowlist", map[string]any{"allowed_hosts": []string{}}, "body.allowed_hosts"},
		{"allowlist entry with a scheme", map[string]any{"allowed_hosts": []string{"https://docs.acme.example"}}, "body.allowed_hosts"},
		{"unknown adapter", map[string]any{"adapter": "ftp"}, "body.adapter"},
		{"URL off the allowlist", map[string]any{"adapter_config": map[string]any{"url": "https://evil.example/x"}}, "body.adapter_config.url"},
		{"URL that is not http(s)", map[string]any{"adapter_config": map[string]any{"url": "file:///etc/passwd"}}, "body.adapter_config.url"},
		{"cadence too short", map[string]any{"cadence_seconds": 10}, "body.cadence_seconds"},
		{"unknown terms state", map[string]any{"terms_review_state": "maybe"}, "body.terms_review_state"},
		{"index page without pattern", map[string]any{"adapter": "index_page", "adapter_config": map[string]any{"index_url": "https://docs.acme.example/"}}, "body.adapter_config.link_pattern"},
		{"index page with a bad pattern", map[string]any{"adapter": "index_page", "adapter_config": map[string]any{"index_url": "https://docs.acme.example/", "link_pattern": "("}}, "body.adapter_config.link_pattern"},
		{"private address literal", map[string]any{"allowed_hosts": []string{"10.0.0.8"}, "adapter_config": map[string]any{"url": "http://10.0.0.8/p"}}, "body.adapter_config.url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{}
			for k, v := range valid {
				body[k] = v
			}
			for k, v := range tt.change {
				body[k] = v
			}
			r := s.call("POST", "/v1/sources", body, adminToken)
			if r.Status != http.StatusUnprocessableEntity {
				t.Fatalf("got %d %s, want 422", r.Status, r.Body)
			}
			detail, _ := r.Object(t)["detail"].([]any)
			var locs []string
			for _, d := range detail {
				m, _ := d.(map[string]any)
				var parts []string
				for _, l := range m["loc"].([]any) {
					parts = append(parts, fmt.Sprint(l))
				}
				locs = append(locs, strings.Join(parts, "."))
				if m["msg"] == "" || m["type"] == "" {
					t.Errorf("violation without msg or type: %v", m)
				}
			}
			if !slices.Contains(locs, tt.wantLoc) {
				t.Errorf("locations %v do not include %s", locs, tt.wantLoc)
			}
		})
	}
	if r := s.call("POST", "/v1/sources", map[string]any{}, adminToken); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("empty body: got %d, want 422", r.Status)
	}
	created := s.admin("POST", "/v1/sources", valid, http.StatusCreated)
	if created["health_status"] != "NEW" || created["enabled"] != true || created["id"] == "" {
		t.Errorf("created source: got %v", created)
	}
	// The limit counts characters: 200 two-byte ones pass.
	long := map[string]any{}
	for k, v := range valid {
		long[k] = v
	}
	long["organization"] = strings.Repeat("é", 200)
	s.admin("POST", "/v1/sources", long, http.StatusCreated)
}

// TestRegisterSourceRefusesPrivateNamesAndPorts: with no private network opened, a name that only
// reaches private networks or a port other than 443 and 80 is refused at registration (422).
func TestRegisterSourceRefusesPrivateNamesAndPorts(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"INGESTION_ALLOW_PRIVATE_CIDRS": ""})
	for _, tc := range []struct {
		host, url, loc string
	}{
		{"vault.internal", "https://vault.internal:8200/p", "allowed_hosts"},
		{"printer.local", "https://printer.local/p", "allowed_hosts"},
		{"corp", "https://corp/p", "allowed_hosts"},
		{"docs.acme.example", "https://docs.acme.example:6379/p", "adapter_config"},
	} {
		r := s.call("POST", "/v1/sources", map[string]any{
			"organization": "Acme", "program": "Commercial", "jurisdiction": "US-CA", "allowed_hosts": []string{tc.host},
			"adapter": "literal_url", "adapter_config": map[string]any{"url": tc.url}, "terms_review_state": "approved",
		}, adminToken)
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), tc.loc) {
			t.Errorf("%s: %d %s, want 422 at %s", tc.url, r.Status, r.Body, tc.loc)
		}
	}
}

func TestSourceReadsAndPagination(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	var ids []string
	for i := range 3 {
		src := s.literalSource(fmt.Sprintf("/p%d.html", i), nil)
		ids = append(ids, src["id"].(string))
	}
	got := s.admin("GET", "/v1/sources/"+ids[0], nil, http.StatusOK)
	if got["id"] != ids[0] || got["organization"] != "Acme Health Plan" {
		t.Errorf("GET source: got %v", got)
	}
	for _, missing := range []string{"0190a0b0-0000-7000-8000-000000000000", "does-not-exist"} {
		if r := s.call("GET", "/v1/sources/"+missing, nil, adminToken); r.Status != http.StatusNotFound {
			t.Errorf("GET unknown source %s: got %d, want 404", missing, r.Status)
		}
		if r := s.call("GET", "/v1/sources/"+missing+"/status", nil, adminToken); r.Status != http.StatusNotFound {
			t.Errorf("GET unknown source status: got %d, want 404", r.Status)
		}
		if r := s.call("POST", "/v1/sources/"+missing+"/discovery-runs", map[string]any{}, adminToken); r.Status != http.StatusNotFound {
			t.Errorf("POST run of unknown source: got %d, want 404", r.Status)
		}
	}
	page1 := s.admin("GET", "/v1/sources?limit=2", nil, http.StatusOK)
	items := page1["items"].([]any)
	cursor, _ := page1["next_cursor"].(string)
	if len(items) != 2 || cursor == "" {
		t.Fatalf("page 1: got %d items, cursor %q; want 2 and a cursor", len(items), cursor)
	}
	page2 := s.admin("GET", "/v1/sources?limit=2&cursor="+cursor, nil, http.StatusOK)
	items2 := page2["items"].([]any)
	if len(items2) != 1 || page2["next_cursor"] != "" {
		t.Fatalf("page 2: got %d items, cursor %v; want 1 and none", len(items2), page2["next_cursor"])
	}
	seen := map[string]bool{}
	for _, it := range append(items, items2...) {
		seen[it.(map[string]any)["id"].(string)] = true
	}
	if len(seen) != 3 || items[0].(map[string]any)["id"] != ids[2] {
		t.Errorf("pages: got %v, want all three sources, newest first", seen)
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=abc", "cursor=not-a-cursor"} {
		if r := s.call("GET", "/v1/sources?"+q, nil, adminToken); r.Status != http.StatusUnprocessableEntity {
			t.Errorf("GET /v1/sources?%s: got %d, want 422", q, r.Status)
		}
	}
	st := s.admin("GET", "/v1/sources/"+ids[0]+"/status", nil, http.StatusOK)
	if st["health_status"] != "NEW" || st["source_id"] != ids[0] {
		t.Errorf("status before any run: got %v", st)
	}
}

// TestCanceledRunLeavesHealthAlone: a manual run whose caller goes away mid-fetch ends FAILED with
// error_kind canceled. It says nothing about the source: the health stays, and the source is not sent
// to review (where the scheduler would never run it again).
func TestCanceledRunLeavesHealthAlone(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	s.docs.set("/slow.html", page{body: policyV1, delay: 2 * time.Second})
	// Disabled, so that only the manual runs below fetch it.
	src := s.literalSource("/slow.html", map[string]any{"enabled": false})
	runs := "/v1/sources/" + src["id"].(string) + "/discovery-runs"
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", s.URL+runs, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Admin-Token", adminToken)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the run answered %d before its caller gave up", resp.StatusCode)
	}
	var st map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for {
		st = s.admin("GET", "/v1/sources/"+src["id"].(string)+"/status", nil, http.StatusOK)
		if last, _ := st["last_run"].(map[string]any); last != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	last, _ := st["last_run"].(map[string]any)
	if last == nil || last["status"] != "FAILED" || last["error_kind"] != "canceled" {
		t.Fatalf("last run: got %v, want FAILED with error_kind canceled", st["last_run"])
	}
	if st["health_status"] != "NEW" || st["consecutive_failures"] != 0.0 {
		t.Errorf("status after a canceled run: got %v, want NEW with no failures counted", st)
	}
	// The run is recorded before its source lock is let go: wait for the lock, or the next run meets it.
	deadline = time.Now().Add(10 * time.Second)
	for s.Count(`SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
WHERE l.locktype = 'advisory' AND d.datname = current_database()`) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the canceled run's source lock was never released")
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.docs.set("/slow.html", page{body: policyV1})
	if run := s.admin("POST", runs, map[string]any{}, http.StatusCreated); run["status"] != "SUCCEEDED" {
		t.Errorf("the next run: got %v, want SUCCEEDED", run)
	}
}

func TestFetchFailuresSetSourceHealth(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"INGESTION_FETCH_MAX_BYTES": "2048", "INGESTION_FETCH_MAX_ATTEMPTS": "3"})
	big := "<html><body><p>" + strings.Repeat("covered services ", 400) + "</p></body></html>"
	tests := []struct {
		name       string
		page       page
		wantHealth string
		wantHits   int // fetch attempts the document server saw
	}{
		{"HTTP 404 is permanent", page{status: 404, body: "gone"}, "REVIEW_REQUIRED", 1},
		{"HTTP 403 is permanent", page{status: 403, body: "no"}, "REVIEW_REQUIRED", 1},
		{"oversized document is permanent", page{body: big}, "REVIEW_REQUIRED", 1},
		{"disallowed MIME type is permanent", page{contentType: "application/zip", body: "PK\x03\x04zip"}, "REVIEW_REQUIRED", 1},
		{"HTTP 503 is transient and retried", page{status: 503, body: "busy"}, "DEGRADED", 3},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := fmt.Sprintf("/fail-%d", i)
			s.docs.set(path, tt.page)
			src := s.literalSource(path, nil)
			run := s.admin("POST", "/v1/sources/"+src["id"].(string)+"/discovery-runs", map[string]any{}, http.StatusCreated)
			if run["status"] != "FAILED" || run["error_kind"] == "" {
				t.Errorf("run: got %v, want FAILED with an error kind", run)
			}
			st := s.admin("GET", "/v1/sources/"+src["id"].(string)+"/status", nil, http.StatusOK)
			if st["health_status"] != tt.wantHealth || st["last_error"] == "" || st["consecutive_failures"].(float64) != 1 {
				t.Errorf("status: got %v, want %s with the error", st, tt.wantHealth)
			}
			if got := s.docs.hitCount(path); got != tt.wantHits {
				t.Errorf("fetch attempts: got %d, want %d", got, tt.wantHits)
			}
		})
	}
	t.Run("a host resolving to a blocked address is never dialled", func(t *testing.T) {
		// Registered while loopback was allowed; then a replica without the exception runs it, as if
		// the name had been rebound to a private address after registration.
		s.docs.set("/internal.html", page{body: policyV1})
		// Disabled, so that the new replica's scheduler leaves it to the manual run below.
		src := s.literalSource("/internal.html", map[string]any{"enabled": false})
		strict := startService(t, map[string]string{"INGESTION_ALLOW_PRIVATE_CIDRS": "", "INGESTION_DATABASE_URL": s.Env["INGESTION_DATABASE_URL"]})
		run := strict.admin("POST", "/v1/sources/"+src["id"].(string)+"/discovery-runs", map[string]any{}, http.StatusCreated)
		st := strict.admin("GET", "/v1/sources/"+src["id"].(string)+"/status", nil, http.StatusOK)
		if run["status"] != "FAILED" || run["error_kind"] != "blocked_address" || st["health_status"] != "REVIEW_REQUIRED" {
			t.Errorf("loopback without the exception: run %v, status %v", run, st)
		}
		if hits := s.docs.hitCount("/internal.html"); hits != 0 {
			t.Errorf("the blocked server saw %d requests, want 0", hits)
		}
		// Registering a loopback name without the exception is refused up front.
		r := strict.call("POST", "/v1/sources", map[string]any{
			"organization": "Acme", "program": "P", "jurisdiction": "US", "allowed_hosts": []string{"localhost"},
			"adapter": "literal_url", "adapter_config": map[string]any{"url": s.docs.url("/internal.html")},
		}, adminToken)
		if r.Status != http.StatusUnprocessableEntity {
			t.Errorf("registering a loopback URL without the exception: got %d, want 422", r.Status)
		}
	})
}

func TestDiscoveryGuards(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	s.docs.set("/slow.html", page{body: policyV1, delay: 700 * time.Millisecond})
	pending := s.literalSource("/slow.html", map[string]any{"terms_review_state": "pending"})
	r := s.call("POST", "/v1/sources/"+pending["id"].(string)+"/discovery-runs", map[string]any{}, adminToken)
	if r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "terms") {
		t.Errorf("run of a source whose terms are pending: got %d %s, want 409", r.Status, r.Body)
	}

	src := s.literalSource("/slow.html", nil)
	path := "/v1/sources/" + src["id"].(string) + "/discovery-runs"
	var wg sync.WaitGroup
	statuses := make(chan int, 2)
	for range 2 {
		wg.Go(func() { statuses <- s.call("POST", path, map[string]any{}, adminToken).Status })
	}
	wg.Wait()
	close(statuses)
	var got []int
	for st := range statuses {
		got = append(got, st)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int{http.StatusCreated, http.StatusConflict}) {
		t.Errorf("two simultaneous runs of one source: got %v, want one 201 and one 409", got)
	}
}

func TestSchedulerRunsDueSourcesThroughTheSamePath(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"INGESTION_SCHEDULER_INTERVAL": "1s"})
	s.docs.set("/scheduled.html", page{body: policyV1})
	due := s.literalSource("/scheduled.html", nil)
	s.literalSource("/scheduled.html", map[string]any{"enabled": false})
	s.literalSource("/scheduled.html", map[string]any{"terms_review_state": "pending"})
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := s.admin("GET", "/v1/sources/"+due["id"].(string)+"/status", nil, http.StatusOK)
		if run, ok := st["last_run"].(map[string]any); ok {
			if run["trigger"] != "scheduled" || run["status"] != "SUCCEEDED" || st["health_status"] != "HEALTHY" {
				t.Fatalf("scheduled run: got %v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the scheduler never ran the due source")
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The source is not due again before its cadence (an hour), and the others never are.
	time.Sleep(2500 * time.Millisecond)
	if got := s.Count(`SELECT count(*) FROM discovery_runs`); got != 1 {
		t.Errorf("discovery runs: got %d, want exactly 1", got)
	}
}

func TestIndexPageAdapter(t *testing.T) {
	t.Parallel()
	s := startService(t, nil)
	s.docs.set("/policies/", page{body: fmt.Sprintf(`<html><body><ul>
<li><a href="/policies/imaging.html">Imaging</a></li>
<li><a href="%s">Lab (absolute)</a></li>
<li><a href="/policies/imaging.html#top">Imaging again</a></li>
<li><a href="/news/2026.html">News</a></li>
<li><a href="https://elsewhere.example/policies/x.html">Off the allowlist</a></li>
</ul></body></html>`, s.docs.url("/policies/lab.html"))})
	s.docs.set("/policies/imaging.html", page{body: policyV1})
	s.docs.set("/policies/lab.html", page{contentType: "text/plain; charset=utf-8", body: "Laboratory Policy\n\nCPT 80053 is covered once per year."})
	src := s.admin("POST", "/v1/sources", map[string]any{
		"organization": "Acme", "program": "Commercial", "jurisdiction": "US-CA", "allowed_hosts": []string{"localhost"},
		"adapter": "index_page", "adapter_config": map[string]any{"index_url": s.docs.url("/policies/"), "link_pattern": `/policies/[a-z]+\.html$`},
		"terms_review_state": "approved",
	}, http.StatusCreated)
	if src["adapter_config"].(map[string]any)["max_documents"].(float64) != 20 {
		t.Errorf("max_documents default: got %v", src["adapter_config"])
	}
	run := s.admin("POST", "/v1/sources/"+src["id"].(string)+"/discovery-runs", map[string]any{}, http.StatusCreated)
	var urls []string
	for _, r := range run["resources"].([]any) {
		res := r.(map[string]any)
		urls = append(urls, res["url"].(string))
		if res["new_version"] != true {
			t.Errorf("%s: got %v, want a first version", res["url"], res)
		}
	}
	want := []string{s.docs.url("/policies/imaging.html"), s.docs.url("/policies/lab.html")}
	if run["status"] != "SUCCEEDED" || !slices.Equal(urls, want) {
		t.Errorf("discovered: got %v (%v), want %v", urls, run["status"], want)
	}
}
