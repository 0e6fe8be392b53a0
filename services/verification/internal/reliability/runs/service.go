package runs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/gate"
)

// Bounds of the routes' inputs.
const (
	DefaultListLimit    = 50
	MaxListLimit        = 200
	DefaultEnqueueLimit = 25
	MaxEnqueueLimit     = 200
	maxShortText        = 200
	maxReason           = 2000
)

// Deps are what a Service needs.
type Deps struct {
	Store   Store
	Auditor Auditor
	// CheckTarget refuses a target URL the audit engine would refuse (a *safehttp.TargetError).
	CheckTarget func(ctx context.Context, rawURL string) error
	// NextDue is a schedule's next due time strictly after after (internal/reliability/schedule).
	NextDue func(s Schedule, after time.Time) (time.Time, error)
	// Issuer is the audit token issuer the run's audits are stored under (subject reliability:<org>).
	Issuer string
	// Version is the service version the evidence names.
	Version string
	Now     func() time.Time
}

// Service is the runs use case.
type Service struct {
	d Deps
}

// New returns the service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Service{d: d}
}

// Caller is who calls: the workspace (organization) and a default actor name (the API key's).
type Caller struct {
	OrganizationID uuid.UUID
	Actor          string
}

// ScanRequest is POST /scans' body.
type ScanRequest struct {
	TargetID    string
	CommitSHA   string
	Ref         string
	Trigger     string
	RequestedBy string
}

// quota is a plan's scans per month.
func quota(plan string) int { return reliability.PlanOf(plan).ScansPerMonth }

func (s *Service) monthStart() time.Time {
	from, _ := reliability.Month(s.d.Now())
	return from
}

func text(field, v string, max int, required bool, problems *[]fault.Problem) string {
	v = strings.TrimSpace(v)
	switch {
	case required && v == "":
		*problems = append(*problems, fault.Problem{Field: field, Message: "Field required", Type: "missing"})
	case utf8.RuneCountInString(v) > max || strings.ContainsRune(v, 0):
		*problems = append(*problems, fault.Problem{Field: field, Message: fmt.Sprintf("String should have at most %d characters", max), Type: "string_too_long"})
	}
	return v
}

func bodyID(field, raw string, required bool, problems *[]fault.Problem) *uuid.UUID {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		if required {
			*problems = append(*problems, fault.Problem{Field: field, Message: "Field required", Type: "missing"})
		}
		return nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		*problems = append(*problems, fault.Problem{Field: field, Message: "Input should be a valid UUID", Type: "uuid_parsing"})
		return nil
	}
	return &id
}

// Scan queues a run of a target, or returns the run of the target already queued or running.
func (s *Service) Scan(ctx context.Context, c Caller, req ScanRequest) (Run, error) {
	var problems []fault.Problem
	id := bodyID("target_id", req.TargetID, true, &problems)
	commit := text("commit_sha", req.CommitSHA, maxShortText, false, &problems)
	ref := text("ref", req.Ref, maxShortText, false, &problems)
	by := text("requested_by", req.RequestedBy, maxShortText, false, &problems)
	trigger := strings.TrimSpace(req.Trigger)
	if trigger == "" {
		trigger = TriggerManual
	}
	if trigger != TriggerManual && trigger != TriggerCI {
		problems = append(problems, fault.Problem{Field: "trigger", Message: "Input should be 'manual' or 'ci'", Type: "enum"})
	}
	if len(problems) > 0 {
		return Run{}, &fault.ValidationError{Problems: problems}
	}
	if by == "" {
		by = c.Actor
	}
	t, err := s.d.Store.Target(ctx, c.OrganizationID, *id)
	if err != nil {
		return Run{}, err
	}
	// The target passed this check when it was registered; its name may resolve elsewhere since.
	if err := s.d.CheckTarget(ctx, t.URL); err != nil {
		if te, ok := safehttp.AsTargetError(err); ok {
			return Run{}, fault.Invalid("target_id", te.Code, "The target's URL is refused: "+te.Message)
		}
		return Run{}, err
	}
	now := s.d.Now().UTC().Truncate(time.Microsecond)
	r := Run{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: c.OrganizationID, RepositoryID: t.RepositoryID, TargetID: t.ID,
		State: reliability.Queued, Trigger: trigger, CommitSHA: commit, Ref: ref, RequestedBy: by,
		CreatedAt: now, UpdatedAt: now,
	}
	run, _, err := s.d.Store.InsertScan(ctx, r, s.monthStart(), quota)
	return run, err
}

// ListRuns lists the caller's runs, newest first.
func (s *Service) ListRuns(ctx context.Context, c Caller, f Filter, limit int) ([]Run, error) {
	if f.State != "" && !ValidState(reliability.State(f.State)) {
		return nil, &fault.ValidationError{Problems: []fault.Problem{{Field: "state", Message: "Unknown run state", Type: "enum"}}}
	}
	return s.d.Store.ListRuns(ctx, c.OrganizationID, f, limit)
}

// ValidState reports whether st is a run state.
func ValidState(st reliability.State) bool {
	switch st {
	case reliability.Queued, reliability.Running, reliability.Succeeded, reliability.Failed,
		reliability.NeedsApproval, reliability.Approved, reliability.Blocked:
		return true
	}
	return false
}

// getRun reads a run named in a body: unknown is ErrRunNotFound, whatever the route addresses.
func (s *Service) getRun(ctx context.Context, c Caller, id uuid.UUID) (Run, error) {
	r, err := s.d.Store.GetRun(ctx, c.OrganizationID, id)
	if errors.Is(err, fault.ErrNotFound) {
		return Run{}, ErrRunNotFound
	}
	return r, err
}

// GetRun reads a run of the caller.
func (s *Service) GetRun(ctx context.Context, c Caller, id uuid.UUID) (Run, error) {
	return s.d.Store.GetRun(ctx, c.OrganizationID, id)
}

// DiffResult is a diff of two runs, and for an evaluation the policy's decision.
type DiffResult struct {
	RepositoryID uuid.UUID
	TargetID     uuid.UUID
	BaseRunID    *uuid.UUID
	HeadRunID    uuid.UUID
	Changes      []reliability.Change
	Evaluation   *gate.Evaluation
	Policy       *StoredPolicy
}

// DiffRequest names the runs of a diff: head, and base or (nil) the head's target's baseline.
type DiffRequest struct {
	BaseRunID string
	HeadRunID string
}

// Diff compares two finished runs of one target, or the head with its target's baseline.
func (s *Service) Diff(ctx context.Context, c Caller, req DiffRequest) (DiffResult, error) {
	var problems []fault.Problem
	head := bodyID("head_run_id", req.HeadRunID, true, &problems)
	base := bodyID("base_run_id", req.BaseRunID, false, &problems)
	if len(problems) > 0 {
		return DiffResult{}, &fault.ValidationError{Problems: problems}
	}
	h, err := s.getRun(ctx, c, *head)
	if err != nil {
		return DiffResult{}, err
	}
	if h.Summary == nil {
		return DiffResult{}, ErrRunNotFinished
	}
	var b Run
	if base != nil {
		if b, err = s.getRun(ctx, c, *base); err != nil {
			return DiffResult{}, err
		}
		if b.TargetID != h.TargetID {
			return DiffResult{}, ErrDifferentTargets
		}
	} else if _, b, err = s.d.Store.CurrentBaseline(ctx, h.TargetID); err != nil {
		return DiffResult{}, err
	}
	if b.Summary == nil {
		return DiffResult{}, ErrRunNotFinished
	}
	return DiffResult{RepositoryID: h.RepositoryID, TargetID: h.TargetID, BaseRunID: &b.ID, HeadRunID: h.ID,
		Changes: gate.Diff(*b.Summary, *h.Summary)}, nil
}

// Evaluate is Diff with the decision of the head's repository's deployment policy.
func (s *Service) Evaluate(ctx context.Context, c Caller, req DiffRequest) (DiffResult, error) {
	d, err := s.Diff(ctx, c, req)
	if err != nil {
		return DiffResult{}, err
	}
	p, err := s.d.Store.Policy(ctx, d.RepositoryID)
	if err != nil {
		return DiffResult{}, err
	}
	ev := gate.Evaluate(p.Policy, d.Changes)
	d.Evaluation, d.Policy = &ev, &p
	return d, nil
}

// BaselineRequest is the body of the baseline routes.
type BaselineRequest struct {
	RunID  string
	Actor  string
	Reason string
}

func (s *Service) actorReason(c Caller, req BaselineRequest) (string, string, []fault.Problem) {
	var problems []fault.Problem
	actor := text("actor", req.Actor, maxShortText, false, &problems)
	reason := text("reason", req.Reason, maxReason, false, &problems)
	if actor == "" {
		actor = c.Actor
	}
	return actor, reason, problems
}

// repositoryTarget reads a target of the caller's repository: another repository's reads as not found.
func (s *Service) repositoryTarget(ctx context.Context, c Caller, repositoryID, targetID uuid.UUID) (Target, error) {
	t, err := s.d.Store.Target(ctx, c.OrganizationID, targetID)
	if err != nil {
		return Target{}, err
	}
	if t.RepositoryID != repositoryID {
		return Target{}, fault.ErrNotFound
	}
	return t, nil
}

// PromoteTarget makes a run of the target (req.RunID, or its newest succeeded or approved run)
// its baseline.
func (s *Service) PromoteTarget(ctx context.Context, c Caller, repositoryID, targetID uuid.UUID, req BaselineRequest) (Baseline, error) {
	actor, reason, problems := s.actorReason(c, req)
	runID := bodyID("run_id", req.RunID, false, &problems)
	if len(problems) > 0 {
		return Baseline{}, &fault.ValidationError{Problems: problems}
	}
	_, err := s.repositoryTarget(ctx, c, repositoryID, targetID)
	if err != nil {
		return Baseline{}, err
	}
	var r Run
	if runID == nil {
		r, err = s.d.Store.LatestPromotable(ctx, c.OrganizationID, targetID)
	} else {
		r, err = s.getRun(ctx, c, *runID)
		if err == nil && r.TargetID != targetID {
			err = ErrDifferentTargets
		}
	}
	if err != nil {
		return Baseline{}, err
	}
	return s.promote(ctx, r, actor, reason)
}

// PromoteRun makes a run its target's baseline.
func (s *Service) PromoteRun(ctx context.Context, c Caller, runID uuid.UUID, req BaselineRequest) (Baseline, error) {
	actor, reason, problems := s.actorReason(c, req)
	if len(problems) > 0 {
		return Baseline{}, &fault.ValidationError{Problems: problems}
	}
	r, err := s.d.Store.GetRun(ctx, c.OrganizationID, runID)
	if err != nil {
		return Baseline{}, err
	}
	return s.promote(ctx, r, actor, reason)
}

func (s *Service) promote(ctx context.Context, r Run, actor, reason string) (Baseline, error) {
	if r.State != reliability.Succeeded && r.State != reliability.Approved {
		return Baseline{}, &StateError{Err: ErrRunNotPromotable, State: r.State}
	}
	return s.d.Store.Promote(ctx, r, actor, reason, s.d.Now().UTC().Truncate(time.Microsecond))
}

// StateError is a run in a state the operation refuses; it wraps the operation's sentinel.
type StateError struct {
	Err   error
	State reliability.State
}

func (e *StateError) Error() string { return e.Err.Error() + " (state " + string(e.State) + ")" }

// Unwrap returns the sentinel.
func (e *StateError) Unwrap() error { return e.Err }

// Rollback makes the baseline before the target's current one current again.
func (s *Service) Rollback(ctx context.Context, c Caller, repositoryID, targetID uuid.UUID, req BaselineRequest) (Baseline, error) {
	actor, reason, problems := s.actorReason(c, req)
	if len(problems) > 0 {
		return Baseline{}, &fault.ValidationError{Problems: problems}
	}
	t, err := s.repositoryTarget(ctx, c, repositoryID, targetID)
	if err != nil {
		return Baseline{}, err
	}
	return s.d.Store.Rollback(ctx, t, actor, reason, s.d.Now().UTC().Truncate(time.Microsecond))
}

// ApproveRequest is POST /runs/{id}/approve's body.
type ApproveRequest struct {
	ApprovedBy string
	Reason     string
}

// Approve approves a run held for approval.
func (s *Service) Approve(ctx context.Context, c Caller, id uuid.UUID, req ApproveRequest) (Run, error) {
	var problems []fault.Problem
	by := text("approved_by", req.ApprovedBy, maxShortText, true, &problems)
	reason := text("reason", req.Reason, maxReason, true, &problems)
	if len(problems) > 0 {
		return Run{}, &fault.ValidationError{Problems: problems}
	}
	return s.d.Store.Approve(ctx, c.OrganizationID, id, Approval{ApprovedBy: by, Reason: reason,
		CreatedAt: s.d.Now().UTC().Truncate(time.Microsecond)})
}

// EnqueueDue queues a run of each due schedule of the caller's workspace, at most limit.
func (s *Service) EnqueueDue(ctx context.Context, c Caller, limit int) (Enqueued, error) {
	now := s.d.Now().UTC().Truncate(time.Microsecond)
	return s.d.Store.EnqueueDue(ctx, c.OrganizationID, now, limit, s.monthStart(), quota, s.d.NextDue)
}

// Evidence reads a finished run's evidence.
func (s *Service) Evidence(ctx context.Context, c Caller, runID uuid.UUID) (Evidence, Run, error) {
	r, err := s.d.Store.GetRun(ctx, c.OrganizationID, runID)
	if err != nil {
		return Evidence{}, Run{}, err
	}
	ev, err := s.d.Store.Evidence(ctx, c.OrganizationID, runID)
	if errors.Is(err, fault.ErrNotFound) {
		return Evidence{}, Run{}, ErrRunNotFinished
	}
	return ev, r, err
}

// Overview counts the caller's workspace.
func (s *Service) Overview(ctx context.Context, c Caller) (Overview, error) {
	return s.d.Store.Overview(ctx, c.OrganizationID, s.monthStart())
}
