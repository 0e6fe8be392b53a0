package app_test

import (
	"context"
	"net/http"
	"os"
	"testing"
)

// BenchmarkReliabilityDashboard measures GET /dashboard and GET /billing over HTTP for a workspace at
// the page's bounds: 20 repositories, 500 targets, 50 runs each (25,000 runs, this month), 100 held.
// BILLING_BENCH_EXPLAIN, when set, is a query (with $1 the organization) whose EXPLAIN ANALYZE it logs
// against that data. Measured on the 2-core development machine: about 73 ms per dashboard (the
// targets' latest runs and baselines take 2.8 ms; counting this month's 25,000 runs 19 ms) and 30 ms
// per billing status.
func BenchmarkReliabilityDashboard(b *testing.B) {
	s := startService(b)
	org, key := s.newKey("dashboard-bench")
	ctx := context.Background()
	for _, sql := range []string{
		`INSERT INTO reliability_repositories (id, organization_id, full_name, provider, created_at, updated_at)
		 SELECT gen_random_uuid(), $1, 'acme/agents-' || g, 'manual', now(), now() FROM generate_series(1, 20) g`,
		`INSERT INTO reliability_targets (id, organization_id, repository_id, name, url, evaluators, created_at, updated_at)
		 SELECT gen_random_uuid(), $1, r.id, 'target-' || g, 'https://mcp.acme.example/' || g, ARRAY['mcp'], now(), now()
		 FROM reliability_repositories r, generate_series(1, 25) g WHERE r.organization_id = $1`,
		`INSERT INTO reliability_runs (id, organization_id, repository_id, target_id, state, trigger, decision, decision_reasons, created_at, updated_at)
		 SELECT gen_random_uuid(), $1, t.repository_id, t.id, 'succeeded', 'ci', 'allow', '[]', date_trunc('month', now()) + g * interval '1 second', now()
		 FROM reliability_targets t, generate_series(1, 50) g WHERE t.organization_id = $1`,
		`UPDATE reliability_runs SET state = 'needs_approval', decision = 'needs_approval',
		 decision_reasons = '[{"action":"needs_approval","message":"tool_added: x"}]'
		 WHERE id IN (SELECT id FROM reliability_runs WHERE organization_id = $1 LIMIT 100)`,
	} {
		if _, err := s.Pool.Exec(ctx, sql, org); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	if _, err := s.Pool.Exec(ctx, `ANALYZE`); err != nil {
		b.Fatal(err)
	}
	if explain := os.Getenv("BILLING_BENCH_EXPLAIN"); explain != "" {
		rows, err := s.Pool.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+explain, org)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var line string
			_ = rows.Scan(&line)
			b.Log(line)
		}
		rows.Close()
	}
	for _, path := range []string{"/v1/agent-reliability/dashboard", "/v1/agent-reliability/billing"} {
		b.Run(path[len("/v1/agent-reliability/"):], func(b *testing.B) {
			for b.Loop() {
				if r := s.Do("GET", path, nil, bearer(key)); r.Status != http.StatusOK {
					b.Fatalf("GET %s: %d", path, r.Status)
				}
			}
		})
	}
}
