package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/workspace"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// wsFixture is a database with one organization and a repository whose target has a schedule, a
// policy and a run with an approval, a baseline and evidence.
type wsFixture struct {
	t          *testing.T
	pool       *pgxpool.Pool
	ws         *store.ReliabilityWorkspace
	org, repo  uuid.UUID
	installRow uuid.UUID
}

func newWSFixture(t *testing.T) *wsFixture {
	t.Helper()
	pool := pgtest.NewPool(t, outbox.Migrations(), store.Migrations())
	f := &wsFixture{t: t, pool: pool, ws: store.NewReliabilityWorkspace(pool), org: uuid.New(), repo: uuid.New(), installRow: uuid.New()}
	tgt, run := uuid.New(), uuid.New()
	now := time.Now()
	f.exec(`INSERT INTO organizations (id, name) VALUES ($1, 'acme')`, f.org)
	f.exec(`INSERT INTO reliability_installations (id, organization_id, installation_id, account_login, created_at, updated_at)
VALUES ($1, $2, 77, 'acme', $3, $3)`, f.installRow, f.org, now)
	f.exec(`INSERT INTO reliability_repositories (id, organization_id, full_name, provider, installation_id, created_at, updated_at)
VALUES ($1, $2, 'acme/agents', 'code-host', $3, $4, $4)`, f.repo, f.org, f.installRow, now)
	f.exec(`INSERT INTO reliability_targets (id, organization_id, repository_id, name, url, evaluators, created_at, updated_at)
VALUES ($1, $2, $3, 'prod', 'https://93.184.216.34/mcp', '{mcp}', $4, $4)`, tgt, f.org, f.repo, now)
	f.exec(`INSERT INTO reliability_schedules (target_id, organization_id, interval_seconds, enabled, next_due_at, updated_at)
VALUES ($1, $2, 600, true, $3, $3)`, tgt, f.org, now)
	f.exec(`INSERT INTO reliability_deployment_policies (repository_id, organization_id, policy, revision, updated_by, updated_at)
VALUES ($1, $2, '{"rules":[],"default_action":"allow"}', 1, 'alice', $3)`, f.repo, f.org, now)
	f.exec(`INSERT INTO reliability_runs (id, organization_id, repository_id, target_id, state, trigger, created_at, updated_at)
VALUES ($1, $2, $3, $4, 'approved', 'ci', $5, $5)`, run, f.org, f.repo, tgt, now)
	f.exec(`INSERT INTO reliability_run_approvals (id, organization_id, run_id, approved_by, reason, created_at)
VALUES ($1, $2, $3, 'alice', 'ok', $4)`, uuid.New(), f.org, run, now)
	f.exec(`INSERT INTO reliability_baselines (id, organization_id, target_id, run_id, action, actor, created_at)
VALUES ($1, $2, $3, $4, 'promote', 'alice', $5)`, uuid.New(), f.org, tgt, run, now)
	f.exec(`INSERT INTO reliability_run_evidence (run_id, organization_id, document, sha256, created_at)
VALUES ($1, $2, '{}', 'x', $3)`, run, f.org, now)
	return f
}

func (f *wsFixture) exec(sql string, args ...any) {
	f.t.Helper()
	if _, err := f.pool.Exec(context.Background(), sql, args...); err != nil {
		f.t.Fatalf("%s: %v", sql, err)
	}
}

// rows counts the organization's rows of every agent-reliability table.
func (f *wsFixture) rows() int {
	f.t.Helper()
	var n int
	if err := f.pool.QueryRow(context.Background(), `SELECT
    (SELECT count(*) FROM reliability_installations WHERE organization_id = $1) +
    (SELECT count(*) FROM reliability_repositories WHERE organization_id = $1) +
    (SELECT count(*) FROM reliability_targets WHERE organization_id = $1) +
    (SELECT count(*) FROM reliability_schedules WHERE organization_id = $1) +
    (SELECT count(*) FROM reliability_deployment_policies WHERE organization_id = $1) +
    (SELECT count(*) FROM reliability_runs WHERE organization_id = $1) +
    (SELECT count(*) FROM reliability_run_approvals WHERE organization_id = $1) +
    (SELECT count(*) FROM reliability_baselines WHERE organization_id = $1) +
    (SELECT count(*) FROM reliability_run_evidence WHERE organization_id = $1)`, f.org).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// failDeletesOf makes every DELETE of table fail, as a failure in the middle of a purge would.
func (f *wsFixture) failDeletesOf(table string) (undo func()) {
	f.exec(`CREATE FUNCTION ws_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused by the test'; END; $$`)
	f.exec(`CREATE TRIGGER ws_test_refuse BEFORE DELETE ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION ws_test_refuse()`)
	return func() {
		f.exec(`DROP TRIGGER ws_test_refuse ON ` + table)
		f.exec(`DROP FUNCTION ws_test_refuse()`)
	}
}

// A repository's deletion is one transaction: a failure on its last cascade leaves every row,
// and the purge setting does not outlive it.
func TestReliabilityWorkspaceDeleteRepositoryIsAtomic(t *testing.T) {
	t.Parallel()
	f := newWSFixture(t)
	ctx := context.Background()
	if before := f.rows(); before != 9 {
		t.Fatalf("fixture: got %d rows, want 9", before)
	}
	undo := f.failDeletesOf("reliability_run_evidence")
	if err := f.ws.DeleteRepository(ctx, f.org, f.repo); err == nil {
		t.Fatal("deletion with a failing cascade: got no error")
	}
	if got := f.rows(); got != 9 {
		t.Errorf("after a failed deletion: got %d rows, want all 9", got)
	}
	for range 4 { // every connection of the pool: none kept reliability.purge on
		if _, err := f.pool.Exec(ctx, `DELETE FROM reliability_run_approvals WHERE organization_id = $1`, f.org); err == nil {
			t.Fatal("a plain DELETE of approvals succeeded after a purge; want it refused")
		}
	}
	undo()
	if err := f.ws.DeleteRepository(ctx, f.org, f.repo); err != nil {
		t.Fatal(err)
	}
	if got := f.rows(); got != 1 { // the installation stays
		t.Errorf("after the deletion: got %d rows, want only the installation", got)
	}
}

// The workspace's deletion is one transaction too: a failure on its last table leaves every row.
func TestReliabilityWorkspaceDeleteWorkspaceIsAtomic(t *testing.T) {
	t.Parallel()
	f := newWSFixture(t)
	ctx := context.Background()
	undo := f.failDeletesOf("reliability_installations")
	if _, err := f.ws.DeleteWorkspace(ctx, f.org); err == nil {
		t.Fatal("deletion with a failing table: got no error")
	}
	if got := f.rows(); got != 9 {
		t.Errorf("after a failed deletion: got %d rows, want all 9", got)
	}
	undo()
	c, err := f.ws.DeleteWorkspace(ctx, f.org)
	if err != nil {
		t.Fatal(err)
	}
	want := workspace.DeletionCounts{Repositories: 1, Targets: 1, Schedules: 1, DeploymentPolicies: 1, Runs: 1, RunApprovals: 1, Baselines: 1, RunEvidence: 1, Installations: 1}
	if c != want || f.rows() != 0 {
		t.Errorf("deletion: got %+v and %d rows left, want %+v and none", c, f.rows(), want)
	}
}
