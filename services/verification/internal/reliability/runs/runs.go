// Package runs is the use case of agent reliability's runs: scans queue runs, workers audit a
// run's target through the audit use case and decide it with the repository's deployment policy
// against the target's baseline, people approve held runs and promote or roll back baselines,
// schedules enqueue runs when due, and every finished run keeps its evidence.
package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/gate"
)

// Triggers of a run.
const (
	TriggerManual   = "manual"
	TriggerCI       = "ci"
	TriggerSchedule = "schedule"
)

// Failure codes of a failed run (failure_code): stable, documented, never an internal error's text.
const (
	FailureTargetRefused     = "target_refused"
	FailureDependency        = "service_dependency_unavailable"
	FailureAuditFailed       = "service_audit_failed"
	FailureAttemptsExhausted = "attempts_exhausted"
)

// Errors of the use case, mapped by internal/api in one place.
var (
	// ErrNotAwaitingApproval: only a run in needs_approval can be approved.
	ErrNotAwaitingApproval = errors.New("the run is not awaiting approval")
	// ErrRunNotPromotable: only a succeeded or approved run can be a baseline.
	ErrRunNotPromotable = errors.New("the run cannot be a baseline")
	// ErrNoPreviousBaseline: a rollback needs a baseline before the current one.
	ErrNoPreviousBaseline = errors.New("no previous baseline")
	// ErrNoBaseline: a diff against the baseline of a target that has none.
	ErrNoBaseline = errors.New("the target has no baseline")
	// ErrRunNotFinished: a diff, evaluation or evidence of a run without its result.
	ErrRunNotFinished = errors.New("the run has not finished")
	// ErrDifferentTargets: a diff of runs of two targets.
	ErrDifferentTargets = errors.New("the runs are of different targets")
	// ErrNoPromotableRun: the target has no succeeded or approved run to promote.
	ErrNoPromotableRun = errors.New("the target has no run to promote")
	// ErrRunNotFound: a run named in a request body does not exist (or is another workspace's).
	ErrRunNotFound = fmt.Errorf("run %w", fault.ErrNotFound)
	// ErrLeaseLost: the worker's lease on a run passed and another worker took it.
	ErrLeaseLost = errors.New("lease lost")
)

// QuotaError is a scan past the plan's scans per month.
type QuotaError struct {
	Plan  string
	Limit int
}

func (e *QuotaError) Error() string { return "plan limit reached: " + e.Plan }

// Target is a repository's target as a run needs it.
type Target struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	RepositoryID   uuid.UUID
	Name           string
	URL            string
	Evaluators     []string
}

// Approval is a person's approval of a held run.
type Approval struct {
	ApprovedBy string
	Reason     string
	CreatedAt  time.Time
}

// Run is one scan of a target.
type Run struct {
	ID                 uuid.UUID
	OrganizationID     uuid.UUID
	RepositoryID       uuid.UUID
	TargetID           uuid.UUID
	State              reliability.State
	Trigger            string
	ScheduledFor       *time.Time
	CommitSHA          string
	Ref                string
	RequestedBy        string
	FailureCode        string
	FailureMessage     string
	ConformanceAuditID *uuid.UUID
	ReadinessAuditID   *uuid.UUID
	Summary            *gate.Summary
	BaselineRunID      *uuid.UUID
	Changes            []reliability.Change
	Decision           reliability.Decision
	Reasons            []gate.Reason
	Attempts           int
	CreatedAt          time.Time
	StartedAt          *time.Time
	FinishedAt         *time.Time
	UpdatedAt          time.Time
	EvidenceSHA256     string
	Approval           *Approval
}

// Baseline is one entry of a target's baseline history.
type Baseline struct {
	ID                 uuid.UUID
	OrganizationID     uuid.UUID
	RepositoryID       uuid.UUID
	TargetID           uuid.UUID
	RunID              uuid.UUID
	Action             string
	PreviousBaselineID *uuid.UUID
	Actor              string
	Reason             string
	CreatedAt          time.Time
}

// Baseline actions.
const (
	ActionPromote  = "promote"
	ActionRollback = "rollback"
)

// Filter narrows a run list.
type Filter struct {
	TargetID     *uuid.UUID
	RepositoryID *uuid.UUID
	State        string
}

// Claimed is a run a worker leased, with its target.
type Claimed struct {
	Run    Run
	Target Target
	// Exhausted: the run had its last attempt; the worker fails it (attempts_exhausted).
	Exhausted bool
}

// Finish is a worker's result for a run it holds.
type Finish struct {
	RunID              uuid.UUID
	State              reliability.State
	FailureCode        string
	FailureMessage     string
	ConformanceAuditID *uuid.UUID
	ReadinessAuditID   *uuid.UUID
	Summary            *gate.Summary
	BaselineRunID      *uuid.UUID
	Changes            []reliability.Change
	Decision           reliability.Decision
	Reasons            []gate.Reason
	FinishedAt         time.Time
	Evidence           Evidence
}

// Evidence is a finished run's evidence document (JSON) and its SHA-256.
type Evidence struct {
	RunID     uuid.UUID
	Document  []byte
	SHA256    string
	CreatedAt time.Time
}

// StoredPolicy is a repository's deployment policy; Source is "repository" or "default".
type StoredPolicy struct {
	Policy   reliability.Policy
	Source   string
	Revision int
}

// Schedule is a target's schedule as enqueue-due reads it.
type Schedule struct {
	TargetID        uuid.UUID
	RepositoryID    uuid.UUID
	OrganizationID  uuid.UUID
	IntervalSeconds int
	Cron            string
	Timezone        string
	NextDueAt       time.Time
}

// Enqueued counts what one enqueue-due call did.
type Enqueued struct {
	Due, Enqueued, Skipped, OverLimit int
}

// Overview is a workspace at a glance.
type Overview struct {
	Repositories   int
	Targets        int
	Runs           map[reliability.State]int
	ScansThisMonth int
	Plan           string
	Latest         []Run
	Held           []Run
}

// Store keeps runs, baselines, approvals and evidence (internal/store implements it). Lookups of
// another organization's rows answer fault.ErrNotFound.
type Store interface {
	// Target reads a target of org.
	Target(ctx context.Context, org, id uuid.UUID) (Target, error)
	// InsertScan queues r unless a run of its target is queued or running, in which case it
	// returns that run and false. A run past the plan's scans this month is a *QuotaError;
	// quota gives a plan's limit (0: none). monthStart is the current month's first instant.
	InsertScan(ctx context.Context, r Run, monthStart time.Time, quota func(plan string) int) (Run, bool, error)
	ListRuns(ctx context.Context, org uuid.UUID, f Filter, limit int) ([]Run, error)
	GetRun(ctx context.Context, org, id uuid.UUID) (Run, error)
	// ClaimRuns leases up to n runs that are queued, or running with a passed lease, to owner until
	// now+lease, counting an attempt; a run already at maxAttempts is failed instead.
	ClaimRuns(ctx context.Context, owner string, now time.Time, lease time.Duration, n, maxAttempts int) ([]Claimed, error)
	// ReleaseRun ends owner's lease on a running run now, so that another worker takes it at once.
	ReleaseRun(ctx context.Context, owner string, id uuid.UUID, now time.Time) error
	// FinishRun records f if owner still holds the run (ErrLeaseLost otherwise), with its evidence.
	FinishRun(ctx context.Context, owner string, f Finish) error
	// CurrentBaseline returns the target's current baseline entry and its run; ErrNoBaseline when none.
	CurrentBaseline(ctx context.Context, targetID uuid.UUID) (Baseline, Run, error)
	Policy(ctx context.Context, repositoryID uuid.UUID) (StoredPolicy, error)
	// Promote appends a promotion of run to its target's history.
	Promote(ctx context.Context, run Run, actor, reason string, now time.Time) (Baseline, error)
	// LatestPromotable returns the target's newest succeeded or approved run.
	LatestPromotable(ctx context.Context, org, targetID uuid.UUID) (Run, error)
	// Rollback appends a return to the baseline before the target's current one.
	Rollback(ctx context.Context, t Target, actor, reason string, now time.Time) (Baseline, error)
	// Approve moves a needs_approval run to approved and appends the approval.
	Approve(ctx context.Context, org, id uuid.UUID, a Approval) (Run, error)
	// EnqueueDue queues a run of each due enabled schedule of org (at most limit), advancing each
	// schedule's next due time with next.
	EnqueueDue(ctx context.Context, org uuid.UUID, now time.Time, limit int, monthStart time.Time, quota func(plan string) int,
		next func(Schedule, time.Time) (time.Time, error)) (Enqueued, error)
	Evidence(ctx context.Context, org, runID uuid.UUID) (Evidence, error)
	Overview(ctx context.Context, org uuid.UUID, monthStart time.Time) (Overview, error)
}

// Auditor runs one audit of a target through the audit use case (app's adapter over audits.Service).
type Auditor interface {
	Run(ctx context.Context, kind string, t audit.Target, h audits.Holder) (audits.Record, error)
}

type surfaceTool = surface.Tool
