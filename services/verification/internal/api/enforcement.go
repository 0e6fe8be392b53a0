package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/enforcement"
)

// The targets of the enforcement routes.
var (
	enforcementPolicyTarget   = target{code: "enforcement_policy_not_found", message: "Not found"}
	enforcementSnapshotTarget = target{code: "enforcement_snapshot_not_found", message: "Not found"}
	enforcementArtifactTarget = target{code: "enforcement_artifact_not_found", message: "Not found"}
)

// enforcementError maps the enforcement use case's own errors, then the shared ones (toAPI).
func enforcementError(err error, t target) error {
	var limit *enforcement.SnapshotLimitError
	switch {
	case errors.Is(err, enforcement.ErrPolicyNameExists):
		return apierror.Coded(http.StatusConflict, "enforcement_policy_name_exists", "This organization already has a policy of this name", nil)
	case errors.Is(err, enforcement.ErrNoVersion):
		return apierror.Coded(http.StatusConflict, "enforcement_policy_has_no_version", "The policy has no version yet: add one first", nil)
	case errors.As(err, &limit):
		e := apierror.Coded(http.StatusTooManyRequests, "enforcement_snapshot_rate_limited",
			"This organization stored its hourly number of new snapshots: retry after the delay in Retry-After", map[string]any{"limit": limit.Limit})
		e.RetryAfter = limit.RetryAfter
		return e
	case errors.Is(err, enforcement.ErrUnknownVersion):
		return apierror.Validation(apierror.Violation{Loc: []any{"body", "version"}, Msg: "The policy has no version of this number", Type: "value_error"})
	}
	return toAPI(err, t)
}

// Enforcement implements verification.v1.EnforcementService for the calling organization.
type Enforcement struct {
	verificationv1.UnimplementedEnforcementServiceServer
	svc    *enforcement.Service
	schema *structpb.Struct
}

// NewEnforcement returns the EnforcementService.
func NewEnforcement(svc *enforcement.Service) (*Enforcement, error) {
	var doc map[string]any
	if err := json.Unmarshal(enforcement.AllowlistSchema, &doc); err != nil {
		return nil, err
	}
	schema, err := structpb.NewStruct(doc)
	if err != nil {
		return nil, err
	}
	return &Enforcement{svc: svc, schema: schema}, nil
}

// CreatePolicy creates a policy (201).
func (s *Enforcement) CreatePolicy(ctx context.Context, req *verificationv1.CreatePolicyRequest) (*verificationv1.CreatePolicyResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	body := req.GetPolicy()
	p, err := s.svc.CreatePolicy(ctx, org, enforcement.NewPolicy{Name: body.GetName(), Description: body.GetDescription(), Rules: enforcementRulesFromProto(body.GetRules())})
	if err != nil {
		return nil, enforcementError(err, enforcementPolicyTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreatePolicyResponse{Policy: enforcementPolicyToProto(p)}, nil
}

// GetPolicy reads a policy with its versions.
func (s *Enforcement) GetPolicy(ctx context.Context, req *verificationv1.GetPolicyRequest) (*verificationv1.GetPolicyResponse, error) {
	org, id, err := callerAndID(ctx, req.GetPolicyId(), enforcementPolicyTarget)
	if err != nil {
		return nil, err
	}
	p, err := s.svc.GetPolicy(ctx, org, id)
	if err != nil {
		return nil, enforcementError(err, enforcementPolicyTarget)
	}
	return &verificationv1.GetPolicyResponse{Policy: enforcementPolicyToProto(p)}, nil
}

// CreatePolicyVersion adds a version (201).
func (s *Enforcement) CreatePolicyVersion(ctx context.Context, req *verificationv1.CreatePolicyVersionRequest) (*verificationv1.CreatePolicyVersionResponse, error) {
	org, id, err := callerAndID(ctx, req.GetPolicyId(), enforcementPolicyTarget)
	if err != nil {
		return nil, err
	}
	body := req.GetVersion()
	v, err := s.svc.CreateVersion(ctx, org, id, enforcementRulesFromProto(body.GetRules()), body.GetNote())
	if err != nil {
		return nil, enforcementError(err, enforcementPolicyTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreatePolicyVersionResponse{Version: enforcementVersionToProto(v)}, nil
}

// PreviewPolicy compiles a version into a snapshot.
func (s *Enforcement) PreviewPolicy(ctx context.Context, req *verificationv1.PreviewPolicyRequest) (*verificationv1.PreviewPolicyResponse, error) {
	org, id, err := callerAndID(ctx, req.GetPolicyId(), enforcementPolicyTarget)
	if err != nil {
		return nil, err
	}
	snap, err := s.svc.Preview(ctx, org, id, int(req.GetCompile().GetVersion()), req.GetCompile().GetFormat())
	if err != nil {
		return nil, enforcementError(err, enforcementPolicyTarget)
	}
	return &verificationv1.PreviewPolicyResponse{Snapshot: enforcementSnapshotToProto(snap)}, nil
}

// GetSnapshot reads a snapshot.
func (s *Enforcement) GetSnapshot(ctx context.Context, req *verificationv1.GetSnapshotRequest) (*verificationv1.GetSnapshotResponse, error) {
	org, id, err := callerAndID(ctx, req.GetSnapshotId(), enforcementSnapshotTarget)
	if err != nil {
		return nil, err
	}
	snap, err := s.svc.GetSnapshot(ctx, org, id)
	if err != nil {
		return nil, enforcementError(err, enforcementSnapshotTarget)
	}
	return &verificationv1.GetSnapshotResponse{Snapshot: enforcementSnapshotToProto(snap)}, nil
}

// CreateArtifact generates an artifact of a snapshot (201).
func (s *Enforcement) CreateArtifact(ctx context.Context, req *verificationv1.CreateArtifactRequest) (*verificationv1.CreateArtifactResponse, error) {
	org, id, err := callerAndID(ctx, req.GetSnapshotId(), enforcementSnapshotTarget)
	if err != nil {
		return nil, err
	}
	a, err := s.svc.CreateArtifact(ctx, org, id, int(req.GetCompile().GetVersion()), req.GetCompile().GetFormat())
	if err != nil {
		return nil, enforcementError(err, enforcementSnapshotTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreateArtifactResponse{Artifact: enforcementArtifactToProto(a)}, nil
}

// GetArtifact reads an artifact with its files.
func (s *Enforcement) GetArtifact(ctx context.Context, req *verificationv1.GetArtifactRequest) (*verificationv1.GetArtifactResponse, error) {
	org, id, err := callerAndID(ctx, req.GetArtifactId(), enforcementArtifactTarget)
	if err != nil {
		return nil, err
	}
	a, err := s.svc.GetArtifact(ctx, org, id)
	if err != nil {
		return nil, enforcementError(err, enforcementArtifactTarget)
	}
	return &verificationv1.GetArtifactResponse{Artifact: enforcementArtifactToProto(a)}, nil
}

// GetAllowlistSchema returns the allowlist's JSON Schema.
func (s *Enforcement) GetAllowlistSchema(ctx context.Context, _ *verificationv1.GetAllowlistSchemaRequest) (*verificationv1.GetAllowlistSchemaResponse, error) {
	if _, err := callerOrganization(ctx); err != nil {
		return nil, err
	}
	return &verificationv1.GetAllowlistSchemaResponse{Schema: s.schema}, nil
}
