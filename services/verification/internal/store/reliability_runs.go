package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/gate"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/runs"
)

// ReliabilityRuns implements runs.Store over the tables of migration 00010.
type ReliabilityRuns struct {
	pool *pgxpool.Pool
}

var _ runs.Store = (*ReliabilityRuns)(nil)

// NewReliabilityRuns returns the store over pool.
func NewReliabilityRuns(pool *pgxpool.Pool) *ReliabilityRuns { return &ReliabilityRuns{pool: pool} }

// runColumns are a run's columns (alias r) with its evidence hash and its approval.
const runColumns = `r.id, r.organization_id, r.repository_id, r.target_id, r.state, r.trigger, r.scheduled_for,
coalesce(r.commit_sha, ''), coalesce(r.ref, ''), r.requested_by, coalesce(r.failure_code, ''), coalesce(r.failure_message, ''),
r.conformance_audit_id, r.readiness_audit_id, r.summary, r.baseline_run_id, r.diff, coalesce(r.decision, ''), r.decision_reasons,
r.attempts, r.created_at, r.started_at, r.finished_at, r.updated_at, coalesce(e.sha256, ''), a.approved_by, a.reason, a.created_at`

const runFrom = ` FROM reliability_runs r
LEFT JOIN reliability_run_evidence e ON e.run_id = r.id
LEFT JOIN LATERAL (SELECT approved_by, reason, created_at FROM reliability_run_approvals
    WHERE run_id = r.id ORDER BY created_at DESC LIMIT 1) a ON true `

func scanRun(row pgx.Row, extra ...any) (runs.Run, error) {
	var r runs.Run
	var state, decision string
	var summary, diff, reasons []byte
	var approvedBy, approvalReason *string
	var approvedAt *time.Time
	dest := append([]any{&r.ID, &r.OrganizationID, &r.RepositoryID, &r.TargetID, &state, &r.Trigger, &r.ScheduledFor,
		&r.CommitSHA, &r.Ref, &r.RequestedBy, &r.FailureCode, &r.FailureMessage,
		&r.ConformanceAuditID, &r.ReadinessAuditID, &summary, &r.BaselineRunID, &diff, &decision, &reasons,
		&r.Attempts, &r.CreatedAt, &r.StartedAt, &r.FinishedAt, &r.UpdatedAt, &r.EvidenceSHA256, &approvedBy, &approvalReason, &approvedAt}, extra...)
	if err := row.Scan(dest...); err != nil {
		return runs.Run{}, err
	}
	r.State, r.Decision = reliability.State(state), reliability.Decision(decision)
	if summary != nil {
		var s gate.Summary
		if err := json.Unmarshal(summary, &s); err != nil {
			return runs.Run{}, err
		}
		r.Summary = &s
	}
	if diff != nil {
		if err := json.Unmarshal(diff, &r.Changes); err != nil {
			return runs.Run{}, err
		}
	}
	if reasons != nil {
		if err := json.Unmarshal(reasons, &r.Reasons); err != nil {
			return runs.Run{}, err
		}
	}
	if approvedBy != nil {
		r.Approval = &runs.Approval{ApprovedBy: *approvedBy, Reason: *approvalReason, CreatedAt: *approvedAt}
	}
	return r, nil
}

func collectRuns(rows pgx.Rows) ([]runs.Run, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (runs.Run, error) { return scanRun(r) })
}

// jsonb marshals v for a jsonb column: PostgreSQL refuses the NUL character in jsonb text, which
// a hostile target's tool description may carry, so it becomes U+FFFD.
func jsonb(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.ReplaceAll(b, []byte(`\u0000`), []byte(`\ufffd`)), nil
}

// Target reads a target of org.
func (s *ReliabilityRuns) Target(ctx context.Context, org, id uuid.UUID) (runs.Target, error) {
	var t runs.Target
	err := s.pool.QueryRow(ctx, `SELECT id, organization_id, repository_id, name, url, evaluators
		FROM reliability_targets WHERE id = $1 AND organization_id = $2`, id, org).
		Scan(&t.ID, &t.OrganizationID, &t.RepositoryID, &t.Name, &t.URL, &t.Evaluators)
	return t, noRows(err, fault.ErrNotFound)
}

// lockWorkspaceScans serializes, per workspace, what queues runs (scans and enqueue-due), so that
// the count of this month's runs and the one-in-flight check hold until the insert commits.
const lockWorkspaceScans = `SELECT pg_advisory_xact_lock(hashtextextended('reliability.scans:' || $1::text, 0))`

const workspacePlan = `SELECT coalesce((SELECT plan FROM reliability_workspaces WHERE organization_id = $1), 'free')`

const runsSince = `SELECT count(*) FROM reliability_runs WHERE organization_id = $1 AND created_at >= $2`

const inFlightRun = `SELECT ` + runColumns + runFrom + `WHERE r.target_id = $1 AND r.state IN ('queued', 'running')`

const insertRun = `INSERT INTO reliability_runs (id, organization_id, repository_id, target_id, state, trigger, scheduled_for,
    commit_sha, ref, requested_by, created_at, updated_at)
VALUES ($1, $2, $3, $4, 'queued', $5, $6, nullif($7, ''), nullif($8, ''), $9, $10, $10)
ON CONFLICT DO NOTHING`

// quotaLeft returns how many more runs org may queue this month (-1: no limit) and its plan.
func quotaLeft(ctx context.Context, tx pgx.Tx, org uuid.UUID, monthStart time.Time, quota func(string) int) (int, string, error) {
	var plan string
	if err := tx.QueryRow(ctx, workspacePlan, org).Scan(&plan); err != nil {
		return 0, "", err
	}
	limit := quota(plan)
	if limit == 0 {
		return -1, plan, nil
	}
	var n int
	if err := tx.QueryRow(ctx, runsSince, org, monthStart).Scan(&n); err != nil {
		return 0, "", err
	}
	return max(limit-n, 0), plan, nil
}

// InsertScan queues r, unless a run of its target is in flight (returned with false).
func (s *ReliabilityRuns) InsertScan(ctx context.Context, r runs.Run, monthStart time.Time, quota func(string) int) (runs.Run, bool, error) {
	var out runs.Run
	var created bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, lockWorkspaceScans, r.OrganizationID); err != nil {
			return err
		}
		existing, err := scanRun(tx.QueryRow(ctx, inFlightRun, r.TargetID))
		if err == nil {
			out, created = existing, false
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		left, plan, err := quotaLeft(ctx, tx, r.OrganizationID, monthStart, quota)
		if err != nil {
			return err
		}
		if left == 0 {
			return &runs.QuotaError{Plan: plan, Limit: quota(plan)}
		}
		tag, err := tx.Exec(ctx, insertRun, r.ID, r.OrganizationID, r.RepositoryID, r.TargetID, r.Trigger, r.ScheduledFor,
			r.CommitSHA, r.Ref, r.RequestedBy, r.CreatedAt)
		if err != nil {
			return err
		}
		id := r.ID
		if tag.RowsAffected() == 0 {
			// Only a run queued outside this lock (none today) could conflict: answer it.
			if out, err = scanRun(tx.QueryRow(ctx, inFlightRun, r.TargetID)); err != nil {
				return err
			}
			return nil
		}
		created = true
		out, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+runFrom+`WHERE r.id = $1`, id))
		return err
	})
	return out, created, err
}

// ListRuns lists org's runs newest first (index reliability_runs_list).
func (s *ReliabilityRuns) ListRuns(ctx context.Context, org uuid.UUID, f runs.Filter, limit int) ([]runs.Run, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+runColumns+runFrom+`
		WHERE r.organization_id = $1 AND ($2::uuid IS NULL OR r.target_id = $2) AND ($3::uuid IS NULL OR r.repository_id = $3)
		  AND ($4 = '' OR r.state = $4)
		ORDER BY r.created_at DESC, r.id DESC LIMIT $5`, org, f.TargetID, f.RepositoryID, f.State, limit)
	if err != nil {
		return nil, err
	}
	return collectRuns(rows)
}

// GetRun reads a run of org.
func (s *ReliabilityRuns) GetRun(ctx context.Context, org, id uuid.UUID) (runs.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+runFrom+`WHERE r.id = $1 AND r.organization_id = $2`, id, org))
	return r, noRows(err, fault.ErrNotFound)
}

// claimRuns leases the oldest claimable runs: queued, or running with a passed lease (index
// reliability_runs_claimable), skipping rows another worker's claim holds. A run at its last
// attempt is leased without counting one, for the worker to fail it.
const claimRuns = `WITH picked AS (
    SELECT id, attempts FROM reliability_runs
    WHERE state = 'queued' OR (state = 'running' AND lease_until < $1)
    ORDER BY created_at LIMIT $2
    FOR UPDATE SKIP LOCKED)
UPDATE reliability_runs r SET state = 'running',
    attempts = CASE WHEN r.attempts < $5 THEN r.attempts + 1 ELSE r.attempts END,
    lease_owner = $3, lease_until = $4, started_at = coalesce(r.started_at, $1), updated_at = $1
FROM picked WHERE r.id = picked.id
RETURNING r.id, picked.attempts >= $5`

// ClaimRuns leases up to n claimable runs to owner.
func (s *ReliabilityRuns) ClaimRuns(ctx context.Context, owner string, now time.Time, lease time.Duration, n, maxAttempts int) ([]runs.Claimed, error) {
	var out []runs.Claimed
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = nil
		rows, err := tx.Query(ctx, claimRuns, now, n, owner, now.Add(lease), maxAttempts)
		if err != nil {
			return err
		}
		exhausted := map[uuid.UUID]bool{}
		var ids []uuid.UUID
		var id uuid.UUID
		var last bool
		if _, err := pgx.ForEachRow(rows, []any{&id, &last}, func() error {
			ids, exhausted[id] = append(ids, id), last
			return nil
		}); err != nil || len(ids) == 0 {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT `+runColumns+`, t.name, t.url, t.evaluators`+runFrom+`
			JOIN reliability_targets t ON t.id = r.target_id WHERE r.id = ANY ($1::uuid[]) ORDER BY r.created_at`, ids)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (runs.Claimed, error) {
			var t runs.Target
			r, err := scanRun(row, &t.Name, &t.URL, &t.Evaluators)
			t.ID, t.OrganizationID, t.RepositoryID = r.TargetID, r.OrganizationID, r.RepositoryID
			return runs.Claimed{Run: r, Target: t, Exhausted: exhausted[r.ID]}, err
		})
		return err
	})
	return out, err
}

// ReleaseRun ends owner's lease on a running run now (a stopping worker's): the run stays running,
// and the next claim takes it.
func (s *ReliabilityRuns) ReleaseRun(ctx context.Context, owner string, id uuid.UUID, now time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE reliability_runs SET lease_until = $3, updated_at = $3
		WHERE id = $1 AND state = 'running' AND lease_owner = $2`, id, owner, now.Add(-time.Microsecond))
	return err
}

const finishRun = `UPDATE reliability_runs SET state = $2, failure_code = nullif($3, ''), failure_message = nullif($4, ''),
    conformance_audit_id = $5, readiness_audit_id = $6, summary = $7, baseline_run_id = $8, diff = $9,
    decision = nullif($10, ''), decision_reasons = $11, finished_at = $12, updated_at = $12, lease_owner = NULL, lease_until = NULL
WHERE id = $1 AND state = 'running' AND lease_owner = $13
RETURNING organization_id`

// FinishRun records f and its evidence if owner still holds the run.
func (s *ReliabilityRuns) FinishRun(ctx context.Context, owner string, f runs.Finish) error {
	if !reliability.CanMove(reliability.Running, f.State) {
		return errors.New("store: a run cannot finish in state " + string(f.State))
	}
	var summary, diff, reasons []byte
	var err error
	if f.Summary != nil {
		if summary, err = jsonb(f.Summary); err != nil {
			return err
		}
	}
	if f.Changes != nil {
		if diff, err = jsonb(f.Changes); err != nil {
			return err
		}
	}
	if f.Reasons != nil {
		if reasons, err = jsonb(f.Reasons); err != nil {
			return err
		}
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var org uuid.UUID
		err := tx.QueryRow(ctx, finishRun, f.RunID, string(f.State), f.FailureCode, f.FailureMessage, f.ConformanceAuditID, f.ReadinessAuditID,
			summary, f.BaselineRunID, diff, string(f.Decision), reasons, f.FinishedAt, owner).Scan(&org)
		if errors.Is(err, pgx.ErrNoRows) {
			return runs.ErrLeaseLost
		}
		if err != nil || f.Evidence.Document == nil {
			return err
		}
		// The document carries no NUL (runs.Service.evidence replaced it before hashing): it is stored
		// byte for byte as hashed.
		_, err = tx.Exec(ctx, `INSERT INTO reliability_run_evidence (run_id, organization_id, document, sha256, created_at)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`, f.RunID, org, f.Evidence.Document, f.Evidence.SHA256, f.Evidence.CreatedAt)
		return err
	})
}

const baselineColumns = `b.id, b.organization_id, t.repository_id, b.target_id, b.run_id, b.action, b.previous_baseline_id, b.actor, b.reason, b.created_at`

func scanBaseline(row pgx.Row) (runs.Baseline, error) {
	var b runs.Baseline
	err := row.Scan(&b.ID, &b.OrganizationID, &b.RepositoryID, &b.TargetID, &b.RunID, &b.Action, &b.PreviousBaselineID, &b.Actor, &b.Reason, &b.CreatedAt)
	return b, err
}

// currentBaseline is a target's newest history entry (index reliability_baselines_target).
const currentBaseline = `SELECT ` + baselineColumns + ` FROM reliability_baselines b JOIN reliability_targets t ON t.id = b.target_id
WHERE b.target_id = $1 ORDER BY b.created_at DESC, b.id DESC LIMIT 1`

// CurrentBaseline returns the target's current baseline and its run.
func (s *ReliabilityRuns) CurrentBaseline(ctx context.Context, targetID uuid.UUID) (runs.Baseline, runs.Run, error) {
	b, err := scanBaseline(s.pool.QueryRow(ctx, currentBaseline, targetID))
	if errors.Is(err, pgx.ErrNoRows) {
		return runs.Baseline{}, runs.Run{}, runs.ErrNoBaseline
	}
	if err != nil {
		return runs.Baseline{}, runs.Run{}, err
	}
	r, err := s.GetRun(ctx, b.OrganizationID, b.RunID)
	return b, r, err
}

// Policy reads a repository's deployment policy, or the default.
func (s *ReliabilityRuns) Policy(ctx context.Context, repositoryID uuid.UUID) (runs.StoredPolicy, error) {
	var raw []byte
	var rev int
	err := s.pool.QueryRow(ctx, `SELECT policy, revision FROM reliability_deployment_policies WHERE repository_id = $1`, repositoryID).Scan(&raw, &rev)
	if errors.Is(err, pgx.ErrNoRows) {
		return runs.StoredPolicy{Policy: reliability.DefaultPolicy(), Source: "default"}, nil
	}
	if err != nil {
		return runs.StoredPolicy{}, err
	}
	var p reliability.Policy
	if err := json.Unmarshal(raw, &p); err != nil {
		return runs.StoredPolicy{}, err
	}
	return runs.StoredPolicy{Policy: p, Source: "repository", Revision: rev}, nil
}

// lockTarget serializes a target's baseline changes.
const lockTarget = `SELECT id FROM reliability_targets WHERE id = $1 FOR UPDATE`

const insertBaseline = `INSERT INTO reliability_baselines (id, organization_id, target_id, run_id, action, previous_baseline_id, actor, reason, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

// appendBaseline locks the target, reads its current entry, and appends the entry make returns.
func (s *ReliabilityRuns) appendBaseline(ctx context.Context, targetID uuid.UUID, now time.Time,
	make func(tx pgx.Tx, current *runs.Baseline) (runs.Baseline, error)) (runs.Baseline, error) {
	var out runs.Baseline
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var id uuid.UUID
		if err := tx.QueryRow(ctx, lockTarget, targetID).Scan(&id); err != nil {
			return noRows(err, fault.ErrNotFound)
		}
		var current *runs.Baseline
		cur, err := scanBaseline(tx.QueryRow(ctx, currentBaseline, targetID))
		switch {
		case err == nil:
			current = &cur
			// Entries order by time: a later entry never sorts before the current one.
			if !now.After(cur.CreatedAt) {
				now = cur.CreatedAt.Add(time.Microsecond)
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		b, err := make(tx, current)
		if err != nil {
			return err
		}
		b.ID, b.TargetID, b.CreatedAt = uuid.Must(uuid.NewV7()), targetID, now
		if _, err := tx.Exec(ctx, insertBaseline, b.ID, b.OrganizationID, b.TargetID, b.RunID, b.Action, b.PreviousBaselineID,
			b.Actor, b.Reason, b.CreatedAt); err != nil {
			return err
		}
		out = b
		return nil
	})
	return out, err
}

// Promote appends a promotion of run; the entry before it is the current one.
func (s *ReliabilityRuns) Promote(ctx context.Context, run runs.Run, actor, reason string, now time.Time) (runs.Baseline, error) {
	return s.appendBaseline(ctx, run.TargetID, now, func(_ pgx.Tx, current *runs.Baseline) (runs.Baseline, error) {
		b := runs.Baseline{OrganizationID: run.OrganizationID, RepositoryID: run.RepositoryID, RunID: run.ID,
			Action: runs.ActionPromote, Actor: actor, Reason: reason}
		if current != nil {
			b.PreviousBaselineID = &current.ID
		}
		return b, nil
	})
}

// Rollback appends a return to the entry before the current one, whose own previous entry the
// new one inherits (so that rolling back again goes one step further).
func (s *ReliabilityRuns) Rollback(ctx context.Context, t runs.Target, actor, reason string, now time.Time) (runs.Baseline, error) {
	return s.appendBaseline(ctx, t.ID, now, func(tx pgx.Tx, current *runs.Baseline) (runs.Baseline, error) {
		if current == nil || current.PreviousBaselineID == nil {
			return runs.Baseline{}, runs.ErrNoPreviousBaseline
		}
		prev, err := scanBaseline(tx.QueryRow(ctx, `SELECT `+baselineColumns+` FROM reliability_baselines b
			JOIN reliability_targets t ON t.id = b.target_id WHERE b.id = $1`, *current.PreviousBaselineID))
		if err != nil {
			return runs.Baseline{}, err
		}
		return runs.Baseline{OrganizationID: t.OrganizationID, RepositoryID: t.RepositoryID, RunID: prev.RunID,
			Action: runs.ActionRollback, PreviousBaselineID: prev.PreviousBaselineID, Actor: actor, Reason: reason}, nil
	})
}

// LatestPromotable returns the target's newest succeeded or approved run.
func (s *ReliabilityRuns) LatestPromotable(ctx context.Context, org, targetID uuid.UUID) (runs.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+runFrom+`
		WHERE r.target_id = $1 AND r.organization_id = $2 AND r.state IN ('succeeded', 'approved')
		ORDER BY r.created_at DESC, r.id DESC LIMIT 1`, targetID, org))
	return r, noRows(err, runs.ErrNoPromotableRun)
}

// Approve moves a needs_approval run to approved and appends the approval, in one transaction.
func (s *ReliabilityRuns) Approve(ctx context.Context, org, id uuid.UUID, a runs.Approval) (runs.Run, error) {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var state string
		err := tx.QueryRow(ctx, `SELECT state FROM reliability_runs WHERE id = $1 AND organization_id = $2 FOR UPDATE`, id, org).Scan(&state)
		if err != nil {
			return noRows(err, fault.ErrNotFound)
		}
		if !reliability.CanMove(reliability.State(state), reliability.Approved) {
			return &runs.StateError{Err: runs.ErrNotAwaitingApproval, State: reliability.State(state)}
		}
		if _, err := tx.Exec(ctx, `UPDATE reliability_runs SET state = 'approved', updated_at = $2 WHERE id = $1`, id, a.CreatedAt); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO reliability_run_approvals (id, organization_id, run_id, approved_by, reason, created_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, uuid.Must(uuid.NewV7()), org, id, a.ApprovedBy, a.Reason, a.CreatedAt)
		return err
	})
	if err != nil {
		return runs.Run{}, err
	}
	return s.GetRun(ctx, org, id)
}

// claimDueSchedules takes org's due enabled schedules, earliest first (index
// reliability_schedules_due), skipping those another caller's transaction holds, each with whether
// its target has a run in flight (one schedule per target, so the loop's inserts never change it).
const claimDueSchedules = `SELECT s.target_id, t.repository_id, s.organization_id, coalesce(s.interval_seconds, 0), coalesce(s.cron, ''),
    s.timezone, s.next_due_at,
    EXISTS (SELECT 1 FROM reliability_runs WHERE target_id = s.target_id AND state IN ('queued', 'running'))
FROM reliability_schedules s JOIN reliability_targets t ON t.id = s.target_id
WHERE s.enabled AND s.next_due_at <= $2 AND s.organization_id = $1
ORDER BY s.next_due_at LIMIT $3
FOR UPDATE OF s SKIP LOCKED`

// EnqueueDue queues one run per due schedule of org. A schedule whose target has a run in flight
// is skipped; each taken schedule's next due time moves past now either way, so a target that fell
// behind is scanned once, not once per missed due time.
func (s *ReliabilityRuns) EnqueueDue(ctx context.Context, org uuid.UUID, now time.Time, limit int, monthStart time.Time,
	quota func(string) int, next func(runs.Schedule, time.Time) (time.Time, error)) (runs.Enqueued, error) {
	var out runs.Enqueued
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = runs.Enqueued{}
		if _, err := tx.Exec(ctx, lockWorkspaceScans, org); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, claimDueSchedules, org, now, limit)
		if err != nil {
			return err
		}
		type dueSchedule struct {
			runs.Schedule
			inFlight bool
		}
		due, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dueSchedule, error) {
			var d dueSchedule
			sc := &d.Schedule
			err := r.Scan(&sc.TargetID, &sc.RepositoryID, &sc.OrganizationID, &sc.IntervalSeconds, &sc.Cron, &sc.Timezone, &sc.NextDueAt, &d.inFlight)
			return d, err
		})
		if err != nil || len(due) == 0 {
			return err
		}
		left, _, err := quotaLeft(ctx, tx, org, monthStart, quota)
		if err != nil {
			return err
		}
		for _, d := range due {
			sc := d.Schedule
			out.Due++
			switch {
			case d.inFlight:
				out.Skipped++
			case left == 0:
				out.OverLimit++
			default:
				due := sc.NextDueAt
				tag, err := tx.Exec(ctx, insertRun, uuid.Must(uuid.NewV7()), org, sc.RepositoryID, sc.TargetID, runs.TriggerSchedule, &due,
					"", "", "schedule", now)
				if err != nil {
					return err
				}
				if tag.RowsAffected() == 1 {
					out.Enqueued++
					if left > 0 {
						left--
					}
				} else {
					out.Skipped++
				}
			}
			var nextDue *time.Time
			if n, err := next(sc, now); err == nil {
				nextDue = &n
			}
			if _, err := tx.Exec(ctx, `UPDATE reliability_schedules SET next_due_at = $2, last_enqueued_at = $3 WHERE target_id = $1`,
				sc.TargetID, nextDue, now); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// Evidence reads a run's evidence.
func (s *ReliabilityRuns) Evidence(ctx context.Context, org, runID uuid.UUID) (runs.Evidence, error) {
	var e runs.Evidence
	err := s.pool.QueryRow(ctx, `SELECT run_id, document, sha256, created_at FROM reliability_run_evidence
		WHERE run_id = $1 AND organization_id = $2`, runID, org).Scan(&e.RunID, &e.Document, &e.SHA256, &e.CreatedAt)
	return e, noRows(err, fault.ErrNotFound)
}

// Overview counts org's workspace.
func (s *ReliabilityRuns) Overview(ctx context.Context, org uuid.UUID, monthStart time.Time) (runs.Overview, error) {
	o := runs.Overview{Runs: map[reliability.State]int{}}
	err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM reliability_repositories WHERE organization_id = $1),
		(SELECT count(*) FROM reliability_targets WHERE organization_id = $1),
		(SELECT count(*) FROM reliability_runs WHERE organization_id = $1 AND created_at >= $2),
		coalesce((SELECT plan FROM reliability_workspaces WHERE organization_id = $1), 'free')`, org, monthStart).
		Scan(&o.Repositories, &o.Targets, &o.ScansThisMonth, &o.Plan)
	if err != nil {
		return o, err
	}
	rows, err := s.pool.Query(ctx, `SELECT state, count(*) FROM reliability_runs WHERE organization_id = $1 GROUP BY state`, org)
	if err != nil {
		return o, err
	}
	var state string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error { o.Runs[reliability.State(state)] = n; return nil }); err != nil {
		return o, err
	}
	if rows, err = s.pool.Query(ctx, `SELECT `+runColumns+runFrom+`WHERE r.organization_id = $1 ORDER BY r.created_at DESC, r.id DESC LIMIT 10`, org); err != nil {
		return o, err
	}
	if o.Latest, err = collectRuns(rows); err != nil {
		return o, err
	}
	if rows, err = s.pool.Query(ctx, `SELECT `+runColumns+runFrom+`WHERE r.organization_id = $1 AND r.state = 'needs_approval'
		ORDER BY r.created_at, r.id LIMIT 50`, org); err != nil {
		return o, err
	}
	o.Held, err = collectRuns(rows)
	return o, err
}
