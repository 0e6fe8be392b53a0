package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/identity"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/workspace"
)

// ReliabilityWorkspace implements verification.v1.ReliabilityWorkspaceService: the repositories,
// targets, schedules, deployment policies, code-host installations and deletion of the calling
// organization's agent-reliability workspace.
type ReliabilityWorkspace struct {
	verificationv1.UnimplementedReliabilityWorkspaceServiceServer
	svc *workspace.Service
}

// NewReliabilityWorkspace returns the ReliabilityWorkspaceService.
func NewReliabilityWorkspace(svc *workspace.Service) *ReliabilityWorkspace {
	return &ReliabilityWorkspace{svc: svc}
}

// The targets of the workspace routes.
var (
	wsRepositoryTarget = target{code: "repository_not_found", message: "Not found"}
	wsTargetTarget     = target{code: "target_not_found", message: "Not found"}
	wsNoTarget         = target{}
)

// reliabilityToAPI maps the workspace's errors to what the client sees, then the shared ones
// (toAPI): the one place this area's errors are mapped.
func reliabilityToAPI(err error, t target) error {
	var plan *workspace.PlanLimitError
	var limit *workspace.LimitError
	var revision *workspace.RevisionError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &plan):
		return apierror.Coded(http.StatusPaymentRequired, "plan_limit_reached",
			"The workspace has as many targets as its plan allows: delete a target or upgrade the plan",
			map[string]any{"limit": plan.Limit, "plan": plan.Plan})
	case errors.As(err, &limit) && errors.Is(err, workspace.ErrRepositoryLimit):
		return apierror.Coded(http.StatusForbidden, "repository_limit_reached",
			"The workspace has as many repositories as it may: delete one first", map[string]any{"limit": limit.Limit})
	case errors.As(err, &limit) && errors.Is(err, workspace.ErrTargetLimit):
		return apierror.Coded(http.StatusForbidden, "target_limit_reached",
			"The repository has as many targets as it may: delete one first", map[string]any{"limit": limit.Limit})
	case errors.As(err, &revision):
		return apierror.Coded(http.StatusConflict, "policy_revision_conflict",
			"The policy changed since the revision you expected: read it again", map[string]any{"revision": revision.Current})
	case errors.Is(err, workspace.ErrRepositoryExists):
		return apierror.Coded(http.StatusConflict, "repository_already_exists", "The workspace already has a repository of this full name", nil)
	case errors.Is(err, workspace.ErrTargetExists):
		return apierror.Coded(http.StatusConflict, "target_already_exists", "The repository already has a target of this name", nil)
	case errors.Is(err, workspace.ErrCodeHostRepository):
		return apierror.Coded(http.StatusConflict, "code_host_repository_rename",
			"A repository registered from the code host keeps the code host's name", nil)
	case errors.Is(err, workspace.ErrInstallationLinked):
		return apierror.Coded(http.StatusConflict, "installation_linked_elsewhere",
			"This installation is linked to another workspace", nil)
	case errors.Is(err, workspace.ErrInstallationNotFound):
		return apierror.Validation(apierror.Violation{Loc: []any{"body", "installation_id"},
			Msg: "The code host has no installation of this app with this id", Type: "installation_not_found"})
	case errors.Is(err, workspace.ErrInstallationSuspended):
		return apierror.Coded(http.StatusConflict, "installation_suspended",
			"The installation is suspended on the code host: unsuspend it, then call again", nil)
	case errors.Is(err, workspace.ErrCodeHostNotConfigured):
		return apierror.Coded(http.StatusServiceUnavailable, "code_host_not_configured",
			"This deployment has no code-host app configured", nil)
	case errors.Is(err, workspace.ErrCodeHostUnavailable):
		e := apierror.Coded(http.StatusServiceUnavailable, "code_host_unavailable",
			"The code host's API could not be read: try again later", nil)
		e.RetryAfter = apierror.UnavailableRetryAfter
		return e
	}
	return toAPI(err, t)
}

// wsCallerKey returns the caller's organization and the name their key writes as an author.
func wsCallerKey(ctx context.Context) (uuid.UUID, string, error) {
	c, ok := identity.From(ctx)
	if !ok {
		return uuid.Nil, "", errMissingBearer
	}
	return c.OrganizationID, "api_key:" + c.KeyPrefix, nil
}

// wsRepositoryPath returns the caller and a repository id of the path.
func wsRepositoryPath(ctx context.Context, raw string) (uuid.UUID, uuid.UUID, error) {
	return callerAndID(ctx, raw, wsRepositoryTarget)
}

// wsTargetPath returns the caller and the repository and target ids of the path.
func wsTargetPath(ctx context.Context, repository, tgt string) (org, repositoryID, targetID uuid.UUID, err error) {
	if org, repositoryID, err = wsRepositoryPath(ctx, repository); err != nil {
		return
	}
	targetID, err = pathID(tgt, wsTargetTarget)
	return
}

// ListRepositories lists the workspace's repositories.
func (s *ReliabilityWorkspace) ListRepositories(ctx context.Context, _ *verificationv1.ListRepositoriesRequest) (*verificationv1.ListRepositoriesResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.svc.ListRepositories(ctx, org)
	if err != nil {
		return nil, reliabilityToAPI(err, wsNoTarget)
	}
	return &verificationv1.ListRepositoriesResponse{Items: wsRepositoriesToProto(list)}, nil
}

// CreateRepository adds a repository (201).
func (s *ReliabilityWorkspace) CreateRepository(ctx context.Context, req *verificationv1.CreateRepositoryRequest) (*verificationv1.CreateRepositoryResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	b := req.GetRepository()
	r, err := s.svc.CreateRepository(ctx, org, workspace.NewRepository{
		FullName: b.GetFullName(), DefaultBranch: b.GetDefaultBranch(), Description: b.GetDescription(),
	})
	if err != nil {
		return nil, reliabilityToAPI(err, wsRepositoryTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreateRepositoryResponse{Repository: wsRepositoryToProto(r)}, nil
}

// GetRepository returns a repository.
func (s *ReliabilityWorkspace) GetRepository(ctx context.Context, req *verificationv1.GetRepositoryRequest) (*verificationv1.GetRepositoryResponse, error) {
	org, id, err := wsRepositoryPath(ctx, req.GetRepositoryId())
	if err != nil {
		return nil, err
	}
	r, err := s.svc.GetRepository(ctx, org, id)
	if err != nil {
		return nil, reliabilityToAPI(err, wsRepositoryTarget)
	}
	return &verificationv1.GetRepositoryResponse{Repository: wsRepositoryToProto(r)}, nil
}

// UpdateRepository changes what the body gives.
func (s *ReliabilityWorkspace) UpdateRepository(ctx context.Context, req *verificationv1.UpdateRepositoryRequest) (*verificationv1.UpdateRepositoryResponse, error) {
	org, id, err := wsRepositoryPath(ctx, req.GetRepositoryId())
	if err != nil {
		return nil, err
	}
	b := req.GetRepository()
	r, err := s.svc.UpdateRepository(ctx, org, id, workspace.RepositoryChange{
		FullName: b.FullName, DefaultBranch: b.DefaultBranch, Description: b.Description,
	})
	if err != nil {
		return nil, reliabilityToAPI(err, wsRepositoryTarget)
	}
	return &verificationv1.UpdateRepositoryResponse{Repository: wsRepositoryToProto(r)}, nil
}

// DeleteRepository deletes a repository and everything under it (204).
func (s *ReliabilityWorkspace) DeleteRepository(ctx context.Context, req *verificationv1.DeleteRepositoryRequest) (*verificationv1.DeleteRepositoryResponse, error) {
	org, id, err := wsRepositoryPath(ctx, req.GetRepositoryId())
	if err != nil {
		return nil, err
	}
	if err := s.svc.DeleteRepository(ctx, org, id); err != nil {
		return nil, reliabilityToAPI(err, wsRepositoryTarget)
	}
	return &verificationv1.DeleteRepositoryResponse{}, gateway.SetHTTPStatus(ctx, http.StatusNoContent)
}

// ListTargets lists a repository's targets.
func (s *ReliabilityWorkspace) ListTargets(ctx context.Context, req *verificationv1.ListTargetsRequest) (*verificationv1.ListTargetsResponse, error) {
	org, id, err := wsRepositoryPath(ctx, req.GetRepositoryId())
	if err != nil {
		return nil, err
	}
	list, err := s.svc.ListTargets(ctx, org, id)
	if err != nil {
		return nil, reliabilityToAPI(err, wsRepositoryTarget)
	}
	out := &verificationv1.ListTargetsResponse{Items: make([]*verificationv1.ReliabilityTarget, 0, len(list))}
	for _, t := range list {
		out.Items = append(out.Items, wsTargetToProto(t))
	}
	return out, nil
}

// CreateTarget adds a target (201).
func (s *ReliabilityWorkspace) CreateTarget(ctx context.Context, req *verificationv1.CreateTargetRequest) (*verificationv1.CreateTargetResponse, error) {
	org, id, err := wsRepositoryPath(ctx, req.GetRepositoryId())
	if err != nil {
		return nil, err
	}
	b := req.GetTarget()
	t, err := s.svc.CreateTarget(ctx, org, id, workspace.NewTarget{Name: b.GetName(), URL: b.GetUrl(), Evaluators: b.GetEvaluators()})
	if err != nil {
		return nil, reliabilityToAPI(err, wsRepositoryTarget)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &verificationv1.CreateTargetResponse{Target: wsTargetToProto(t)}, nil
}

// UpdateTarget changes what the body gives.
func (s *ReliabilityWorkspace) UpdateTarget(ctx context.Context, req *verificationv1.UpdateTargetRequest) (*verificationv1.UpdateTargetResponse, error) {
	org, repositoryID, id, err := wsTargetPath(ctx, req.GetRepositoryId(), req.GetTargetId())
	if err != nil {
		return nil, err
	}
	b := req.GetTarget()
	t, err := s.svc.UpdateTarget(ctx, org, repositoryID, id, workspace.TargetChange{Name: b.Name, URL: b.Url, Evaluators: b.GetEvaluators()})
	if err != nil {
		return nil, reliabilityToAPI(err, wsTargetTarget)
	}
	return &verificationv1.UpdateTargetResponse{Target: wsTargetToProto(t)}, nil
}

// DeleteTarget deletes a target (204).
func (s *ReliabilityWorkspace) DeleteTarget(ctx context.Context, req *verificationv1.DeleteTargetRequest) (*verificationv1.DeleteTargetResponse, error) {
	org, repositoryID, id, err := wsTargetPath(ctx, req.GetRepositoryId(), req.GetTargetId())
	if err != nil {
		return nil, err
	}
	if err := s.svc.DeleteTarget(ctx, org, repositoryID, id); err != nil {
		return nil, reliabilityToAPI(err, wsTargetTarget)
	}
	return &verificationv1.DeleteTargetResponse{}, gateway.SetHTTPStatus(ctx, http.StatusNoContent)
}

// GetTargetSchedule returns a target's schedule.
func (s *ReliabilityWorkspace) GetTargetSchedule(ctx context.Context, req *verificationv1.GetTargetScheduleRequest) (*verificationv1.GetTargetScheduleResponse, error) {
	org, repositoryID, id, err := wsTargetPath(ctx, req.GetRepositoryId(), req.GetTargetId())
	if err != nil {
		return nil, err
	}
	sc, err := s.svc.GetSchedule(ctx, org, repositoryID, id)
	if err != nil {
		return nil, reliabilityToAPI(err, wsTargetTarget)
	}
	return &verificationv1.GetTargetScheduleResponse{Schedule: wsScheduleToProto(sc)}, nil
}

// PutTargetSchedule sets a target's schedule.
func (s *ReliabilityWorkspace) PutTargetSchedule(ctx context.Context, req *verificationv1.PutTargetScheduleRequest) (*verificationv1.PutTargetScheduleResponse, error) {
	org, repositoryID, id, err := wsTargetPath(ctx, req.GetRepositoryId(), req.GetTargetId())
	if err != nil {
		return nil, err
	}
	b := req.GetSchedule()
	put := workspace.SchedulePut{Cron: b.GetCron(), Timezone: b.GetTimezone(), Enabled: b.Enabled}
	if b.IntervalSeconds != nil {
		n := int(b.GetIntervalSeconds())
		put.IntervalSeconds = &n
	}
	sc, err := s.svc.PutSchedule(ctx, org, repositoryID, id, put)
	if err != nil {
		return nil, reliabilityToAPI(err, wsTargetTarget)
	}
	return &verificationv1.PutTargetScheduleResponse{Schedule: wsScheduleToProto(sc)}, nil
}

// GetDeploymentPolicy returns a repository's deployment policy or the default one.
func (s *ReliabilityWorkspace) GetDeploymentPolicy(ctx context.Context, req *verificationv1.GetDeploymentPolicyRequest) (*verificationv1.GetDeploymentPolicyResponse, error) {
	org, id, err := wsRepositoryPath(ctx, req.GetRepositoryId())
	if err != nil {
		return nil, err
	}
	p, err := s.svc.GetPolicy(ctx, org, id)
	if err != nil {
		return nil, reliabilityToAPI(err, wsRepositoryTarget)
	}
	return &verificationv1.GetDeploymentPolicyResponse{Policy: wsPolicyToProto(p)}, nil
}

// PutDeploymentPolicy replaces a repository's deployment policy.
func (s *ReliabilityWorkspace) PutDeploymentPolicy(ctx context.Context, req *verificationv1.PutDeploymentPolicyRequest) (*verificationv1.PutDeploymentPolicyResponse, error) {
	org, author, err := wsCallerKey(ctx)
	if err != nil {
		return nil, err
	}
	id, err := pathID(req.GetRepositoryId(), wsRepositoryTarget)
	if err != nil {
		return nil, err
	}
	b := req.GetPolicy()
	put := workspace.PolicyPut{Policy: wsPolicyFromProto(b), UpdatedBy: b.GetUpdatedBy()}
	if b.ExpectedRevision != nil {
		n := int(b.GetExpectedRevision())
		put.ExpectedRevision = &n
	}
	p, err := s.svc.PutPolicy(ctx, org, id, put, author)
	if err != nil {
		return nil, reliabilityToAPI(err, wsRepositoryTarget)
	}
	return &verificationv1.PutDeploymentPolicyResponse{Policy: wsPolicyToProto(p)}, nil
}

// CompleteInstallation links a code-host installation to the workspace.
func (s *ReliabilityWorkspace) CompleteInstallation(ctx context.Context, req *verificationv1.CompleteInstallationRequest) (*verificationv1.CompleteInstallationResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	b := req.GetCallback()
	res, err := s.svc.CompleteInstallation(ctx, org, workspace.Callback{
		InstallationID: b.GetInstallationId(), SetupAction: b.GetSetupAction(), State: b.State,
	})
	if err != nil {
		return nil, reliabilityToAPI(err, wsNoTarget)
	}
	return &verificationv1.CompleteInstallationResponse{Installation: &verificationv1.InstallationCallbackResponse{
		InstallationId: res.InstallationID, AccountLogin: res.AccountLogin, Linked: res.Linked,
		RepositoriesAdded: int32(res.Added), Repositories: wsRepositoriesToProto(res.Repositories),
	}}, nil
}

// DeleteWorkspace deletes every agent-reliability record of the workspace.
func (s *ReliabilityWorkspace) DeleteWorkspace(ctx context.Context, req *verificationv1.DeleteWorkspaceRequest) (*verificationv1.DeleteWorkspaceResponse, error) {
	org, err := callerOrganization(ctx)
	if err != nil {
		return nil, err
	}
	c, err := s.svc.DeleteWorkspace(ctx, org, req.GetDeletion().GetConfirm())
	if err != nil {
		return nil, reliabilityToAPI(err, wsNoTarget)
	}
	return &verificationv1.DeleteWorkspaceResponse{Deletion: wsDeletionToProto(org, c)}, nil
}
