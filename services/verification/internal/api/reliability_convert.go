package api

import (
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/workspace"
)

func wsRepositoryToProto(r workspace.Repository) *verificationv1.ReliabilityRepository {
	return &verificationv1.ReliabilityRepository{
		Id: r.ID.String(), FullName: r.FullName, Provider: r.Provider, ExternalId: r.ExternalID,
		InstallationId: r.InstallationID, DefaultBranch: r.DefaultBranch, Description: r.Description,
		TargetCount: int32(r.TargetCount), CreatedAt: ts(r.CreatedAt), UpdatedAt: ts(r.UpdatedAt),
	}
}

func wsRepositoriesToProto(list []workspace.Repository) []*verificationv1.ReliabilityRepository {
	out := make([]*verificationv1.ReliabilityRepository, 0, len(list))
	for _, r := range list {
		out = append(out, wsRepositoryToProto(r))
	}
	return out
}

func wsTargetToProto(t workspace.Target) *verificationv1.ReliabilityTarget {
	return &verificationv1.ReliabilityTarget{
		Id: t.ID.String(), RepositoryId: t.RepositoryID.String(), Name: t.Name, Url: t.URL, Evaluators: t.Evaluators,
		CreatedAt: ts(t.CreatedAt), UpdatedAt: ts(t.UpdatedAt),
	}
}

func wsScheduleToProto(s workspace.Schedule) *verificationv1.ReliabilityTargetSchedule {
	out := &verificationv1.ReliabilityTargetSchedule{
		TargetId: s.TargetID.String(), Configured: s.Configured, Enabled: s.Enabled, Cron: s.Cron, Timezone: s.Timezone,
		NextDueAt: optionalTS(s.NextDueAt), LastEnqueuedAt: optionalTS(s.LastEnqueuedAt),
	}
	if s.Configured {
		out.UpdatedAt = ts(s.UpdatedAt)
	}
	if s.IntervalSeconds != 0 {
		n := int32(s.IntervalSeconds)
		out.IntervalSeconds = &n
	}
	return out
}

func wsPolicyToProto(p workspace.DeploymentPolicy) *verificationv1.ReliabilityDeploymentPolicy {
	out := &verificationv1.ReliabilityDeploymentPolicy{
		RepositoryId: p.RepositoryID.String(), DefaultAction: string(p.Policy.DefaultAction), IsDefault: p.IsDefault,
		Revision: int32(p.Revision), UpdatedBy: p.UpdatedBy, UpdatedAt: optionalTS(p.UpdatedAt),
		Rules: make([]*verificationv1.ReliabilityPolicyRule, 0, len(p.Policy.Rules)),
	}
	for _, r := range p.Policy.Rules {
		out.Rules = append(out.Rules, &verificationv1.ReliabilityPolicyRule{
			Change: r.Change, Risk: string(r.Risk), MinDelta: int32(r.MinDelta), Action: string(r.Action),
		})
	}
	return out
}

func wsPolicyFromProto(b *verificationv1.DeploymentPolicyPut) reliability.Policy {
	p := reliability.Policy{DefaultAction: reliability.Decision(b.GetDefaultAction()), Rules: make([]reliability.Rule, 0, len(b.GetRules()))}
	for _, r := range b.GetRules() {
		p.Rules = append(p.Rules, reliability.Rule{
			Change: r.GetChange(), Risk: reliability.Risk(r.GetRisk()), MinDelta: int(r.GetMinDelta()), Action: reliability.Decision(r.GetAction()),
		})
	}
	return p
}

func wsDeletionToProto(org uuid.UUID, c workspace.DeletionCounts) *verificationv1.WorkspaceDeletionResponse {
	return &verificationv1.WorkspaceDeletionResponse{
		WorkspaceId: org.String(),
		Deleted: &verificationv1.WorkspaceDeletionCounts{
			Repositories: int32(c.Repositories), Targets: int32(c.Targets), Schedules: int32(c.Schedules),
			DeploymentPolicies: int32(c.DeploymentPolicies), Runs: int32(c.Runs), RunApprovals: int32(c.RunApprovals),
			Baselines: int32(c.Baselines), RunEvidence: int32(c.RunEvidence), Installations: int32(c.Installations),
		},
		DeletedAt: timestamppb.New(time.Now()),
	}
}
