package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/api/httpbody"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/gate"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/runs"
)

// EvidencePage renders a finished run's evidence as an HTML page (internal/web.EvidencePage).
type EvidencePage func(run runs.Run, ev runs.Evidence, m runs.Manifest) ([]byte, error)

// ReliabilityRuns implements verification.v1.ReliabilityRunService: the scans, runs, diffs,
// baselines, approvals, scheduled scans, evidence and overview of the caller's workspace.
type ReliabilityRuns struct {
	verificationv1.UnimplementedReliabilityRunServiceServer
	svc  *runs.Service
	page EvidencePage
}

// NewReliabilityRuns returns the ReliabilityRunService.
func NewReliabilityRuns(svc *runs.Service, page EvidencePage) *ReliabilityRuns {
	return &ReliabilityRuns{svc: svc, page: page}
}

// The targets of the runs' routes.
var (
	reliabilityRunTarget    = target{code: "run_not_found", message: "Not found"}
	reliabilityTargetTarget = target{code: "target_not_found", message: "Not found"}
)

// runsCaller returns the caller's workspace, and the API key's prefix as the default actor (as
// the workspace routes name who changed a policy).
func runsCaller(ctx context.Context) (runs.Caller, error) {
	org, actor, err := wsCallerKey(ctx)
	return runs.Caller{OrganizationID: org, Actor: actor}, err
}

func runsCallerAndID(ctx context.Context, raw string, t target) (runs.Caller, uuid.UUID, error) {
	c, err := runsCaller(ctx)
	if err != nil {
		return runs.Caller{}, uuid.Nil, err
	}
	id, err := pathID(raw, t)
	return c, id, err
}

// runsError maps the runs use case's errors; the rest goes through toAPI.
func runsError(err error, t target) error {
	var quota *runs.QuotaError
	var state *runs.StateError
	switch {
	case errors.Is(err, runs.ErrRunNotFound):
		return apierror.Coded(http.StatusNotFound, reliabilityRunTarget.code, reliabilityRunTarget.message, nil)
	case errors.As(err, &quota):
		return apierror.Coded(http.StatusPaymentRequired, "plan_limit_reached",
			"The workspace's plan allows "+strconv.Itoa(quota.Limit)+" scans per month: upgrade the plan or wait for next month",
			map[string]any{"limit": quota.Limit, "plan": quota.Plan})
	case errors.As(err, &state) && errors.Is(err, runs.ErrNotAwaitingApproval):
		return apierror.Coded(http.StatusConflict, "run_not_awaiting_approval",
			"Only a run in needs_approval can be approved", map[string]any{"state": string(state.State)})
	case errors.As(err, &state) && errors.Is(err, runs.ErrRunNotPromotable):
		return apierror.Coded(http.StatusConflict, "run_not_promotable",
			"Only a succeeded or approved run can be a baseline", map[string]any{"state": string(state.State)})
	case errors.Is(err, runs.ErrNoPreviousBaseline):
		return apierror.Coded(http.StatusConflict, "no_previous_baseline", "The target has no baseline before its current one", nil)
	case errors.Is(err, runs.ErrNoBaseline):
		return apierror.Coded(http.StatusConflict, "no_baseline", "The target has no baseline: promote a run first, or name base_run_id", nil)
	case errors.Is(err, runs.ErrRunNotFinished):
		return apierror.Coded(http.StatusConflict, "run_not_finished", "The run has no result: it is queued, running or failed", nil)
	case errors.Is(err, runs.ErrDifferentTargets):
		return apierror.Coded(http.StatusConflict, "run_of_another_target", "The runs are of different targets", nil)
	case errors.Is(err, runs.ErrNoPromotableRun):
		return apierror.Coded(http.StatusConflict, "no_promotable_run", "The target has no succeeded or approved run to promote", nil)
	}
	return toAPI(err, t)
}

// CreateScan queues a run of a target (202), or answers the target's run in flight (202).
func (s *ReliabilityRuns) CreateScan(ctx context.Context, req *verificationv1.CreateScanRequest) (*verificationv1.CreateScanResponse, error) {
	c, err := runsCaller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.GetScan()
	r, err := s.svc.Scan(ctx, c, runs.ScanRequest{TargetID: b.GetTargetId(), CommitSHA: b.GetCommitSha(), Ref: b.GetRef(),
		Trigger: b.GetTrigger(), RequestedBy: b.GetRequestedBy()})
	if err != nil {
		return nil, runsError(err, reliabilityTargetTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusAccepted); err != nil {
		return nil, err
	}
	return &verificationv1.CreateScanResponse{Run: reliabilityRunToProto(r)}, nil
}

// queryID reads an optional UUID query parameter.
func queryID(raw, name string) (*uuid.UUID, error) {
	if raw = strings.TrimSpace(raw); raw == "" {
		return nil, nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		return nil, apierror.Validation(apierror.Violation{Loc: []any{"query", name}, Msg: "Input should be a valid UUID", Type: "uuid_parsing"})
	}
	return &id, nil
}

// ListRuns lists the workspace's runs, newest first.
func (s *ReliabilityRuns) ListRuns(ctx context.Context, req *verificationv1.ListRunsRequest) (*verificationv1.ListRunsResponse, error) {
	c, err := runsCaller(ctx)
	if err != nil {
		return nil, err
	}
	limit, err := queryLimit(req.Limit, runs.DefaultListLimit, runs.MaxListLimit)
	if err != nil {
		return nil, err
	}
	var f runs.Filter
	if f.TargetID, err = queryID(req.GetTargetId(), "target_id"); err != nil {
		return nil, err
	}
	if f.RepositoryID, err = queryID(req.GetRepositoryId(), "repository_id"); err != nil {
		return nil, err
	}
	f.State = req.GetState()
	if f.State != "" && !runs.ValidState(reliability.State(f.State)) {
		return nil, apierror.Validation(apierror.Violation{Loc: []any{"query", "state"},
			Msg: "Input should be 'queued', 'running', 'succeeded', 'failed', 'needs_approval', 'approved' or 'blocked'", Type: "enum"})
	}
	list, err := s.svc.ListRuns(ctx, c, f, limit)
	if err != nil {
		return nil, runsError(err, reliabilityRunTarget)
	}
	out := &verificationv1.ListRunsResponse{Items: make([]*verificationv1.ReliabilityRun, 0, len(list))}
	for _, r := range list {
		out.Items = append(out.Items, reliabilityRunToProto(r))
	}
	return out, nil
}

// GetRun reads a run.
func (s *ReliabilityRuns) GetRun(ctx context.Context, req *verificationv1.GetRunRequest) (*verificationv1.GetRunResponse, error) {
	c, id, err := runsCallerAndID(ctx, req.GetRunId(), reliabilityRunTarget)
	if err != nil {
		return nil, err
	}
	r, err := s.svc.GetRun(ctx, c, id)
	if err != nil {
		return nil, runsError(err, reliabilityRunTarget)
	}
	return &verificationv1.GetRunResponse{Run: reliabilityRunToProto(r)}, nil
}

// CreateDiff compares two runs of a target, or a run with its target's baseline.
func (s *ReliabilityRuns) CreateDiff(ctx context.Context, req *verificationv1.CreateDiffRequest) (*verificationv1.CreateDiffResponse, error) {
	c, err := runsCaller(ctx)
	if err != nil {
		return nil, err
	}
	d, err := s.svc.Diff(ctx, c, runs.DiffRequest{BaseRunID: req.GetDiff().GetBaseRunId(), HeadRunID: req.GetDiff().GetHeadRunId()})
	if err != nil {
		return nil, runsError(err, reliabilityRunTarget)
	}
	return &verificationv1.CreateDiffResponse{Diff: diffToProto(d)}, nil
}

// EvaluateDeploymentPolicy is CreateDiff with the repository's policy's decision.
func (s *ReliabilityRuns) EvaluateDeploymentPolicy(ctx context.Context, req *verificationv1.EvaluateDeploymentPolicyRequest) (*verificationv1.EvaluateDeploymentPolicyResponse, error) {
	c, err := runsCaller(ctx)
	if err != nil {
		return nil, err
	}
	d, err := s.svc.Evaluate(ctx, c, runs.DiffRequest{BaseRunID: req.GetDiff().GetBaseRunId(), HeadRunID: req.GetDiff().GetHeadRunId()})
	if err != nil {
		return nil, runsError(err, reliabilityRunTarget)
	}
	return &verificationv1.EvaluateDeploymentPolicyResponse{Diff: diffToProto(d)}, nil
}

// GetRunEvidence returns a finished run's evidence with its manifest.
func (s *ReliabilityRuns) GetRunEvidence(ctx context.Context, req *verificationv1.GetRunEvidenceRequest) (*verificationv1.GetRunEvidenceResponse, error) {
	c, id, err := runsCallerAndID(ctx, req.GetRunId(), reliabilityRunTarget)
	if err != nil {
		return nil, err
	}
	ev, _, err := s.svc.Evidence(ctx, c, id)
	if err != nil {
		return nil, runsError(err, reliabilityRunTarget)
	}
	m, err := runs.ManifestOf(ev.Document)
	if err != nil {
		return nil, err
	}
	doc := &structpb.Struct{}
	if err := doc.UnmarshalJSON(ev.Document); err != nil {
		return nil, err
	}
	out := &verificationv1.ReliabilityEvidence{RunId: ev.RunID.String(), Sha256: ev.SHA256, CreatedAt: ts(ev.CreatedAt), Document: doc,
		Manifest: &verificationv1.ReliabilityEvidenceManifest{Algorithm: m.Algorithm, Canonicalization: m.Canonicalization, DocumentSha256: m.DocumentSHA256}}
	for _, p := range m.Parts {
		out.Manifest.Parts = append(out.Manifest.Parts, &verificationv1.ReliabilityEvidencePart{Name: p.Name, Sha256: p.SHA256, Bytes: int32(p.Bytes)})
	}
	return &verificationv1.GetRunEvidenceResponse{Evidence: out}, nil
}

// GetRunEvidencePage returns a finished run's evidence as an HTML page.
func (s *ReliabilityRuns) GetRunEvidencePage(ctx context.Context, req *verificationv1.GetRunEvidencePageRequest) (*httpbody.HttpBody, error) {
	c, id, err := runsCallerAndID(ctx, req.GetRunId(), reliabilityRunTarget)
	if err != nil {
		return nil, err
	}
	ev, r, err := s.svc.Evidence(ctx, c, id)
	if err != nil {
		return nil, runsError(err, reliabilityRunTarget)
	}
	m, err := runs.ManifestOf(ev.Document)
	if err != nil {
		return nil, err
	}
	page, err := s.page(r, ev, m)
	if err != nil {
		return nil, err
	}
	return &httpbody.HttpBody{ContentType: "text/html; charset=utf-8", Data: page}, nil
}

func baselineBody(runID, actor, reason string) runs.BaselineRequest {
	return runs.BaselineRequest{RunID: runID, Actor: actor, Reason: reason}
}

// PromoteTargetBaseline makes a finished run of the target its baseline.
func (s *ReliabilityRuns) PromoteTargetBaseline(ctx context.Context, req *verificationv1.PromoteTargetBaselineRequest) (*verificationv1.PromoteTargetBaselineResponse, error) {
	c, repo, tgt, err := s.repoTarget(ctx, req.GetRepositoryId(), req.GetTargetId())
	if err != nil {
		return nil, err
	}
	b := req.GetBaseline()
	bl, err := s.svc.PromoteTarget(ctx, c, repo, tgt, baselineBody(b.GetRunId(), b.GetActor(), b.GetReason()))
	if err != nil {
		return nil, runsError(err, reliabilityTargetTarget)
	}
	return &verificationv1.PromoteTargetBaselineResponse{Baseline: baselineToProto(bl)}, nil
}

func (s *ReliabilityRuns) repoTarget(ctx context.Context, rawRepo, rawTarget string) (runs.Caller, uuid.UUID, uuid.UUID, error) {
	c, err := runsCaller(ctx)
	if err != nil {
		return runs.Caller{}, uuid.Nil, uuid.Nil, err
	}
	tgt, err := pathID(rawTarget, reliabilityTargetTarget)
	if err != nil {
		return runs.Caller{}, uuid.Nil, uuid.Nil, err
	}
	repo, err := pathID(rawRepo, reliabilityTargetTarget)
	return c, repo, tgt, err
}

// PromoteRunBaseline makes the run its target's baseline.
func (s *ReliabilityRuns) PromoteRunBaseline(ctx context.Context, req *verificationv1.PromoteRunBaselineRequest) (*verificationv1.PromoteRunBaselineResponse, error) {
	c, id, err := runsCallerAndID(ctx, req.GetRunId(), reliabilityRunTarget)
	if err != nil {
		return nil, err
	}
	b := req.GetBaseline()
	bl, err := s.svc.PromoteRun(ctx, c, id, baselineBody("", b.GetActor(), b.GetReason()))
	if err != nil {
		return nil, runsError(err, reliabilityRunTarget)
	}
	return &verificationv1.PromoteRunBaselineResponse{Baseline: baselineToProto(bl)}, nil
}

// RollbackTargetBaseline makes the target's previous baseline current again.
func (s *ReliabilityRuns) RollbackTargetBaseline(ctx context.Context, req *verificationv1.RollbackTargetBaselineRequest) (*verificationv1.RollbackTargetBaselineResponse, error) {
	c, repo, tgt, err := s.repoTarget(ctx, req.GetRepositoryId(), req.GetTargetId())
	if err != nil {
		return nil, err
	}
	b := req.GetBaseline()
	bl, err := s.svc.Rollback(ctx, c, repo, tgt, baselineBody("", b.GetActor(), b.GetReason()))
	if err != nil {
		return nil, runsError(err, reliabilityTargetTarget)
	}
	return &verificationv1.RollbackTargetBaselineResponse{Baseline: baselineToProto(bl)}, nil
}

// ApproveRun approves a held run.
func (s *ReliabilityRuns) ApproveRun(ctx context.Context, req *verificationv1.ApproveRunRequest) (*verificationv1.ApproveRunResponse, error) {
	c, id, err := runsCallerAndID(ctx, req.GetRunId(), reliabilityRunTarget)
	if err != nil {
		return nil, err
	}
	a := req.GetApproval()
	r, err := s.svc.Approve(ctx, c, id, runs.ApproveRequest{ApprovedBy: a.GetApprovedBy(), Reason: a.GetReason()})
	if err != nil {
		return nil, runsError(err, reliabilityRunTarget)
	}
	return &verificationv1.ApproveRunResponse{Run: reliabilityRunToProto(r)}, nil
}

// EnqueueDueScans queues the workspace's due scheduled scans.
func (s *ReliabilityRuns) EnqueueDueScans(ctx context.Context, req *verificationv1.EnqueueDueScansRequest) (*verificationv1.EnqueueDueScansResponse, error) {
	c, err := runsCaller(ctx)
	if err != nil {
		return nil, err
	}
	limit, err := queryLimit(req.Limit, runs.DefaultEnqueueLimit, runs.MaxEnqueueLimit)
	if err != nil {
		return nil, err
	}
	n, err := s.svc.EnqueueDue(ctx, c, limit)
	if err != nil {
		return nil, runsError(err, target{})
	}
	return &verificationv1.EnqueueDueScansResponse{Counts: map[string]int32{
		"due": int32(n.Due), "enqueued": int32(n.Enqueued), "skipped": int32(n.Skipped), "over_limit": int32(n.OverLimit),
	}}, nil
}

// GetOverview counts the workspace's repositories, targets and runs.
func (s *ReliabilityRuns) GetOverview(ctx context.Context, _ *verificationv1.GetOverviewRequest) (*verificationv1.GetOverviewResponse, error) {
	c, err := runsCaller(ctx)
	if err != nil {
		return nil, err
	}
	o, err := s.svc.Overview(ctx, c)
	if err != nil {
		return nil, runsError(err, target{})
	}
	out := &verificationv1.ReliabilityOverview{Repositories: int32(o.Repositories), Targets: int32(o.Targets), Runs: map[string]int32{},
		ScansThisMonth: int32(o.ScansThisMonth), Plan: o.Plan, ScansPerMonth: int32(reliability.PlanOf(o.Plan).ScansPerMonth),
		LatestRuns: []*verificationv1.ReliabilityRun{}, HeldRuns: []*verificationv1.ReliabilityRun{}}
	for _, st := range []reliability.State{reliability.Queued, reliability.Running, reliability.Succeeded, reliability.Failed,
		reliability.NeedsApproval, reliability.Approved, reliability.Blocked} {
		out.Runs[string(st)] = int32(o.Runs[st])
	}
	for _, r := range o.Latest {
		out.LatestRuns = append(out.LatestRuns, reliabilityRunToProto(r))
	}
	for _, r := range o.Held {
		out.HeldRuns = append(out.HeldRuns, reliabilityRunToProto(r))
	}
	return &verificationv1.GetOverviewResponse{Overview: out}, nil
}

func optionalUUID(id *uuid.UUID) string {
	if id == nil {
		return ""
	}
	return id.String()
}

func changeToProto(c reliability.Change) *verificationv1.ReliabilityChange {
	return &verificationv1.ReliabilityChange{Kind: c.Kind, Item: c.Item, Detail: c.Detail, Risk: string(c.Risk), Delta: int32(c.Delta)}
}

func changesToProto(cs []reliability.Change) []*verificationv1.ReliabilityChange {
	out := make([]*verificationv1.ReliabilityChange, 0, len(cs))
	for _, c := range cs {
		out = append(out, changeToProto(c))
	}
	return out
}

func reasonsToProto(rs []gate.Reason) []*verificationv1.ReliabilityDecisionReason {
	out := make([]*verificationv1.ReliabilityDecisionReason, 0, len(rs))
	for _, r := range rs {
		p := &verificationv1.ReliabilityDecisionReason{Action: string(r.Action), Message: r.Message, RuleIndex: int32(r.RuleIndex)}
		if r.Rule != nil {
			p.Rule = &verificationv1.ReliabilityPolicyRule{Change: r.Rule.Change, Risk: string(r.Rule.Risk), MinDelta: int32(r.Rule.MinDelta), Action: string(r.Rule.Action)}
		}
		if r.Change != nil {
			p.Change = changeToProto(*r.Change)
		}
		out = append(out, p)
	}
	return out
}

func reliabilityRunToProto(r runs.Run) *verificationv1.ReliabilityRun {
	out := &verificationv1.ReliabilityRun{
		Id: r.ID.String(), RepositoryId: r.RepositoryID.String(), TargetId: r.TargetID.String(), State: string(r.State), Trigger: r.Trigger,
		CommitSha: r.CommitSHA, Ref: r.Ref, RequestedBy: r.RequestedBy, ScheduledFor: optionalTS(r.ScheduledFor),
		FailureCode: r.FailureCode, FailureMessage: r.FailureMessage,
		ConformanceAuditId: optionalUUID(r.ConformanceAuditID), ReadinessAuditId: optionalUUID(r.ReadinessAuditID),
		BaselineRunId: optionalUUID(r.BaselineRunID), Changes: changesToProto(r.Changes), Decision: string(r.Decision),
		DecisionReasons: reasonsToProto(r.Reasons), Attempts: int32(r.Attempts),
		CreatedAt: ts(r.CreatedAt), StartedAt: optionalTS(r.StartedAt), FinishedAt: optionalTS(r.FinishedAt), UpdatedAt: ts(r.UpdatedAt),
		EvidenceSha256: r.EvidenceSHA256,
	}
	if sm := r.Summary; sm != nil {
		p := &verificationv1.ReliabilityRunSummary{Verdict: sm.Verdict, ProductionReady: sm.ProductionReady, SurfaceSha256: sm.SurfaceSHA256,
			Tools: sm.ToolNames(), Checks: make([]*verificationv1.ReliabilityCheck, 0, len(sm.Checks))}
		if sm.ReadinessScore != nil {
			v := int32(*sm.ReadinessScore)
			p.ReadinessScore = &v
		}
		for _, c := range sm.Checks {
			p.Checks = append(p.Checks, &verificationv1.ReliabilityCheck{Id: c.ID, Evaluator: c.Evaluator, Status: c.Status})
		}
		out.Summary = p
	}
	if a := r.Approval; a != nil {
		out.Approval = &verificationv1.ReliabilityApproval{ApprovedBy: a.ApprovedBy, Reason: a.Reason, CreatedAt: ts(a.CreatedAt)}
	}
	return out
}

func diffToProto(d runs.DiffResult) *verificationv1.DiffResponse {
	out := &verificationv1.DiffResponse{RepositoryId: d.RepositoryID.String(), TargetId: d.TargetID.String(),
		BaseRunId: optionalUUID(d.BaseRunID), HeadRunId: d.HeadRunID.String(), Changes: changesToProto(d.Changes),
		HighestRisk: string(gate.HighestRisk(d.Changes)), Reasons: []*verificationv1.ReliabilityDecisionReason{}}
	if d.Evaluation != nil {
		out.Decision, out.Reasons = string(d.Evaluation.Decision), reasonsToProto(d.Evaluation.Reasons)
	}
	if d.Policy != nil {
		out.PolicySource, out.PolicyRevision = d.Policy.Source, int32(d.Policy.Revision)
	}
	return out
}

func baselineToProto(b runs.Baseline) *verificationv1.ReliabilityBaseline {
	return &verificationv1.ReliabilityBaseline{Id: b.ID.String(), RepositoryId: b.RepositoryID.String(), TargetId: b.TargetID.String(),
		RunId: b.RunID.String(), Action: b.Action, PreviousBaselineId: optionalUUID(b.PreviousBaselineID), Actor: b.Actor, Reason: b.Reason,
		CreatedAt: ts(b.CreatedAt)}
}
