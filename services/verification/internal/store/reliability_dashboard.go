package store

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/billing"
)

// The dashboard's reads, straight from the agent reliability tables; each list is bounded and
// fetched one row past its bound, to know that there is more.
const (
	dashboardRepositoriesSQL = `SELECT id, full_name, provider, default_branch, description
FROM reliability_repositories WHERE organization_id = $1 ORDER BY full_name, id LIMIT $2`

	// The latest run of each target (reliability_runs_target) and its current baseline, the
	// newest promotion or rollback (reliability_baselines_target).
	dashboardTargetsSQL = `SELECT t.id, t.repository_id, t.name, t.url, t.evaluators,
  r.id, r.state, coalesce(r.decision, ''), r.trigger, r.created_at, r.finished_at,
  b.run_id, b.action, b.actor, b.created_at
FROM reliability_targets t
LEFT JOIN LATERAL (SELECT id, state, decision, trigger, created_at, finished_at FROM reliability_runs
  WHERE target_id = t.id ORDER BY created_at DESC, id DESC LIMIT 1) r ON true
LEFT JOIN LATERAL (SELECT run_id, action, actor, created_at FROM reliability_baselines
  WHERE target_id = t.id ORDER BY created_at DESC, id DESC LIMIT 1) b ON true
WHERE t.organization_id = $1 AND t.repository_id = ANY($2)
ORDER BY t.name, t.id LIMIT $3`

	// Held runs, newest first, with the messages of the policy's reasons (decision_reasons is a
	// JSON array of objects with a message).
	dashboardHeldSQL = `SELECT r.id, r.state, coalesce(r.decision, ''), r.trigger, r.created_at, r.finished_at,
  p.full_name, t.name,
  ARRAY(SELECT coalesce(x->>'message', '') FROM jsonb_array_elements(
    CASE WHEN jsonb_typeof(r.decision_reasons) = 'array' THEN r.decision_reasons ELSE '[]'::jsonb END) x LIMIT 10)
FROM reliability_runs r
JOIN reliability_targets t ON t.id = r.target_id
JOIN reliability_repositories p ON p.id = r.repository_id
WHERE r.organization_id = $1 AND r.state = 'needs_approval'
ORDER BY r.created_at DESC, r.id DESC LIMIT $2`
)

// Dashboard reads the workspace's repositories with their targets, latest runs and baselines, and
// its held runs.
func (s *ReliabilityBilling) Dashboard(ctx context.Context, org uuid.UUID, limits billing.DashboardLimits) (billing.Dashboard, error) {
	var d billing.Dashboard
	rows, err := s.pool.Query(ctx, dashboardRepositoriesSQL, org, limits.Repositories+1)
	if err != nil {
		return d, err
	}
	index := map[uuid.UUID]int{}
	var ids []uuid.UUID
	for rows.Next() {
		var r billing.DashboardRepository
		if err := rows.Scan(&r.ID, &r.FullName, &r.Provider, &r.DefaultBranch, &r.Description); err != nil {
			rows.Close()
			return d, err
		}
		if len(d.Repositories) == limits.Repositories {
			d.MoreRepositories = true
			continue
		}
		index[r.ID] = len(d.Repositories)
		ids = append(ids, r.ID)
		d.Repositories = append(d.Repositories, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return d, err
	}

	if len(ids) > 0 {
		rows, err = s.pool.Query(ctx, dashboardTargetsSQL, org, ids, limits.Targets+1)
		if err != nil {
			return d, err
		}
		n := 0
		for rows.Next() {
			var (
				t                     billing.DashboardTarget
				repoID                uuid.UUID
				runID, baseRunID      *uuid.UUID
				state, decision, trig *string
				action, actor         *string
				runCreated, runFinish *time.Time
				baseCreated           *time.Time
			)
			if err := rows.Scan(&t.ID, &repoID, &t.Name, &t.URL, &t.Evaluators,
				&runID, &state, &decision, &trig, &runCreated, &runFinish,
				&baseRunID, &action, &actor, &baseCreated); err != nil {
				rows.Close()
				return d, err
			}
			if n == limits.Targets {
				d.MoreTargets = true
				continue
			}
			n++
			if runID != nil && runCreated != nil {
				t.Latest = &billing.RunBrief{ID: *runID, State: orEmpty(state), Decision: orEmpty(decision), Trigger: orEmpty(trig),
					CreatedAt: *runCreated, FinishedAt: runFinish}
			}
			if baseRunID != nil && baseCreated != nil {
				t.Baseline = &billing.BaselineBrief{RunID: *baseRunID, Action: orEmpty(action), Actor: orEmpty(actor), CreatedAt: *baseCreated}
			}
			i := index[repoID]
			d.Repositories[i].Targets = append(d.Repositories[i].Targets, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return d, err
		}
	}

	rows, err = s.pool.Query(ctx, dashboardHeldSQL, org, limits.HeldRuns+1)
	if err != nil {
		return d, err
	}
	defer rows.Close()
	for rows.Next() {
		var h billing.HeldRun
		if err := rows.Scan(&h.Run.ID, &h.Run.State, &h.Run.Decision, &h.Run.Trigger, &h.Run.CreatedAt, &h.Run.FinishedAt,
			&h.Repository, &h.Target, &h.Reasons); err != nil {
			return d, err
		}
		if len(d.HeldRuns) == limits.HeldRuns {
			d.MoreHeldRuns = true
			continue
		}
		d.HeldRuns = append(d.HeldRuns, h)
	}
	return d, rows.Err()
}

// orEmpty is *s, or "" for nil.
func orEmpty(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
