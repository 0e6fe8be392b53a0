package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/watch"
)

// Watch implements verification.v1.WatchService: watch API keys (admin), and the watches, runs and
// policies of the organization of the calling watch key.
type Watch struct {
	verificationv1.UnimplementedWatchServiceServer
	svc *watch.Service
}

// NewWatch returns the WatchService.
func NewWatch(svc *watch.Service) *Watch { return &Watch{svc: svc} }

// CreateWatchApiKey issues a watch API key (201); its secret is in this answer only.
func (s *Watch) CreateWatchApiKey(ctx context.Context, req *verificationv1.CreateWatchApiKeyRequest) (*verificationv1.CreateWatchApiKeyResponse, error) {
	k, secret, err := s.svc.IssueKey(ctx, watch.NewKey{
		OrganizationID: req.GetOrganizationId(), Name: req.GetName(), Scopes: req.GetScopes(), ExpiresInSeconds: req.ExpiresInSeconds,
	})
	if err != nil {
		return nil, toAPI(err, organizationTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreateWatchApiKeyResponse{ApiKey: &verificationv1.IssuedWatchApiKey{
		Id: k.ID.String(), OrganizationId: k.OrganizationID.String(), Name: k.Name, Prefix: k.Prefix, Scopes: k.Scopes,
		CreatedAt: ts(k.CreatedAt), ExpiresAt: optionalTS(k.ExpiresAt), ApiKey: secret,
	}}, nil
}

// ListWatchApiKeys lists an organization's watch keys, without secrets.
func (s *Watch) ListWatchApiKeys(ctx context.Context, req *verificationv1.ListWatchApiKeysRequest) (*verificationv1.ListWatchApiKeysResponse, error) {
	raw := strings.TrimSpace(req.GetOrganizationId())
	org, err := uuid.Parse(raw)
	if err != nil {
		v := apierror.Violation{Loc: []any{"query", "organizationId"}, Msg: "Input should be a valid UUID", Type: "uuid_parsing"}
		if raw == "" {
			v.Msg, v.Type = "Field required", "missing"
		}
		return nil, apierror.Validation(v)
	}
	keys, err := s.svc.ListKeys(ctx, org)
	if err != nil {
		return nil, toAPI(err, organizationTarget)
	}
	out := &verificationv1.ListWatchApiKeysResponse{Items: make([]*verificationv1.WatchApiKey, 0, len(keys))}
	for _, k := range keys {
		out.Items = append(out.Items, &verificationv1.WatchApiKey{
			Id: k.ID.String(), OrganizationId: k.OrganizationID.String(), Name: k.Name, Prefix: k.Prefix, Scopes: k.Scopes,
			CreatedAt: ts(k.CreatedAt), ExpiresAt: optionalTS(k.ExpiresAt), RevokedAt: optionalTS(k.RevokedAt),
		})
	}
	return out, nil
}

// RevokeWatchApiKey revokes a watch key (204, again 204); it stops working at once.
func (s *Watch) RevokeWatchApiKey(ctx context.Context, req *verificationv1.RevokeWatchApiKeyRequest) (*verificationv1.RevokeWatchApiKeyResponse, error) {
	id, err := pathID(req.GetId(), watchKeyTarget)
	if err != nil {
		return nil, err
	}
	if err := s.svc.RevokeKey(ctx, id); err != nil {
		return nil, toAPI(err, watchKeyTarget)
	}
	return &verificationv1.RevokeWatchApiKeyResponse{}, gateway.SetHTTPStatus(ctx, http.StatusNoContent)
}

// CreateTargetWatch starts watching a target with an evaluator (201).
func (s *Watch) CreateTargetWatch(ctx context.Context, req *verificationv1.CreateTargetWatchRequest) (*verificationv1.CreateTargetWatchResponse, error) {
	c, err := watchCaller(ctx)
	if err != nil {
		return nil, err
	}
	w, err := s.svc.CreateWatch(ctx, c, watch.NewWatch{
		TargetURL: req.GetTargetUrl(), Evaluator: req.GetEvaluator(), PolicyID: req.GetPolicyId(), IntervalSeconds: widen(req.IntervalSeconds),
	})
	if err != nil {
		return nil, toAPI(err, watchTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreateTargetWatchResponse{Watch: targetWatchToProto(w)}, nil
}

// ListTargetWatches lists the caller's watches that are not archived, newest first.
func (s *Watch) ListTargetWatches(ctx context.Context, req *verificationv1.ListTargetWatchesRequest) (*verificationv1.ListTargetWatchesResponse, error) {
	c, err := watchCaller(ctx)
	if err != nil {
		return nil, err
	}
	limit, err := queryLimit(req.Limit, watch.DefaultPageLimit, watch.MaxPageLimit)
	if err != nil {
		return nil, err
	}
	if err := watchStatusFilter(req.GetStatus()); err != nil {
		return nil, err
	}
	items, next, err := s.svc.ListWatches(ctx, c, req.GetStatus(), watch.Page{Limit: limit, Cursor: req.GetCursor()})
	if err != nil {
		return nil, toAPI(err, watchTarget)
	}
	out := &verificationv1.ListTargetWatchesResponse{Items: make([]*verificationv1.TargetWatch, 0, len(items)), NextCursor: next}
	for _, w := range items {
		out.Items = append(out.Items, targetWatchToProto(w))
	}
	return out, nil
}

// GetTargetWatch reads a watch; an archived one is 404.
func (s *Watch) GetTargetWatch(ctx context.Context, req *verificationv1.GetTargetWatchRequest) (*verificationv1.GetTargetWatchResponse, error) {
	c, id, err := watchCallerAndID(ctx, req.GetId(), watchTarget)
	if err != nil {
		return nil, err
	}
	w, err := s.svc.GetWatch(ctx, c, id)
	if err != nil {
		return nil, toAPI(err, watchTarget)
	}
	return &verificationv1.GetTargetWatchResponse{Watch: targetWatchToProto(w)}, nil
}

// UpdateTargetWatch pauses or resumes a watch, or changes its policy or interval.
func (s *Watch) UpdateTargetWatch(ctx context.Context, req *verificationv1.UpdateTargetWatchRequest) (*verificationv1.UpdateTargetWatchResponse, error) {
	c, id, err := watchCallerAndID(ctx, req.GetId(), watchTarget)
	if err != nil {
		return nil, err
	}
	w, err := s.svc.UpdateWatch(ctx, c, id, watch.WatchPatch{Status: req.Status, PolicyID: req.PolicyId, IntervalSeconds: widen(req.IntervalSeconds)})
	if err != nil {
		return nil, toAPI(err, watchTarget)
	}
	return &verificationv1.UpdateTargetWatchResponse{Watch: targetWatchToProto(w)}, nil
}

// DeleteTargetWatch archives a watch (204).
func (s *Watch) DeleteTargetWatch(ctx context.Context, req *verificationv1.DeleteTargetWatchRequest) (*verificationv1.DeleteTargetWatchResponse, error) {
	c, id, err := watchCallerAndID(ctx, req.GetId(), watchTarget)
	if err != nil {
		return nil, err
	}
	if err := s.svc.ArchiveWatch(ctx, c, id); err != nil {
		return nil, toAPI(err, watchTarget)
	}
	return &verificationv1.DeleteTargetWatchResponse{}, gateway.SetHTTPStatus(ctx, http.StatusNoContent)
}

// RunTargetWatch runs a watch now: 200 with the finished run, 202 with the run still going.
func (s *Watch) RunTargetWatch(ctx context.Context, req *verificationv1.RunTargetWatchRequest) (*verificationv1.RunTargetWatchResponse, error) {
	c, id, err := watchCallerAndID(ctx, req.GetId(), watchTarget)
	if err != nil {
		return nil, err
	}
	run, finished, err := s.svc.RunNow(ctx, c, id)
	if err != nil {
		return nil, toAPI(err, watchTarget)
	}
	if !finished {
		if err := gateway.SetHTTPStatus(ctx, http.StatusAccepted); err != nil {
			return nil, err
		}
	}
	return &verificationv1.RunTargetWatchResponse{Run: runToProto(run)}, nil
}

// ListTargetWatchRuns lists a watch's runs, newest first.
func (s *Watch) ListTargetWatchRuns(ctx context.Context, req *verificationv1.ListTargetWatchRunsRequest) (*verificationv1.ListTargetWatchRunsResponse, error) {
	c, err := watchCaller(ctx)
	if err != nil {
		return nil, err
	}
	limit, err := queryLimit(req.Limit, watch.DefaultPageLimit, watch.MaxPageLimit)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetId(), watchTarget)
	if err != nil {
		return nil, err
	}
	items, next, err := s.svc.ListRuns(ctx, c, id, req.GetCursor(), limit)
	if err != nil {
		return nil, toAPI(err, watchTarget)
	}
	out := &verificationv1.ListTargetWatchRunsResponse{Items: make([]*verificationv1.TargetWatchRun, 0, len(items)), NextCursor: next}
	for _, r := range items {
		out.Items = append(out.Items, runToProto(r))
	}
	return out, nil
}

// CreateWatchPolicy creates a named policy (201).
func (s *Watch) CreateWatchPolicy(ctx context.Context, req *verificationv1.CreateWatchPolicyRequest) (*verificationv1.CreateWatchPolicyResponse, error) {
	c, err := watchCaller(ctx)
	if err != nil {
		return nil, err
	}
	p, err := s.svc.CreatePolicy(ctx, c, watch.NewPolicy{Name: req.GetName(), Rules: rulesFromProto(req.GetRules())})
	if err != nil {
		return nil, toAPI(err, watchPolicyTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreateWatchPolicyResponse{Policy: policyToProto(p)}, nil
}

// ListWatchPolicies lists the caller's policies, newest first.
func (s *Watch) ListWatchPolicies(ctx context.Context, req *verificationv1.ListWatchPoliciesRequest) (*verificationv1.ListWatchPoliciesResponse, error) {
	c, err := watchCaller(ctx)
	if err != nil {
		return nil, err
	}
	limit, err := queryLimit(req.Limit, watch.DefaultPageLimit, watch.MaxPageLimit)
	if err != nil {
		return nil, err
	}
	items, next, err := s.svc.ListPolicies(ctx, c, watch.Page{Limit: limit, Cursor: req.GetCursor()})
	if err != nil {
		return nil, toAPI(err, watchTarget)
	}
	out := &verificationv1.ListWatchPoliciesResponse{Items: make([]*verificationv1.WatchPolicy, 0, len(items)), NextCursor: next}
	for _, p := range items {
		out.Items = append(out.Items, policyToProto(p))
	}
	return out, nil
}

// GetWatchPolicy reads a policy.
func (s *Watch) GetWatchPolicy(ctx context.Context, req *verificationv1.GetWatchPolicyRequest) (*verificationv1.GetWatchPolicyResponse, error) {
	c, id, err := watchCallerAndID(ctx, req.GetId(), watchPolicyTarget)
	if err != nil {
		return nil, err
	}
	p, err := s.svc.GetPolicy(ctx, c, id)
	if err != nil {
		return nil, toAPI(err, watchPolicyTarget)
	}
	return &verificationv1.GetWatchPolicyResponse{Policy: policyToProto(p)}, nil
}

// UpdateWatchPolicy renames a policy or replaces its rules.
func (s *Watch) UpdateWatchPolicy(ctx context.Context, req *verificationv1.UpdateWatchPolicyRequest) (*verificationv1.UpdateWatchPolicyResponse, error) {
	c, id, err := watchCallerAndID(ctx, req.GetId(), watchPolicyTarget)
	if err != nil {
		return nil, err
	}
	p, err := s.svc.UpdatePolicy(ctx, c, id, watch.PolicyPatch{Name: req.Name, Rules: rulesFromProto(req.GetRules())})
	if err != nil {
		return nil, toAPI(err, watchPolicyTarget)
	}
	return &verificationv1.UpdateWatchPolicyResponse{Policy: policyToProto(p)}, nil
}

// DeleteWatchPolicy deletes a policy no watch uses (204).
func (s *Watch) DeleteWatchPolicy(ctx context.Context, req *verificationv1.DeleteWatchPolicyRequest) (*verificationv1.DeleteWatchPolicyResponse, error) {
	c, id, err := watchCallerAndID(ctx, req.GetId(), watchPolicyTarget)
	if err != nil {
		return nil, err
	}
	if err := s.svc.DeletePolicy(ctx, c, id); err != nil {
		return nil, toAPI(err, watchPolicyTarget)
	}
	return &verificationv1.DeleteWatchPolicyResponse{}, gateway.SetHTTPStatus(ctx, http.StatusNoContent)
}

// watchCallerAndID returns the calling watch key's caller and a path id, which names nothing (t's
// 404) when it is not a UUID.
func watchCallerAndID(ctx context.Context, raw string, t target) (watch.Caller, uuid.UUID, error) {
	c, err := watchCaller(ctx)
	if err != nil {
		return watch.Caller{}, uuid.Nil, err
	}
	id, err := pathID(raw, t)
	return c, id, err
}

// watchStatusFilter checks the status query parameter of the watch list: "", active or paused.
func watchStatusFilter(status string) error {
	if status == "" || status == watch.StatusActive || status == watch.StatusPaused {
		return nil
	}
	return apierror.Validation(apierror.Violation{Loc: []any{"query", "status"},
		Msg: "Input should be 'active' or 'paused'", Type: "enum"})
}

func targetWatchToProto(w watch.Watch) *verificationv1.TargetWatch {
	out := &verificationv1.TargetWatch{
		Id: w.ID.String(), OrganizationId: w.OrganizationID.String(), TargetUrl: w.TargetURL, Evaluator: w.Evaluator,
		Status: w.Status, PolicyId: optionalID(w.PolicyID), IntervalSeconds: int32(w.IntervalSeconds),
		CreatedAt: ts(w.CreatedAt), UpdatedAt: ts(w.UpdatedAt), NextRunAt: ts(w.NextRunAt),
	}
	if w.LastRun != nil {
		out.LastRun = runToProto(*w.LastRun)
	}
	return out
}

func runToProto(r watch.Run) *verificationv1.TargetWatchRun {
	out := &verificationv1.TargetWatchRun{
		Id: r.ID.String(), WatchId: r.WatchID.String(), Status: r.Status, Trigger: r.Trigger,
		StartedAt: ts(r.StartedAt), FinishedAt: optionalTS(r.FinishedAt), AuditId: optionalID(r.AuditID),
		Verdict: r.Verdict, SurfaceHash: r.SurfaceHash, Alert: r.Alert, Reasons: r.Reasons, Error: r.Error,
		Changes: make([]*structpb.Struct, 0, len(r.Changes)),
	}
	if r.Score != nil {
		score := int32(*r.Score)
		out.Score = &score
	}
	for _, raw := range r.Changes {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		if st, err := structpb.NewStruct(m); err == nil {
			out.Changes = append(out.Changes, st)
		}
	}
	return out
}

func policyToProto(p watch.Policy) *verificationv1.WatchPolicy {
	r := &verificationv1.WatchPolicyRules{
		RequiredChecks: p.Rules.RequiredChecks, ForbiddenFindings: p.Rules.ForbiddenFindings,
		SurfaceChanges: p.Rules.SurfaceChanges, NoWorseVerdict: p.Rules.NoWorseVerdict,
	}
	if p.Rules.MinScore != nil {
		score := int32(*p.Rules.MinScore)
		r.MinScore = &score
	}
	return &verificationv1.WatchPolicy{
		Id: p.ID.String(), OrganizationId: p.OrganizationID.String(), Name: p.Name, Rules: r,
		CreatedAt: ts(p.CreatedAt), UpdatedAt: ts(p.UpdatedAt),
	}
}

// rulesFromProto returns the rules of a request, nil when it has none.
func rulesFromProto(r *verificationv1.WatchPolicyRules) *watch.Rules {
	if r == nil {
		return nil
	}
	out := &watch.Rules{
		RequiredChecks: r.GetRequiredChecks(), ForbiddenFindings: r.GetForbiddenFindings(),
		SurfaceChanges: r.GetSurfaceChanges(), NoWorseVerdict: r.NoWorseVerdict,
	}
	if r.MinScore != nil {
		score := int(*r.MinScore)
		out.MinScore = &score
	}
	return out
}

// widen passes an optional interval on as the use case takes it.
func widen(v *int32) *int64 {
	if v == nil {
		return nil
	}
	n := int64(*v)
	return &n
}
