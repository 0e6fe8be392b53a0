package app_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The tests of agent reliability's workspace routes: repositories, targets, schedules, deployment
// policies, the workspace's deletion (this file) and the code-host callback
// (reliability_workspace_install_test.go). Targets are public IP literals, so that saving one
// needs no DNS.

const wsPrefix = "/v1/agent-reliability"

// wsURL is a public IP-literal target URL, distinct for each n.
func wsURL(n int) string { return fmt.Sprintf("https://93.184.%d.%d/mcp", 216+n/250, 1+n%250) }

// wsWorkspace creates an organization with a key and returns its id and bearer header.
func (s *stack) wsWorkspace(name string) (string, map[string]string) {
	s.t.Helper()
	org, key := s.newKey(name)
	return org, bearer(key)
}

// wsRepository creates a repository and returns its id.
func (s *stack) wsRepository(h map[string]string, fullName string) string {
	s.t.Helper()
	r := s.Must("POST", wsPrefix+"/repositories", map[string]any{"full_name": fullName}, h, http.StatusCreated)
	return r.Object(s.t)["id"].(string)
}

// wsTarget creates a target of a repository and returns its id.
func (s *stack) wsTarget(h map[string]string, repo, name string, n int) string {
	s.t.Helper()
	r := s.Must("POST", wsPrefix+"/repositories/"+repo+"/targets", map[string]any{"name": name, "url": wsURL(n)}, h, http.StatusCreated)
	return r.Object(s.t)["id"].(string)
}

// wsHasViolation reports whether a 422 body locates a problem at loc (with type typ, unless "").
func wsHasViolation(t *testing.T, body []byte, loc, typ string) bool {
	t.Helper()
	return slices.ContainsFunc(violations(t, body), func(v [2]string) bool { return v[0] == loc && (typ == "" || v[1] == typ) })
}

func TestReliabilityWorkspaceRepositories(t *testing.T) {
	t.Parallel()
	s := startService(t)
	_, h := s.wsWorkspace("Repo owners")
	_, other := s.wsWorkspace("Someone else")

	for _, r := range []struct{ method, path string }{
		{"GET", "/repositories"}, {"POST", "/repositories"}, {"GET", "/repositories/" + unknownID},
		{"PUT", "/repositories/" + unknownID}, {"DELETE", "/repositories/" + unknownID},
		{"POST", "/code-host/installations/callback"}, {"POST", "/workspace/delete-all"},
	} {
		if got := s.Do(r.method, wsPrefix+r.path, map[string]any{}, nil); got.Status != 401 || detailString(t, got) == "" {
			t.Errorf("%s %s without a key: got %d %s, want 401", r.method, r.path, got.Status, got.Body)
		}
		if got := s.Do(r.method, wsPrefix+r.path, map[string]any{}, bearer("vk_not_a_key_0123456789abcdef")); got.Status != 401 {
			t.Errorf("%s %s with an unknown key: got %d %s, want 401", r.method, r.path, got.Status, got.Body)
		}
	}

	if got := s.Must("GET", wsPrefix+"/repositories", nil, h, 200); string(got.Body) != "[]" {
		t.Errorf("empty workspace: got %s, want []", got.Body)
	}
	created := s.Must("POST", wsPrefix+"/repositories", map[string]any{"full_name": "acme/agents", "description": "  CI agents  "}, h, http.StatusCreated).Object(t)
	id := created["id"].(string)
	if created["full_name"] != "acme/agents" || created["provider"] != "manual" || created["default_branch"] != "main" ||
		created["description"] != "CI agents" || created["target_count"] != float64(0) || created["external_id"] != "" {
		t.Errorf("created repository: got %v", created)
	}
	s.wsRepository(h, "acme/tools")
	var list []map[string]any
	s.Must("GET", wsPrefix+"/repositories", nil, h, 200).Decode(t, &list)
	if len(list) != 2 || list[0]["id"] != id || list[1]["full_name"] != "acme/tools" {
		t.Errorf("list: got %v, want acme/agents then acme/tools", list)
	}
	if got := s.Must("GET", wsPrefix+"/repositories", nil, other, 200); string(got.Body) != "[]" {
		t.Errorf("another workspace's list: got %s, want []", got.Body)
	}

	r := s.Do("POST", wsPrefix+"/repositories", map[string]any{"full_name": "acme/agents"}, h)
	if code, _ := detailCode(t, r.Body); r.Status != 409 || code != "repository_already_exists" {
		t.Errorf("duplicate: got %d %s, want 409 repository_already_exists", r.Status, r.Body)
	}
	// The same name in another workspace is another repository.
	s.wsRepository(other, "acme/agents")

	for _, tt := range []struct {
		name string
		body map[string]any
		loc  string
	}{
		{"no name", map[string]any{}, "body.full_name"},
		{"no owner", map[string]any{"full_name": "agents"}, "body.full_name"},
		{"three parts", map[string]any{"full_name": "a/b/c"}, "body.full_name"},
		{"spaces", map[string]any{"full_name": "acme/my agents"}, "body.full_name"},
		{"dot dot", map[string]any{"full_name": "../agents"}, "body.full_name"},
		{"long owner", map[string]any{"full_name": strings.Repeat("a", 101) + "/x"}, "body.full_name"},
		{"branch with a space", map[string]any{"full_name": "acme/x", "default_branch": "my branch"}, "body.default_branch"},
		{"long description", map[string]any{"full_name": "acme/x", "description": strings.Repeat("d", 1001)}, "body.description"},
		{"name not a string", map[string]any{"full_name": 7}, ""},
	} {
		r := s.Do("POST", wsPrefix+"/repositories", tt.body, h)
		if r.Status != 422 || (tt.loc != "" && !wsHasViolation(t, r.Body, tt.loc, "")) {
			t.Errorf("create, %s: got %d %s, want 422 locating %s", tt.name, r.Status, r.Body, tt.loc)
		}
	}

	got := s.Must("GET", wsPrefix+"/repositories/"+id, nil, h, 200).Object(t)
	if got["id"] != id || got["full_name"] != "acme/agents" {
		t.Errorf("get: got %v", got)
	}
	upd := s.Must("PUT", wsPrefix+"/repositories/"+id, map[string]any{"default_branch": "release"}, h, 200).Object(t)
	if upd["default_branch"] != "release" || upd["full_name"] != "acme/agents" || upd["description"] != "CI agents" {
		t.Errorf("update of the branch alone: got %v", upd)
	}
	upd = s.Must("PUT", wsPrefix+"/repositories/"+id, map[string]any{"full_name": "acme/agents-v2", "description": ""}, h, 200).Object(t)
	if upd["full_name"] != "acme/agents-v2" || upd["description"] != "" || upd["default_branch"] != "release" {
		t.Errorf("rename: got %v", upd)
	}
	r = s.Do("PUT", wsPrefix+"/repositories/"+id, map[string]any{"full_name": "acme/tools"}, h)
	if code, _ := detailCode(t, r.Body); r.Status != 409 || code != "repository_already_exists" {
		t.Errorf("rename onto another: got %d %s, want 409", r.Status, r.Body)
	}
	r = s.Do("PUT", wsPrefix+"/repositories/"+id, map[string]any{"default_branch": ""}, h)
	if r.Status != 422 || !wsHasViolation(t, r.Body, "body.default_branch", "") {
		t.Errorf("empty branch: got %d %s, want 422", r.Status, r.Body)
	}

	// Another workspace's repository, an unknown id and a malformed one are all 404.
	for _, path := range []string{"/repositories/" + id, "/repositories/" + unknownID, "/repositories/not-a-uuid"} {
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			hh := other
			if !strings.Contains(path, id) {
				hh = h
			}
			r := s.Do(m, wsPrefix+path, map[string]any{"description": "x"}, hh)
			if code, _ := detailCode(t, r.Body); r.Status != 404 || code != "repository_not_found" {
				t.Errorf("%s %s: got %d %s, want 404 repository_not_found", m, path, r.Status, r.Body)
			}
		}
	}
	for _, p := range []string{"/targets", "/deployment-policy"} {
		if r := s.Do("GET", wsPrefix+"/repositories/"+id+p, nil, other); r.Status != 404 {
			t.Errorf("GET %s of another workspace's repository: got %d %s, want 404", p, r.Status, r.Body)
		}
	}

	r = s.Do("DELETE", wsPrefix+"/repositories/"+id, nil, h)
	if r.Status != 204 || len(r.Body) != 0 {
		t.Errorf("delete: got %d %q, want 204 and no body", r.Status, r.Body)
	}
	if r := s.Do("GET", wsPrefix+"/repositories/"+id, nil, h); r.Status != 404 {
		t.Errorf("get after delete: got %d, want 404", r.Status)
	}
	if r := s.Do("DELETE", wsPrefix+"/repositories/"+id, nil, h); r.Status != 404 {
		t.Errorf("delete again: got %d, want 404", r.Status)
	}
}

func TestReliabilityWorkspaceTargets(t *testing.T) {
	t.Parallel()
	s := startService(t)
	org, h := s.wsWorkspace("Target owners")
	_, other := s.wsWorkspace("Someone else")
	repo := s.wsRepository(h, "acme/agents")
	repo2 := s.wsRepository(h, "acme/tools")
	base := wsPrefix + "/repositories/" + repo + "/targets"

	created := s.Must("POST", base, map[string]any{"name": " prod ", "url": "HTTPS://93.184.216.34:443/mcp"}, h, http.StatusCreated).Object(t)
	id := created["id"].(string)
	if created["name"] != "prod" || created["url"] != "https://93.184.216.34/mcp" || created["repository_id"] != repo ||
		fmt.Sprint(created["evaluators"]) != "[mcp readiness]" {
		t.Errorf("created target: got %v (want the URL normalised and both evaluators)", created)
	}
	second := s.Must("POST", base, map[string]any{"name": "staging", "url": wsURL(2), "evaluators": []string{"readiness", "readiness"}}, h, http.StatusCreated).Object(t)
	if fmt.Sprint(second["evaluators"]) != "[readiness]" {
		t.Errorf("evaluators [readiness readiness]: got %v, want [readiness]", second["evaluators"])
	}
	var list []map[string]any
	s.Must("GET", base, nil, h, 200).Decode(t, &list)
	if len(list) != 2 || list[0]["id"] != id || list[1]["name"] != "staging" {
		t.Errorf("list: got %v", list)
	}
	if got := s.Must("GET", wsPrefix+"/repositories/"+repo, nil, h, 200).Object(t); got["target_count"] != float64(2) {
		t.Errorf("target_count: got %v, want 2", got["target_count"])
	}
	r := s.Do("POST", base, map[string]any{"name": "prod", "url": wsURL(3)}, h)
	if code, _ := detailCode(t, r.Body); r.Status != 409 || code != "target_already_exists" {
		t.Errorf("duplicate name: got %d %s, want 409 target_already_exists", r.Status, r.Body)
	}

	for _, tt := range []struct {
		name     string
		body     map[string]any
		loc, typ string
	}{
		{"no name", map[string]any{"url": wsURL(4)}, "body.name", "missing"},
		{"long name", map[string]any{"name": strings.Repeat("n", 101), "url": wsURL(4)}, "body.name", "string_too_long"},
		{"no url", map[string]any{"name": "x"}, "body.url", "missing"},
		{"http", map[string]any{"name": "x", "url": "http://93.184.216.34/mcp"}, "body.url", "public_https_url_required"},
		{"loopback", map[string]any{"name": "x", "url": "https://127.0.0.1/mcp"}, "body.url", "ssrf_ip_blocked"},
		{"metadata", map[string]any{"name": "x", "url": "https://169.254.169.254/latest"}, "body.url", "ssrf_ip_blocked"},
		{"credentials", map[string]any{"name": "x", "url": "https://u:p@93.184.216.34/mcp"}, "body.url", "url_credentials_or_fragment_blocked"},
		{"other port", map[string]any{"name": "x", "url": "https://93.184.216.34:8443/mcp"}, "body.url", ""},
		{"long url", map[string]any{"name": "x", "url": "https://93.184.216.34/" + strings.Repeat("a", 2048)}, "body.url", "string_too_long"},
		{"unknown evaluator", map[string]any{"name": "x", "url": wsURL(4), "evaluators": []string{"mcp", "lint"}}, "body.evaluators.1", "enum"},
	} {
		r := s.Do("POST", base, tt.body, h)
		if r.Status != 422 || !wsHasViolation(t, r.Body, tt.loc, tt.typ) {
			t.Errorf("create, %s: got %d %s, want 422 locating %s (%s)", tt.name, r.Status, r.Body, tt.loc, tt.typ)
		}
	}

	upd := s.Must("PUT", base+"/"+id, map[string]any{"evaluators": []string{"mcp"}}, h, 200).Object(t)
	if fmt.Sprint(upd["evaluators"]) != "[mcp]" || upd["name"] != "prod" || upd["url"] != "https://93.184.216.34/mcp" {
		t.Errorf("update of the evaluators: got %v", upd)
	}
	upd = s.Must("PUT", base+"/"+id, map[string]any{"name": "production", "url": wsURL(9)}, h, 200).Object(t)
	if upd["name"] != "production" || upd["url"] != wsURL(9) || fmt.Sprint(upd["evaluators"]) != "[mcp]" {
		t.Errorf("update of name and url: got %v", upd)
	}
	r = s.Do("PUT", base+"/"+id, map[string]any{"url": "https://10.0.0.1/mcp"}, h)
	if r.Status != 422 || !wsHasViolation(t, r.Body, "body.url", "ssrf_ip_blocked") {
		t.Errorf("update to a private URL: got %d %s, want 422 ssrf_ip_blocked", r.Status, r.Body)
	}
	r = s.Do("PUT", base+"/"+id, map[string]any{"name": "staging"}, h)
	if r.Status != 409 {
		t.Errorf("rename onto another target: got %d %s, want 409", r.Status, r.Body)
	}

	// Another workspace, another repository of the same workspace, unknown and malformed ids: 404.
	for _, c := range []struct {
		path string
		h    map[string]string
		code string
	}{
		{base + "/" + id, other, "repository_not_found"},
		{wsPrefix + "/repositories/" + repo2 + "/targets/" + id, h, "target_not_found"},
		{base + "/" + unknownID, h, "target_not_found"},
		{base + "/nope", h, "target_not_found"},
	} {
		for _, m := range []string{"PUT", "DELETE"} {
			r := s.Do(m, c.path, map[string]any{"name": "x"}, c.h)
			if code, _ := detailCode(t, r.Body); r.Status != 404 || (c.code != "repository_not_found" && code != c.code) {
				t.Errorf("%s %s: got %d %s, want 404 %s", m, c.path, r.Status, r.Body, c.code)
			}
		}
		if r := s.Do("GET", c.path+"/schedule", nil, c.h); r.Status != 404 {
			t.Errorf("GET %s/schedule: got %d %s, want 404", c.path, r.Status, r.Body)
		}
	}
	if r := s.Do("POST", wsPrefix+"/repositories/"+repo+"/targets", map[string]any{"name": "x", "url": wsURL(5)}, other); r.Status != 404 {
		t.Errorf("create under another workspace's repository: got %d %s, want 404", r.Status, r.Body)
	}

	// The free plan allows 3 targets in the workspace, across its repositories.
	s.wsTarget(h, repo2, "third", 6)
	r = s.Do("POST", wsPrefix+"/repositories/"+repo2+"/targets", map[string]any{"name": "fourth", "url": wsURL(7)}, h)
	code, detail := detailCode(t, r.Body)
	if r.Status != 402 || code != "plan_limit_reached" || detail["limit"] != float64(3) || detail["plan"] != "free" || detail["message"] == "" {
		t.Errorf("fourth target on the free plan: got %d %s, want 402 plan_limit_reached limit 3 plan free", r.Status, r.Body)
	}
	// A deleted target frees its slot; a team plan raises the limit.
	if r := s.Do("DELETE", base+"/"+id, nil, h); r.Status != 204 {
		t.Fatalf("delete: got %d %s", r.Status, r.Body)
	}
	s.wsTarget(h, repo2, "fourth", 7)
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO reliability_workspaces (organization_id, plan) VALUES ($1, 'team')`, org); err != nil {
		t.Fatal(err)
	}
	s.wsTarget(h, repo2, "fifth", 8)
	if n := s.Count(`SELECT count(*) FROM reliability_targets WHERE organization_id = $1`, org); n != 4 {
		t.Errorf("targets: got %d, want 4", n)
	}
}

func TestReliabilityWorkspaceSchedules(t *testing.T) {
	t.Parallel()
	s := startService(t)
	_, h := s.wsWorkspace("Schedulers")
	repo := s.wsRepository(h, "acme/agents")
	tgt := s.wsTarget(h, repo, "prod", 1)
	path := wsPrefix + "/repositories/" + repo + "/targets/" + tgt + "/schedule"

	got := s.Must("GET", path, nil, h, 200).Object(t)
	if got["enabled"] != false || got["configured"] != false || got["target_id"] != tgt || got["timezone"] != "UTC" {
		t.Errorf("no schedule: got %v", got)
	}
	if _, ok := got["next_due_at"]; ok {
		t.Errorf("no schedule: got next_due_at %v, want none", got["next_due_at"])
	}

	before := time.Now().Truncate(time.Second)
	got = s.Must("PUT", path, map[string]any{"interval_seconds": 3600}, h, 200).Object(t)
	next, err := time.Parse(time.RFC3339, fmt.Sprint(got["next_due_at"]))
	if err != nil || got["enabled"] != true || got["configured"] != true || got["interval_seconds"] != float64(3600) || got["cron"] != "" {
		t.Fatalf("interval schedule: got %v", got)
	}
	if next.Before(before.Add(time.Hour)) || next.After(time.Now().Add(time.Hour)) {
		t.Errorf("next_due_at: got %v, want an hour after the PUT (%v)", next, before)
	}
	if n := s.Count(`SELECT count(*) FROM reliability_schedules WHERE target_id = $1 AND enabled AND next_due_at IS NOT NULL`, tgt); n != 1 {
		t.Errorf("stored schedules: got %d, want 1", n)
	}

	got = s.Must("PUT", path, map[string]any{"cron": "30 9 * * MON-FRI", "timezone": "Europe/Paris"}, h, 200).Object(t)
	next, err = time.Parse(time.RFC3339, fmt.Sprint(got["next_due_at"]))
	if err != nil || got["cron"] != "30 9 * * MON-FRI" || got["timezone"] != "Europe/Paris" {
		t.Fatalf("cron schedule: got %v", got)
	}
	if _, ok := got["interval_seconds"]; ok {
		t.Errorf("cron schedule: got interval_seconds %v, want none", got["interval_seconds"])
	}
	paris, _ := time.LoadLocation("Europe/Paris")
	if local := next.In(paris); local.Hour() != 9 || local.Minute() != 30 || local.Weekday() == time.Saturday || local.Weekday() == time.Sunday {
		t.Errorf("next_due_at: got %v in Paris, want a weekday at 09:30", local)
	}
	if again := s.Must("GET", path, nil, h, 200).Object(t); again["next_due_at"] != got["next_due_at"] || again["cron"] != got["cron"] {
		t.Errorf("GET after PUT: got %v, want %v", again, got)
	}

	got = s.Must("PUT", path, map[string]any{"interval_seconds": 600, "enabled": false}, h, 200).Object(t)
	if got["enabled"] != false || got["configured"] != true || got["interval_seconds"] != float64(600) {
		t.Errorf("disabled schedule: got %v", got)
	}
	if _, ok := got["next_due_at"]; ok {
		t.Errorf("disabled schedule: got next_due_at %v, want none", got["next_due_at"])
	}

	for _, tt := range []struct {
		name string
		body map[string]any
		loc  string
	}{
		{"neither", map[string]any{}, "body.interval_seconds"},
		{"both", map[string]any{"interval_seconds": 600, "cron": "* * * * *"}, "body.cron"},
		{"zero interval", map[string]any{"interval_seconds": 0}, "body.interval_seconds"},
		{"short interval", map[string]any{"interval_seconds": 59}, "body.interval_seconds"},
		{"long interval", map[string]any{"interval_seconds": 2592001}, "body.interval_seconds"},
		{"six fields", map[string]any{"cron": "0 0 3 * * *"}, "body.cron"},
		{"descriptor", map[string]any{"cron": "@hourly"}, "body.cron"},
		{"bad minute", map[string]any{"cron": "61 * * * *"}, "body.cron"},
		{"never due", map[string]any{"cron": "0 0 30 2 *"}, "body.cron"},
		{"tz prefix", map[string]any{"cron": "TZ=UTC 0 3 * * *"}, "body.cron"},
		{"unknown zone", map[string]any{"cron": "0 3 * * *", "timezone": "Mars/Olympus"}, "body.timezone"},
		{"local zone", map[string]any{"cron": "0 3 * * *", "timezone": "Local"}, "body.timezone"},
		{"interval not a number", map[string]any{"interval_seconds": "soon"}, ""},
	} {
		r := s.Do("PUT", path, tt.body, h)
		if r.Status != 422 || (tt.loc != "" && !wsHasViolation(t, r.Body, tt.loc, "")) {
			t.Errorf("%s: got %d %s, want 422 locating %s", tt.name, r.Status, r.Body, tt.loc)
		}
	}
	// A refused PUT changed nothing.
	if got := s.Must("GET", path, nil, h, 200).Object(t); got["interval_seconds"] != float64(600) || got["enabled"] != false {
		t.Errorf("after refused PUTs: got %v", got)
	}
}

func TestReliabilityWorkspaceDeploymentPolicy(t *testing.T) {
	t.Parallel()
	s := startService(t)
	_, h := s.wsWorkspace("Gatekeepers")
	_, other := s.wsWorkspace("Someone else")
	repo := s.wsRepository(h, "acme/agents")
	path := wsPrefix + "/repositories/" + repo + "/deployment-policy"

	got := s.Must("GET", path, nil, h, 200).Object(t)
	rules, _ := got["rules"].([]any)
	if got["is_default"] != true || got["revision"] != float64(0) || got["default_action"] != "allow" || len(rules) != 10 || got["repository_id"] != repo {
		t.Errorf("default policy: got %v", got)
	}
	if first, _ := rules[0].(map[string]any); first["change"] != "check_newly_failing" || first["action"] != "block" {
		t.Errorf("default policy's first rule: got %v", rules[0])
	}

	put := map[string]any{"rules": []map[string]any{
		{"change": "tool_added", "action": "block"},
		{"risk": "high", "action": "needs_approval"},
		{"change": "readiness_score_dropped", "min_delta": 5, "action": "block"},
	}, "default_action": "allow"}
	got = s.Must("PUT", path, put, h, 200).Object(t)
	if got["is_default"] != false || got["revision"] != float64(1) || !strings.HasPrefix(fmt.Sprint(got["updated_by"]), "api_key:vk_") || got["updated_at"] == nil {
		t.Errorf("first PUT: got %v", got)
	}
	put["updated_by"] = "alice@example.com"
	put["expected_revision"] = 1
	got = s.Must("PUT", path, put, h, 200).Object(t)
	if got["revision"] != float64(2) || got["updated_by"] != "alice@example.com" {
		t.Errorf("second PUT: got %v", got)
	}
	rules, _ = got["rules"].([]any)
	if len(rules) != 3 || rules[2].(map[string]any)["min_delta"] != float64(5) || rules[1].(map[string]any)["risk"] != "high" {
		t.Errorf("stored rules: got %v", rules)
	}
	if again := s.Must("GET", path, nil, h, 200).Object(t); again["revision"] != float64(2) || len(again["rules"].([]any)) != 3 {
		t.Errorf("GET after PUT: got %v", again)
	}
	r := s.Do("PUT", path, put, h) // still expects revision 1
	if code, detail := detailCode(t, r.Body); r.Status != 409 || code != "policy_revision_conflict" || detail["revision"] != float64(2) {
		t.Errorf("stale expected_revision: got %d %s, want 409 policy_revision_conflict revision 2", r.Status, r.Body)
	}

	for _, tt := range []struct {
		name string
		body map[string]any
		loc  string
	}{
		{"bad default", map[string]any{"rules": []any{}, "default_action": "maybe"}, "body.default_action"},
		{"no default", map[string]any{"rules": []any{}}, "body.default_action"},
		{"unknown change", map[string]any{"default_action": "allow", "rules": []map[string]any{{"action": "block", "change": "tool_added"}, {"change": "moon_phase", "action": "block"}}}, "body.rules.1.change"},
		{"rule without match", map[string]any{"default_action": "allow", "rules": []map[string]any{{"action": "block"}}}, "body.rules.0"},
		{"bad risk", map[string]any{"default_action": "allow", "rules": []map[string]any{{"risk": "extreme", "action": "block"}}}, "body.rules.0.risk"},
		{"bad action", map[string]any{"default_action": "allow", "rules": []map[string]any{{"change": "tool_added", "action": "warn"}}}, "body.rules.0.action"},
		{"bad delta", map[string]any{"default_action": "allow", "rules": []map[string]any{{"change": "readiness_score_dropped", "min_delta": 101, "action": "block"}}}, "body.rules.0.min_delta"},
		{"long author", map[string]any{"default_action": "allow", "updated_by": strings.Repeat("a", 201)}, "body.updated_by"},
		{"negative revision", map[string]any{"default_action": "allow", "expected_revision": -1}, "body.expected_revision"},
	} {
		r := s.Do("PUT", path, tt.body, h)
		if r.Status != 422 || !wsHasViolation(t, r.Body, tt.loc, "") {
			t.Errorf("%s: got %d %s, want 422 locating %s", tt.name, r.Status, r.Body, tt.loc)
		}
	}
	tooMany := make([]map[string]any, 51)
	for i := range tooMany {
		tooMany[i] = map[string]any{"change": "tool_added", "action": "block"}
	}
	if r := s.Do("PUT", path, map[string]any{"default_action": "allow", "rules": tooMany}, h); r.Status != 422 || !wsHasViolation(t, r.Body, "body.rules", "") {
		t.Errorf("51 rules: got %d %s, want 422 locating body.rules", r.Status, r.Body)
	}
	if r := s.Do("PUT", path, put, other); r.Status != 404 {
		t.Errorf("PUT into another workspace's repository: got %d %s, want 404", r.Status, r.Body)
	}
	if got := s.Must("GET", path, nil, h, 200).Object(t); got["revision"] != float64(2) {
		t.Errorf("after refused PUTs: got revision %v, want 2", got["revision"])
	}
}

// wsSeedRuns writes a run of the target with an approval, a baseline and evidence, as the runs'
// worker would, so that deletions have trails to purge.
func (s *stack) wsSeedRuns(org, repo, tgt string) {
	s.t.Helper()
	ctx := context.Background()
	run := uuid.Must(uuid.NewV7())
	now := time.Now()
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO reliability_runs (id, organization_id, repository_id, target_id, state, trigger, created_at, updated_at)
VALUES ($1, $2, $3, $4, 'approved', 'ci', $5, $5)`, []any{run, org, repo, tgt, now}},
		{`INSERT INTO reliability_run_approvals (id, organization_id, run_id, approved_by, reason, created_at)
VALUES ($1, $2, $3, 'alice', 'ok', $4)`, []any{uuid.Must(uuid.NewV7()), org, run, now}},
		{`INSERT INTO reliability_baselines (id, organization_id, target_id, run_id, action, actor, created_at)
VALUES ($1, $2, $3, $4, 'promote', 'alice', $5)`, []any{uuid.Must(uuid.NewV7()), org, tgt, run, now}},
		{`INSERT INTO reliability_run_evidence (run_id, organization_id, document, sha256, created_at)
VALUES ($1, $2, '{}', 'x', $3)`, []any{run, org, now}},
	} {
		if _, err := s.Pool.Exec(ctx, q.sql, q.args...); err != nil {
			s.t.Fatalf("seeding: %v", err)
		}
	}
}

// wsCounts counts an organization's rows in each agent-reliability table.
func (s *stack) wsCounts(org string) map[string]int {
	s.t.Helper()
	out := map[string]int{}
	for _, table := range []string{"repositories", "targets", "schedules", "deployment_policies", "runs", "run_approvals", "baselines", "run_evidence", "installations"} {
		out[table] = s.Count(`SELECT count(*) FROM reliability_`+table+` WHERE organization_id = $1`, org)
	}
	return out
}

func TestReliabilityWorkspaceDeletion(t *testing.T) {
	t.Parallel()
	s := startService(t)
	org, h := s.wsWorkspace("Deleters")
	otherOrg, other := s.wsWorkspace("Bystanders")
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO reliability_workspaces (organization_id, plan) VALUES ($1, 'team')`, org); err != nil {
		t.Fatal(err)
	}

	// Each workspace: two repositories, each with a target that has a schedule and a run with its
	// trails, and a policy on the first.
	setup := func(org string, h map[string]string, n int) []string {
		var repos []string
		for i, name := range []string{"acme/one", "acme/two"} {
			repo := s.wsRepository(h, name)
			tgt := s.wsTarget(h, repo, "prod", n+i)
			s.Must("PUT", wsPrefix+"/repositories/"+repo+"/targets/"+tgt+"/schedule", map[string]any{"interval_seconds": 600}, h, 200)
			s.wsSeedRuns(org, repo, tgt)
			repos = append(repos, repo)
		}
		s.Must("PUT", wsPrefix+"/repositories/"+repos[0]+"/deployment-policy", map[string]any{"default_action": "block"}, h, 200)
		return repos
	}
	repos := setup(org, h, 10)
	setup(otherOrg, other, 20)

	// The trails refuse a plain DELETE: only a purge removes them.
	if _, err := s.Pool.Exec(context.Background(), `DELETE FROM reliability_run_approvals WHERE organization_id = $1`, org); err == nil {
		t.Fatal("a plain DELETE of approvals succeeded; want the append-only trigger to refuse it")
	}

	// Deleting a repository takes everything under it, and nothing else.
	s.Must("DELETE", wsPrefix+"/repositories/"+repos[0], nil, h, 204)
	want := map[string]int{"repositories": 1, "targets": 1, "schedules": 1, "deployment_policies": 0, "runs": 1, "run_approvals": 1, "baselines": 1, "run_evidence": 1, "installations": 0}
	if got := s.wsCounts(org); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after deleting a repository: got %v, want %v", got, want)
	}
	// So does deleting a target.
	tgt := s.wsTarget(h, repos[1], "staging", 30)
	s.wsSeedRuns(org, repos[1], tgt)
	s.Must("DELETE", wsPrefix+"/repositories/"+repos[1]+"/targets/"+tgt, nil, h, 204)
	if got := s.wsCounts(org); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after deleting a target: got %v, want %v", got, want)
	}

	for _, body := range []any{map[string]any{}, map[string]any{"confirm": "yes"}, map[string]any{"confirm": "DELETE ALL AGENT RELIABILITY DATA"}} {
		r := s.Do("POST", wsPrefix+"/workspace/delete-all", body, h)
		if r.Status != 422 || !wsHasViolation(t, r.Body, "body.confirm", "") {
			t.Errorf("confirm %v: got %d %s, want 422 locating body.confirm", body, r.Status, r.Body)
		}
	}
	if got := s.wsCounts(org); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after refused deletions: got %v, want %v (nothing deleted)", got, want)
	}

	var res struct {
		WorkspaceID string         `json:"workspace_id"`
		Deleted     map[string]int `json:"deleted"`
		DeletedAt   string         `json:"deleted_at"`
	}
	s.Must("POST", wsPrefix+"/workspace/delete-all", map[string]any{"confirm": "delete all agent reliability data"}, h, 200).Decode(t, &res)
	if res.WorkspaceID != org || fmt.Sprint(res.Deleted) != fmt.Sprint(want) || res.DeletedAt == "" {
		t.Errorf("deletion: got %+v, want counts %v", res, want)
	}
	zero := map[string]int{}
	for k := range want {
		zero[k] = 0
	}
	if got := s.wsCounts(org); fmt.Sprint(got) != fmt.Sprint(zero) {
		t.Errorf("after the deletion: got %v, want none", got)
	}
	// The plan stays; the other workspace is untouched; a second deletion deletes nothing.
	if n := s.Count(`SELECT count(*) FROM reliability_workspaces WHERE organization_id = $1 AND plan = 'team'`, org); n != 1 {
		t.Errorf("the workspace's plan: got %d rows, want it kept", n)
	}
	wantOther := map[string]int{"repositories": 2, "targets": 2, "schedules": 2, "deployment_policies": 1, "runs": 2, "run_approvals": 2, "baselines": 2, "run_evidence": 2, "installations": 0}
	if got := s.wsCounts(otherOrg); fmt.Sprint(got) != fmt.Sprint(wantOther) {
		t.Errorf("the other workspace: got %v, want %v", got, wantOther)
	}
	s.Must("POST", wsPrefix+"/workspace/delete-all", map[string]any{"confirm": "delete all agent reliability data"}, h, 200).Decode(t, &res)
	if fmt.Sprint(res.Deleted) != fmt.Sprint(zero) {
		t.Errorf("second deletion: got %v, want zeros", res.Deleted)
	}
	if got := s.Must("GET", wsPrefix+"/repositories", nil, h, 200); string(got.Body) != "[]" {
		t.Errorf("repositories after the deletion: got %s", got.Body)
	}
}

func TestReliabilityWorkspaceOpenAPI(t *testing.T) {
	t.Parallel()
	s := startService(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]any `json:"responses"`
			Security  []any          `json:"security"`
		} `json:"paths"`
	}
	s.Must("GET", "/openapi.json", nil, nil, 200).Decode(t, &doc)
	// Path parameters are named as the generator names every path parameter of the service
	// ({repositoryId}); the URLs are the same.
	for _, c := range []struct {
		method, path string
		statuses     []string
	}{
		{"get", "/repositories", []string{"200", "401"}},
		{"post", "/repositories", []string{"201", "401", "403", "409", "422"}},
		{"get", "/repositories/{repositoryId}", []string{"200", "404"}},
		{"put", "/repositories/{repositoryId}", []string{"200", "404", "409", "422"}},
		{"delete", "/repositories/{repositoryId}", []string{"204", "404"}},
		{"get", "/repositories/{repositoryId}/targets", []string{"200", "404"}},
		{"post", "/repositories/{repositoryId}/targets", []string{"201", "402", "403", "404", "409", "422"}},
		{"put", "/repositories/{repositoryId}/targets/{targetId}", []string{"200", "404", "409", "422"}},
		{"delete", "/repositories/{repositoryId}/targets/{targetId}", []string{"204", "404"}},
		{"get", "/repositories/{repositoryId}/targets/{targetId}/schedule", []string{"200", "404"}},
		{"put", "/repositories/{repositoryId}/targets/{targetId}/schedule", []string{"200", "404", "422"}},
		{"get", "/repositories/{repositoryId}/deployment-policy", []string{"200", "404"}},
		{"put", "/repositories/{repositoryId}/deployment-policy", []string{"200", "404", "409", "422"}},
		{"post", "/code-host/installations/callback", []string{"200", "409", "422", "503"}},
		{"post", "/workspace/delete-all", []string{"200", "422"}},
	} {
		op, ok := doc.Paths[wsPrefix+c.path][c.method]
		if !ok {
			t.Errorf("openapi.json: no %s %s", c.method, c.path)
			continue
		}
		for _, st := range c.statuses {
			if _, ok := op.Responses[st]; !ok {
				t.Errorf("openapi.json %s %s: no %s answer (has %v)", c.method, c.path, st, slices.Sorted(maps.Keys(op.Responses)))
			}
		}
		if len(op.Security) == 0 {
			t.Errorf("openapi.json %s %s: no security", c.method, c.path)
		}
	}
}
