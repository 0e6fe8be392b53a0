package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/servicetest"
	"github.com/trustlayer/trustlayer/services/verification/app"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// The runs of agent reliability over HTTP: scans, the worker (driven by the tests through
// app.ReliabilityWorkOnce, with the background worker off), diffs, the policy's decision,
// approvals, baselines, evidence, enqueue-due and the overview. Targets are audittest fixtures on
// loopback, trusted through TestMain's SSL_CERT_FILE.

const runsPath = "/v1/agent-reliability"

// runsOwner is a workspace (an organization) with its bearer key.
type runsOwner struct {
	org  string
	auth map[string]string
}

// startRuns starts the service with loopback targets on port allowed and the worker off.
func startRuns(t testing.TB, port int, extra ...map[string]string) *stack {
	t.Helper()
	return startService(t, append([]map[string]string{{
		app.EnvPrefix + "ALLOW_PRIVATE_CIDRS": "127.0.0.0/8",
		app.EnvPrefix + "AUDIT_ALLOWED_PORTS": strconv.Itoa(port),
		app.EnvPrefix + "RELIABILITY_WORKER":  "false",
		app.EnvPrefix + "LOG_LEVEL":           "error",
	}}, extra...)...)
}

func (s *stack) runsOwner(name string) runsOwner {
	s.t.Helper()
	org, key := s.newKey(name)
	return runsOwner{org: org, auth: bearer(key)}
}

// reliabilityTarget inserts a repository and a target of url into o's workspace and returns their
// ids. The rows are written as the workspace routes write them, so that these tests do not depend
// on that part of the API.
func (s *stack) reliabilityTarget(o runsOwner, url string, evaluators ...string) (string, string) {
	s.t.Helper()
	repo, target := uuid.New(), uuid.New()
	ctx := context.Background()
	if _, err := s.Pool.Exec(ctx, `INSERT INTO reliability_repositories (id, organization_id, full_name, provider, created_at, updated_at)
		VALUES ($1, $2, $3, 'manual', now(), now())`, repo, o.org, "acme/"+repo.String()[:8]); err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.Pool.Exec(ctx, `INSERT INTO reliability_targets (id, organization_id, repository_id, name, url, evaluators, created_at, updated_at)
		VALUES ($1, $2, $3, 'agent', $4, $5, now(), now())`, target, o.org, repo, url, evaluators); err != nil {
		s.t.Fatal(err)
	}
	return repo.String(), target.String()
}

// rrWork runs the worker once and returns how many runs it took.
func (s *stack) rrWork(n int) int {
	s.t.Helper()
	got, err := app.ReliabilityWorkOnce(context.Background(), s.Env, s.Platform, n)
	if err != nil {
		s.t.Fatal(err)
	}
	return got
}

// rrScan asks for a scan (202) and returns the run.
func (s *stack) rrScan(o runsOwner, body map[string]any) map[string]any {
	s.t.Helper()
	return s.Must("POST", runsPath+"/scans", body, o.auth, http.StatusAccepted).Object(s.t)
}

// rrRun reads a run.
func (s *stack) rrRun(o runsOwner, id string) map[string]any {
	s.t.Helper()
	return s.Must("GET", runsPath+"/runs/"+id, nil, o.auth, http.StatusOK).Object(s.t)
}

func runsCode(t *testing.T, r servicetest.Reply) string {
	t.Helper()
	code, _ := detailCode(t, r.Body)
	return code
}

func changeKinds(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, c := range list {
		m, _ := c.(map[string]any)
		out = append(out, m["kind"].(string)+"/"+m["item"].(string)+"/"+m["risk"].(string))
	}
	return out
}

// TestReliabilityRunsCI is the CI flow: scan, promote the first run as baseline, change the target's
// tool surface, scan again (needs_approval), evaluate, approve, promote; then diffs, rollback,
// evidence and the overview, and what another workspace sees.
func TestReliabilityRunsCI(t *testing.T) {
	t.Parallel()
	fixture := newRugPull()
	srv := fixtures.Serve(fixture)
	t.Cleanup(srv.Close)
	s := startRuns(t, srv.Port)
	o := s.runsOwner("CI workspace")
	// The repository and its target, through the workspace routes.
	repo := s.Must("POST", runsPath+"/repositories", map[string]any{"full_name": "acme/alerts-agent"}, o.auth, http.StatusCreated).Object(t)["id"].(string)
	target := s.Must("POST", runsPath+"/repositories/"+repo+"/targets",
		map[string]any{"name": "alerts", "url": srv.URL, "evaluators": []string{"mcp", "readiness"}}, o.auth, http.StatusCreated).Object(t)["id"].(string)

	first := s.rrScan(o, map[string]any{"target_id": target, "commit_sha": "1111111", "ref": "refs/heads/main", "trigger": "ci"})
	if first["state"] != "queued" || first["trigger"] != "ci" || first["target_id"] != target || first["repository_id"] != repo ||
		!strings.HasPrefix(first["requested_by"].(string), "api_key:vk_") || first["commit_sha"] != "1111111" {
		t.Fatalf("scan %v", first)
	}
	// A scan while the run is queued answers that run.
	if again := s.rrScan(o, map[string]any{"target_id": target}); again["id"] != first["id"] {
		t.Errorf("second scan %v, want the queued run %v", again["id"], first["id"])
	}
	if n := s.rrWork(4); n != 1 {
		t.Fatalf("worker took %d runs, want 1", n)
	}
	r1 := s.rrRun(o, first["id"].(string))
	reasons, _ := r1["decision_reasons"].([]any)
	summary, _ := r1["summary"].(map[string]any)
	if r1["state"] != "succeeded" || r1["decision"] != "allow" || len(reasons) != 1 ||
		!strings.HasPrefix(reasons[0].(map[string]any)["message"].(string), "no baseline") ||
		r1["conformance_audit_id"] == "" || r1["readiness_audit_id"] == "" || r1["evidence_sha256"] == "" || r1["attempts"] != float64(1) ||
		summary["verdict"] != "pass" || summary["readiness_score"] != float64(100) || summary["surface_sha256"] == "" {
		t.Fatalf("first run %v", r1)
	}
	// The run's audits are stored like any: a token of subject reliability:<organization> reads them.
	token := s.token("reliability:"+o.org, 600, "service:audit")
	s.Must("GET", "/v1/audits/"+r1["conformance_audit_id"].(string), nil, bearer(token), http.StatusOK)

	// A diff without a baseline is 409; promote the first run.
	if r := s.Do("POST", runsPath+"/diffs", map[string]any{"head_run_id": r1["id"]}, o.auth); r.Status != http.StatusConflict || runsCode(t, r) != "no_baseline" {
		t.Errorf("diff without baseline: %d %s", r.Status, r.Body)
	}
	b1 := s.Must("POST", runsPath+"/runs/"+r1["id"].(string)+"/baseline/promote", map[string]any{"reason": "first release"}, o.auth, http.StatusOK).Object(t)
	if b1["run_id"] != r1["id"] || b1["action"] != "promote" || b1["actor"] != first["requested_by"] || b1["reason"] != "first release" ||
		b1["previous_baseline_id"] != "" || b1["target_id"] != target || b1["repository_id"] != repo {
		t.Fatalf("baseline %v", b1)
	}

	// The rug pull: delete_alert takes a path parameter.
	fixture.pull()
	second := s.rrScan(o, map[string]any{"target_id": target, "commit_sha": "2222222", "trigger": "ci"})
	s.rrWork(4)
	r2 := s.rrRun(o, second["id"].(string))
	if r2["state"] != "needs_approval" || r2["decision"] != "needs_approval" || r2["baseline_run_id"] != r1["id"] ||
		!slices.Contains(changeKinds(r2["changes"]), "parameter_added/delete_alert/medium") {
		t.Fatalf("second run %v", r2)
	}

	ev := s.Must("POST", runsPath+"/deployment-policy/evaluate", map[string]any{"head_run_id": r2["id"]}, o.auth, http.StatusOK).Object(t)
	reasons, _ = ev["reasons"].([]any)
	if ev["decision"] != "needs_approval" || ev["policy_source"] != "default" || ev["base_run_id"] != r1["id"] || len(reasons) == 0 {
		t.Fatalf("evaluate %v", ev)
	}
	rule, _ := reasons[0].(map[string]any)["rule"].(map[string]any)
	if rule["change"] != "parameter_added" || rule["action"] != "needs_approval" || reasons[0].(map[string]any)["rule_index"] != float64(5) {
		t.Errorf("reason %v", reasons[0])
	}
	diff := s.Must("POST", runsPath+"/diffs", map[string]any{"base_run_id": r1["id"], "head_run_id": r2["id"]}, o.auth, http.StatusOK).Object(t)
	if !slices.Equal(changeKinds(diff["changes"]), changeKinds(r2["changes"])) || diff["decision"] != "" || diff["highest_risk"] != "medium" {
		t.Errorf("diff %v, want the run's changes %v", diff, r2["changes"])
	}
	same := s.Must("POST", runsPath+"/diffs", map[string]any{"base_run_id": r1["id"], "head_run_id": r1["id"]}, o.auth, http.StatusOK).Object(t)
	if len(same["changes"].([]any)) != 0 {
		t.Errorf("a run against itself: %v", same["changes"])
	}

	// A held run is no baseline until approved; approval needs who and why, once.
	if r := s.Do("POST", runsPath+"/runs/"+r2["id"].(string)+"/baseline/promote", map[string]any{}, o.auth); r.Status != http.StatusConflict || runsCode(t, r) != "run_not_promotable" {
		t.Errorf("promote held run: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", runsPath+"/runs/"+r2["id"].(string)+"/approve", map[string]any{"approved_by": "alice"}, o.auth); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("approve without reason: %d %s", r.Status, r.Body)
	}
	approved := s.Must("POST", runsPath+"/runs/"+r2["id"].(string)+"/approve",
		map[string]any{"approved_by": "alice@example.com", "reason": "the path parameter is reviewed"}, o.auth, http.StatusOK).Object(t)
	approval, _ := approved["approval"].(map[string]any)
	if approved["state"] != "approved" || approval["approved_by"] != "alice@example.com" {
		t.Fatalf("approved %v", approved)
	}
	if r := s.Do("POST", runsPath+"/runs/"+r2["id"].(string)+"/approve", map[string]any{"approved_by": "bob", "reason": "again"}, o.auth); r.Status != http.StatusConflict || runsCode(t, r) != "run_not_awaiting_approval" {
		t.Errorf("approve twice: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", runsPath+"/runs/"+r1["id"].(string)+"/approve", map[string]any{"approved_by": "bob", "reason": "x"}, o.auth); r.Status != http.StatusConflict {
		t.Errorf("approve a succeeded run: %d", r.Status)
	}
	b2 := s.Must("POST", runsPath+"/repositories/"+repo+"/targets/"+target+"/baselines/promote",
		map[string]any{"run_id": r2["id"], "actor": "release-bot"}, o.auth, http.StatusOK).Object(t)
	if b2["run_id"] != r2["id"] || b2["previous_baseline_id"] != b1["id"] || b2["actor"] != "release-bot" {
		t.Fatalf("second baseline %v", b2)
	}
	// A third scan of the same surface: no changes, allowed.
	third := s.rrScan(o, map[string]any{"target_id": target})
	s.rrWork(4)
	if r3 := s.rrRun(o, third["id"].(string)); r3["state"] != "succeeded" || r3["baseline_run_id"] != r2["id"] || len(r3["changes"].([]any)) != 0 {
		t.Errorf("third run %v", r3)
	}

	// A stored policy that blocks new parameters: the same diff is now blocked, by the repository's rule.
	s.Must("PUT", runsPath+"/repositories/"+repo+"/deployment-policy", map[string]any{
		"rules": []map[string]any{{"change": "parameter_added", "action": "block"}}, "default_action": "allow"}, o.auth, http.StatusOK)
	strict := s.Must("POST", runsPath+"/deployment-policy/evaluate", map[string]any{"base_run_id": r1["id"], "head_run_id": r2["id"]}, o.auth, http.StatusOK).Object(t)
	if strict["decision"] != "block" || strict["policy_source"] != "repository" || strict["policy_revision"] != float64(1) {
		t.Errorf("evaluate with the stored policy %v", strict)
	}

	// Rollback returns to the first baseline, then there is nothing before it.
	rb := s.Must("POST", runsPath+"/repositories/"+repo+"/targets/"+target+"/baselines/rollback", map[string]any{"reason": "bad release"}, o.auth, http.StatusOK).Object(t)
	if rb["run_id"] != r1["id"] || rb["action"] != "rollback" || rb["previous_baseline_id"] != "" {
		t.Fatalf("rollback %v", rb)
	}
	// (No body at all reads as an empty one.)
	if r := s.Do("POST", runsPath+"/repositories/"+repo+"/targets/"+target+"/baselines/rollback", nil, o.auth); r.Status != http.StatusConflict || runsCode(t, r) != "no_previous_baseline" {
		t.Errorf("second rollback: %d %s", r.Status, r.Body)
	}
	if n := s.Count(`SELECT count(*) FROM reliability_baselines WHERE target_id = $1`, target); n != 3 {
		t.Errorf("%d baseline entries, want 3 (append-only history)", n)
	}
	for _, q := range []string{`UPDATE reliability_baselines SET reason = 'x'`, `UPDATE reliability_run_approvals SET reason = 'x'`,
		`UPDATE reliability_run_evidence SET sha256 = 'x'`, `DELETE FROM reliability_run_evidence`} {
		if _, err := s.Pool.Exec(context.Background(), q); err == nil {
			t.Errorf("the append-only trail accepted %s", q)
		}
	}

	// Evidence: the document's parts and whole hash as the manifest says, and the recorded hash.
	evidence := s.Must("GET", runsPath+"/runs/"+r2["id"].(string)+"/evidence", nil, o.auth, http.StatusOK).Object(t)
	checkEvidence(t, evidence, r2)
	page := s.Must("GET", runsPath+"/runs/"+r2["id"].(string)+"/evidence.html", nil, o.auth, http.StatusOK)
	if ct := page.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("evidence.html Content-Type %q", ct)
	}
	for _, want := range []string{r2["id"].(string), "parameter_added", "delete_alert", evidence["sha256"].(string), "needs_approval", "matches"} {
		if !strings.Contains(string(page.Body), want) {
			t.Errorf("evidence.html lacks %q", want)
		}
	}
	if strings.Contains(string(page.Body), "<script") || strings.Contains(string(page.Body), "http://") {
		t.Error("evidence.html loads or runs something")
	}

	// Lists and the overview.
	list := s.Must("GET", runsPath+"/runs", nil, o.auth, http.StatusOK)
	var items []map[string]any
	list.Decode(t, &items)
	if len(items) != 3 || items[0]["id"] != third["id"] || items[2]["id"] != r1["id"] {
		t.Errorf("runs %v", items)
	}
	s.Must("GET", runsPath+"/runs?limit=1&state=approved&target_id="+target, nil, o.auth, http.StatusOK).Decode(t, &items)
	if len(items) != 1 || items[0]["id"] != r2["id"] {
		t.Errorf("filtered runs %v", items)
	}
	for _, q := range []string{"limit=0", "limit=201", "state=done", "target_id=x"} {
		if r := s.Do("GET", runsPath+"/runs?"+q, nil, o.auth); r.Status != http.StatusUnprocessableEntity {
			t.Errorf("runs?%s: %d", q, r.Status)
		}
	}
	ov := s.Must("GET", runsPath+"/overview", nil, o.auth, http.StatusOK).Object(t)
	counts, _ := ov["runs"].(map[string]any)
	if ov["repositories"] != float64(1) || ov["targets"] != float64(1) || ov["scans_this_month"] != float64(3) || ov["plan"] != "free" ||
		ov["scans_per_month"] != float64(100) || counts["succeeded"] != float64(2) || counts["approved"] != float64(1) || counts["queued"] != float64(0) ||
		len(ov["latest_runs"].([]any)) != 3 || len(ov["held_runs"].([]any)) != 0 {
		t.Errorf("overview %v", ov)
	}

	// Another workspace sees none of it; unknown and malformed ids are 404; no key is 401.
	other := s.runsOwner("Other workspace")
	for _, c := range []struct{ method, path string }{
		{"GET", "/runs/" + r1["id"].(string)},
		{"GET", "/runs/" + r1["id"].(string) + "/evidence"},
		{"GET", "/runs/" + r1["id"].(string) + "/evidence.html"},
		{"POST", "/runs/" + r1["id"].(string) + "/baseline/promote"},
		{"POST", "/repositories/" + repo + "/targets/" + target + "/baselines/rollback"},
		{"GET", "/runs/" + uuid.NewString()},
		{"GET", "/runs/not-a-uuid"},
	} {
		if r := s.Do(c.method, runsPath+c.path, map[string]any{}, other.auth); r.Status != http.StatusNotFound {
			t.Errorf("%s %s by another workspace: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	if r := s.Do("POST", runsPath+"/scans", map[string]any{"target_id": target}, other.auth); r.Status != http.StatusNotFound || runsCode(t, r) != "target_not_found" {
		t.Errorf("scan of another workspace's target: %d %s", r.Status, r.Body)
	}
	if r := s.Do("POST", runsPath+"/diffs", map[string]any{"head_run_id": r1["id"]}, other.auth); r.Status != http.StatusNotFound || runsCode(t, r) != "run_not_found" {
		t.Errorf("diff of another workspace's run: %d %s", r.Status, r.Body)
	}
	if r := s.Do("GET", runsPath+"/runs", nil, nil); r.Status != http.StatusUnauthorized {
		t.Errorf("no key: %d", r.Status)
	}
}

// checkEvidence recomputes the manifest of an evidence answer from its document.
func checkEvidence(t *testing.T, evidence, run map[string]any) {
	t.Helper()
	doc, _ := json.Marshal(evidence["document"])
	whole, err := surface.Canonical(doc)
	if err != nil {
		t.Fatal(err)
	}
	manifest, _ := evidence["manifest"].(map[string]any)
	if hash := sha256.Sum256(whole); hex.EncodeToString(hash[:]) != evidence["sha256"] || manifest["document_sha256"] != evidence["sha256"] ||
		evidence["sha256"] != run["evidence_sha256"] {
		t.Errorf("evidence hash %v, manifest %v, run %v, recomputed %x", evidence["sha256"], manifest["document_sha256"], run["evidence_sha256"], hash)
	}
	var parts map[string]json.RawMessage
	_ = json.Unmarshal(doc, &parts)
	var names []string
	for _, p := range manifest["parts"].([]any) {
		part := p.(map[string]any)
		names = append(names, part["name"].(string))
		c, _ := surface.Canonical(parts[part["name"].(string)])
		if hash := sha256.Sum256(c); hex.EncodeToString(hash[:]) != part["sha256"] {
			t.Errorf("part %s: hash %v, recomputed %x", part["name"], part["sha256"], hash)
		}
	}
	for _, want := range []string{"audits", "baseline", "decision", "diff", "run", "service", "summary", "target", "timings"} {
		if !slices.Contains(names, want) {
			t.Errorf("evidence lacks part %s (%v)", want, names)
		}
	}
	audits, _ := evidence["document"].(map[string]any)["audits"].([]any)
	if len(audits) != 2 || audits[0].(map[string]any)["report"].(map[string]any)["checks"] == nil {
		t.Errorf("evidence audits %v", audits)
	}
}

// TestReliabilityScanValidation: the body's problems are 422; a URL the guard refuses is a problem
// of target_id typed with the refusal's code; an unknown target is 404.
func TestReliabilityScanValidation(t *testing.T) {
	t.Parallel()
	srv := fixtures.Serve(audittest.Dual())
	t.Cleanup(srv.Close)
	s := startRuns(t, srv.Port)
	o := s.runsOwner("Validation")
	_, target := s.reliabilityTarget(o, srv.URL, "mcp")
	_, refused := s.reliabilityTarget(o, "https://127.0.0.1:1/mcp", "mcp")
	for _, c := range []struct {
		body      map[string]any
		status    int
		loc, kind string
	}{
		{map[string]any{}, 422, "target_id", "missing"},
		{map[string]any{"target_id": "x"}, 422, "target_id", "uuid_parsing"},
		{map[string]any{"target_id": target, "trigger": "schedule"}, 422, "trigger", "enum"},
		{map[string]any{"target_id": target, "ref": strings.Repeat("r", 201)}, 422, "ref", "string_too_long"},
		{map[string]any{"target_id": refused}, 422, "target_id", "https_port_required"},
		{map[string]any{"target_id": uuid.NewString()}, 404, "", ""},
	} {
		r := s.Do("POST", runsPath+"/scans", c.body, o.auth)
		if r.Status != c.status {
			t.Errorf("%v: %d %s", c.body, r.Status, r.Body)
			continue
		}
		if c.status == 422 {
			var v struct {
				Detail []struct {
					Loc  []any  `json:"loc"`
					Type string `json:"type"`
				} `json:"detail"`
			}
			r.Decode(t, &v)
			if len(v.Detail) == 0 || v.Detail[0].Loc[len(v.Detail[0].Loc)-1] != c.loc || v.Detail[0].Type != c.kind {
				t.Errorf("%v: %s, want %s %s", c.body, r.Body, c.loc, c.kind)
			}
		}
	}
	if n := s.Count(`SELECT count(*) FROM reliability_runs`); n != 0 {
		t.Errorf("%d runs after refused scans", n)
	}
}

// TestReliabilityScanConcurrency: 20 scans of one target at once queue one run, which all 20 answer;
// the worker then finishes it, and nothing is left queued or running.
func TestReliabilityScanConcurrency(t *testing.T) {
	t.Parallel()
	srv := fixtures.Serve(audittest.Dual())
	t.Cleanup(srv.Close)
	s := startRuns(t, srv.Port)
	o := s.runsOwner("Concurrent scans")
	_, target := s.reliabilityTarget(o, srv.URL, "mcp")
	ids := make([]string, 20)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := s.Do("POST", runsPath+"/scans", map[string]any{"target_id": target}, o.auth)
			if r.Status == http.StatusAccepted {
				ids[i], _ = r.Object(t)["id"].(string)
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("scan answers %v, want one run 20 times", ids)
		}
	}
	if n := s.Count(`SELECT count(*) FROM reliability_runs`); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}
	if n := s.rrWork(4) + s.rrWork(4); n != 1 {
		t.Errorf("workers took %d runs, want 1", n)
	}
	if n := s.Count(`SELECT count(*) FROM reliability_runs WHERE state IN ('queued', 'running')`); n != 0 {
		t.Errorf("%d runs left in flight", n)
	}
}

// TestReliabilityRunLeases: a run whose worker died (its lease passed) is taken again; past the
// attempts it is failed with attempts_exhausted, with its evidence, never left running.
func TestReliabilityRunLeases(t *testing.T) {
	t.Parallel()
	srv := fixtures.Serve(audittest.Dual())
	t.Cleanup(srv.Close)
	s := startRuns(t, srv.Port, map[string]string{app.EnvPrefix + "RELIABILITY_RUN_MAX_ATTEMPTS": "2"})
	o := s.runsOwner("Leases")
	_, target := s.reliabilityTarget(o, srv.URL, "mcp")
	_, target2 := s.reliabilityTarget(o, srv.URL, "mcp")
	ctx := context.Background()

	// A run taken once by a worker that died: taken again, and finished.
	r := s.rrScan(o, map[string]any{"target_id": target})
	if _, err := s.Pool.Exec(ctx, `UPDATE reliability_runs SET state = 'running', attempts = 1, lease_owner = 'dead',
		lease_until = now() - interval '1 second', started_at = now() WHERE id = $1`, r["id"]); err != nil {
		t.Fatal(err)
	}
	// One whose lease has not passed is left alone.
	r2 := s.rrScan(o, map[string]any{"target_id": target2})
	if _, err := s.Pool.Exec(ctx, `UPDATE reliability_runs SET state = 'running', attempts = 2, lease_owner = 'alive',
		lease_until = now() + interval '1 hour', started_at = now() WHERE id = $1`, r2["id"]); err != nil {
		t.Fatal(err)
	}
	if n := s.rrWork(4); n != 1 {
		t.Fatalf("worker took %d runs, want 1", n)
	}
	if got := s.rrRun(o, r["id"].(string)); got["state"] != "succeeded" || got["attempts"] != float64(2) {
		t.Errorf("retaken run %v", got)
	}
	if got := s.rrRun(o, r2["id"].(string)); got["state"] != "running" {
		t.Errorf("leased run %v", got)
	}
	// Its lease passes at its last attempt: failed.
	if _, err := s.Pool.Exec(ctx, `UPDATE reliability_runs SET lease_until = now() - interval '1 second' WHERE id = $1`, r2["id"]); err != nil {
		t.Fatal(err)
	}
	s.rrWork(4)
	got := s.rrRun(o, r2["id"].(string))
	if got["state"] != "failed" || got["failure_code"] != "attempts_exhausted" || got["failure_message"] == "" || got["evidence_sha256"] == "" {
		t.Errorf("exhausted run %v", got)
	}
	if r := s.Do("POST", runsPath+"/runs/"+r2["id"].(string)+"/baseline/promote", map[string]any{}, o.auth); r.Status != http.StatusConflict {
		t.Errorf("promote a failed run: %d", r.Status)
	}
	// A target the guard refuses by the time the worker audits it: failed with a stable code and a
	// safe message.
	f := s.rrScan(o, map[string]any{"target_id": target})
	if _, err := s.Pool.Exec(ctx, `UPDATE reliability_targets SET url = 'https://127.0.0.1:1/mcp' WHERE id = $1`, target); err != nil {
		t.Fatal(err)
	}
	s.rrWork(4)
	got = s.rrRun(o, f["id"].(string))
	if got["state"] != "failed" || got["failure_code"] != "target_refused" || got["decision"] != "" ||
		!strings.HasPrefix(got["failure_message"].(string), "target refused (https_port_required)") || got["evidence_sha256"] == "" {
		t.Errorf("refused run %v", got)
	}
	// A queued run has no evidence yet.
	q := s.rrScan(o, map[string]any{"target_id": target2})
	if r := s.Do("GET", runsPath+"/runs/"+q["id"].(string)+"/evidence", nil, o.auth); r.Status != http.StatusConflict || runsCode(t, r) != "run_not_finished" {
		t.Errorf("evidence of a queued run: %d %s", r.Status, r.Body)
	}
}

// TestReliabilityPlanLimit: past the free plan's scans this month, a scan is 402 plan_limit_reached.
func TestReliabilityPlanLimit(t *testing.T) {
	t.Parallel()
	srv := fixtures.Serve(audittest.Dual())
	t.Cleanup(srv.Close)
	s := startRuns(t, srv.Port)
	o := s.runsOwner("Busy workspace")
	repo, target := s.reliabilityTarget(o, srv.URL, "mcp")
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO reliability_runs (id, organization_id, repository_id, target_id, state, trigger, created_at, updated_at)
		SELECT gen_random_uuid(), $1, $2, $3, 'failed', 'manual', now(), now() FROM generate_series(1, 100)`, o.org, repo, target); err != nil {
		t.Fatal(err)
	}
	r := s.Do("POST", runsPath+"/scans", map[string]any{"target_id": target}, o.auth)
	var body struct {
		Detail struct {
			Error string `json:"error"`
			Limit int    `json:"limit"`
			Plan  string `json:"plan"`
		} `json:"detail"`
	}
	r.Decode(t, &body)
	if r.Status != http.StatusPaymentRequired || body.Detail.Error != "plan_limit_reached" || body.Detail.Limit != 100 || body.Detail.Plan != "free" {
		t.Errorf("scan past the plan: %d %s", r.Status, r.Body)
	}
	// The team plan allows more.
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO reliability_workspaces (organization_id, plan) VALUES ($1, 'team')`, o.org); err != nil {
		t.Fatal(err)
	}
	s.rrScan(o, map[string]any{"target_id": target})
}

// TestReliabilityEnqueueDue: due schedules of the workspace queue one run per due time, a target with
// a run in flight is skipped, and two replicas calling at once never queue a run twice.
func TestReliabilityEnqueueDue(t *testing.T) {
	t.Parallel()
	srv := fixtures.Serve(audittest.Dual())
	t.Cleanup(srv.Close)
	a := startRuns(t, srv.Port)
	env := maps.Clone(a.Env)
	env[app.EnvPrefix+"HTTP_ADDR"], env[app.EnvPrefix+"GRPC_ADDR"] = "127.0.0.1:0", "127.0.0.1:0"
	b := &stack{Service: servicetest.Start(t, env, app.Boot), t: t}
	o := a.runsOwner("Schedules")
	ctx := context.Background()
	const n = 12
	var targets []string
	for i := range n {
		_, target := a.reliabilityTarget(o, srv.URL, "mcp")
		targets = append(targets, target)
		enabled := i != n-1 // the last one is disabled
		if _, err := a.Pool.Exec(ctx, `INSERT INTO reliability_schedules (target_id, organization_id, interval_seconds, enabled, next_due_at, updated_at)
			VALUES ($1, $2, 3600, $3, now() - interval '1 minute', now())`, target, o.org, enabled); err != nil {
			t.Fatal(err)
		}
	}
	// One target has a run in flight.
	busy := a.rrScan(o, map[string]any{"target_id": targets[0]})

	var wg sync.WaitGroup
	answers := make([]map[string]any, 4)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			answers[i] = s.Must("POST", runsPath+"/scheduled-scans/enqueue-due?limit=5", nil, o.auth, http.StatusOK).Object(t)
		}()
	}
	wg.Wait()
	var enqueued, skipped, due int
	for _, ans := range answers {
		enqueued += int(ans["enqueued"].(float64))
		skipped += int(ans["skipped"].(float64))
		due += int(ans["due"].(float64))
		if _, ok := ans["over_limit"]; !ok {
			t.Errorf("answer %v lacks over_limit", ans)
		}
	}
	if enqueued != n-2 || skipped != 1 || due != n-1 {
		t.Errorf("enqueued %d skipped %d due %d over %v, want %d 1 %d", enqueued, skipped, due, answers, n-2, n-1)
	}
	if got := a.Count(`SELECT count(*) FROM reliability_runs WHERE trigger = 'schedule'`); got != n-2 {
		t.Errorf("%d scheduled runs, want %d", got, n-2)
	}
	if got := a.Count(`SELECT count(*) FROM reliability_schedules WHERE enabled AND next_due_at <= now()`); got != 0 {
		t.Errorf("%d schedules still due", got)
	}
	// Nothing is due now: a call enqueues nothing.
	again := a.Must("POST", runsPath+"/scheduled-scans/enqueue-due", nil, o.auth, http.StatusOK).Object(t)
	if again["enqueued"] != float64(0) || again["due"] != float64(0) {
		t.Errorf("second call %v", again)
	}
	// The same due time again (a schedule moved back) is one run at most.
	if _, err := a.Pool.Exec(ctx, `UPDATE reliability_schedules s SET next_due_at = r.scheduled_for FROM reliability_runs r
		WHERE r.target_id = s.target_id AND r.trigger = 'schedule'`); err != nil {
		t.Fatal(err)
	}
	third := a.Must("POST", runsPath+"/scheduled-scans/enqueue-due?limit=200", nil, o.auth, http.StatusOK).Object(t)
	if third["enqueued"] != float64(0) || third["skipped"] != float64(n-2) {
		t.Errorf("replayed due times %v", third)
	}
	for _, q := range []string{"limit=0", "limit=201"} {
		if r := a.Do("POST", runsPath+"/scheduled-scans/enqueue-due?"+q, nil, o.auth); r.Status != http.StatusUnprocessableEntity {
			t.Errorf("enqueue-due?%s: %d", q, r.Status)
		}
	}
	// The workers of both replicas finish every run once.
	total := 0
	for range 5 {
		total += a.rrWork(8) + b.rrWork(8)
	}
	if total != n-1 {
		t.Errorf("workers took %d runs, want %d", total, n-1)
	}
	if got := a.Count(`SELECT count(*) FROM reliability_runs WHERE state IN ('queued', 'running')`); got != 0 {
		t.Errorf("%d runs left in flight", got)
	}
	if got := a.rrRun(o, busy["id"].(string)); got["trigger"] != "manual" {
		t.Errorf("the busy target's run %v", got)
	}
}

// TestReliabilityRunSettings: the worker's settings are checked at start, one message per problem.
func TestReliabilityRunSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, value string }{
		{"RELIABILITY_WORKER_CONCURRENCY", "0"},
		{"RELIABILITY_WORKER_CONCURRENCY", "257"},
		{"RELIABILITY_WORKER_POLL_INTERVAL", "1ms"},
		{"RELIABILITY_RUN_LEASE", "1s"},
		{"RELIABILITY_RUN_MAX_ATTEMPTS", "0"},
	} {
		env := map[string]string{app.EnvPrefix + "DATABASE_URL": "postgres://unused", app.EnvPrefix + c.name: c.value}
		_, err := app.LoadConfig(func(k string) string { return env[k] })
		if err == nil || !strings.Contains(err.Error(), app.EnvPrefix+c.name) {
			t.Errorf("%s=%s: %v", c.name, c.value, err)
		}
	}
	if !slices.Contains(app.ConfigVars(), app.EnvPrefix+"RELIABILITY_RUN_LEASE") {
		t.Error("ConfigVars lacks RELIABILITY_RUN_LEASE")
	}
}

// TestReliabilityScheduledWorker: a schedule put through the workspace routes falls due, enqueue-due
// queues its run and moves the schedule past now by its cron expression, and the background worker
// (on, polling every 20 ms) finishes the run.
func TestReliabilityScheduledWorker(t *testing.T) {
	t.Parallel()
	srv := fixtures.Serve(audittest.Dual())
	t.Cleanup(srv.Close)
	s := startRuns(t, srv.Port, map[string]string{
		app.EnvPrefix + "RELIABILITY_WORKER":               "true",
		app.EnvPrefix + "RELIABILITY_WORKER_POLL_INTERVAL": "20ms",
	})
	o := s.runsOwner("Scheduled")
	repo := s.Must("POST", runsPath+"/repositories", map[string]any{"full_name": "acme/nightly"}, o.auth, http.StatusCreated).Object(t)["id"].(string)
	target := s.Must("POST", runsPath+"/repositories/"+repo+"/targets",
		map[string]any{"name": "nightly", "url": srv.URL, "evaluators": []string{"mcp"}}, o.auth, http.StatusCreated).Object(t)["id"].(string)
	s.Must("PUT", runsPath+"/repositories/"+repo+"/targets/"+target+"/schedule",
		map[string]any{"cron": "0 3 * * *", "timezone": "Europe/Paris"}, o.auth, http.StatusOK)
	if _, err := s.Pool.Exec(context.Background(), `UPDATE reliability_schedules SET next_due_at = now() - interval '1 hour' WHERE target_id = $1`, target); err != nil {
		t.Fatal(err)
	}
	got := s.Must("POST", runsPath+"/scheduled-scans/enqueue-due", nil, o.auth, http.StatusOK).Object(t)
	if got["enqueued"] != float64(1) || got["due"] != float64(1) {
		t.Fatalf("enqueue-due %v", got)
	}
	var items []map[string]any
	eventually(t, "the scheduled run to finish", func() bool {
		s.Must("GET", runsPath+"/runs?target_id="+target, nil, o.auth, http.StatusOK).Decode(t, &items)
		return len(items) == 1 && items[0]["state"] == "succeeded"
	})
	if items[0]["trigger"] != "schedule" || items[0]["requested_by"] != "schedule" || items[0]["scheduled_for"] == nil {
		t.Errorf("scheduled run %v", items[0])
	}
	// The next due time is 03:00 in Paris, after now.
	var hour, minute int
	if err := s.Pool.QueryRow(context.Background(), `SELECT extract(hour FROM next_due_at AT TIME ZONE 'Europe/Paris')::int,
		extract(minute FROM next_due_at)::int FROM reliability_schedules WHERE target_id = $1 AND next_due_at > now()`, target).Scan(&hour, &minute); err != nil || hour != 3 || minute != 0 {
		t.Errorf("next due at %d:%02d Paris time (%v), want 3:00 after now", hour, minute, err)
	}
}

// TestReliabilityWorkerShutdown: a replica that stops in the middle of a run ends its lease, so that
// another replica takes the run again at once (a second attempt) rather than after the lease.
func TestReliabilityWorkerShutdown(t *testing.T) {
	t.Parallel()
	srv := fixtures.Serve(audittest.Slow(200*time.Millisecond, audittest.Dual()))
	t.Cleanup(srv.Close)
	a := startRuns(t, srv.Port, map[string]string{
		app.EnvPrefix + "RELIABILITY_WORKER":               "true",
		app.EnvPrefix + "RELIABILITY_WORKER_POLL_INTERVAL": "20ms",
	})
	env := maps.Clone(a.Env)
	env[app.EnvPrefix+"HTTP_ADDR"], env[app.EnvPrefix+"GRPC_ADDR"] = "127.0.0.1:0", "127.0.0.1:0"
	env[app.EnvPrefix+"RELIABILITY_WORKER"] = "false"
	b := &stack{Service: servicetest.Start(t, env, app.Boot), t: t}
	o := a.runsOwner("Shutdown")
	_, target := a.reliabilityTarget(o, srv.URL, "mcp")
	run := a.rrScan(o, map[string]any{"target_id": target})
	id := run["id"].(string)
	eventually(t, "the run to start", func() bool { return b.rrRun(o, id)["state"] == "running" && srv.InFlight() > 0 })
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(`SELECT count(*) FROM reliability_runs WHERE id = $1 AND state = 'running' AND lease_until <= now()`, id); n != 1 {
		t.Fatalf("the stopped replica's run: %v", b.rrRun(o, id))
	}
	if n := b.rrWork(1); n != 1 {
		t.Fatalf("the other replica took %d runs, want 1", n)
	}
	if got := b.rrRun(o, id); got["state"] != "succeeded" || got["attempts"] != float64(2) {
		t.Errorf("run after the takeover %v", got)
	}
}
