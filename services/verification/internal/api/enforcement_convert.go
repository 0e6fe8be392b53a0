package api

import (
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/enforcement"
)

// enforcementRulesFromProto reads a body's rules; nil when the body has none.
func enforcementRulesFromProto(r *verificationv1.PolicyRules) *enforcement.Rules {
	if r == nil {
		return nil
	}
	patterns := func(p *verificationv1.PolicyPatterns) enforcement.Patterns {
		return enforcement.Patterns{Allow: p.GetAllow(), Deny: p.GetDeny()}
	}
	out := &enforcement.Rules{
		DefaultAction: r.GetDefaultAction(), Servers: patterns(r.GetServers()), MaxChangeRisk: r.GetMaxChangeRisk(),
		AllowDeprecated: r.GetAllowDeprecated(), Transports: r.GetTransports(), RemoteHosts: patterns(r.GetRemoteHosts()),
		Audit: enforcement.AuditRules{Require: r.GetAudit().GetRequire(), MinVerdict: r.GetAudit().GetMinVerdict(),
			MinReadinessScore: int(r.GetAudit().GetMinReadinessScore())},
		Tools:    enforcement.ToolRules{Names: patterns(r.GetTools().GetNames()), Approved: r.GetTools().GetApproved()},
		PinTools: r.GetPinTools(),
	}
	for _, a := range r.GetTools().GetDenyAnnotations() {
		out.Tools.DenyAnnotations = append(out.Tools.DenyAnnotations, enforcement.AnnotationRule{Annotation: a.GetAnnotation(), Value: a.GetValue()})
	}
	return out
}

func enforcementRulesToProto(r enforcement.Rules) *verificationv1.PolicyRules {
	patterns := func(p enforcement.Patterns) *verificationv1.PolicyPatterns {
		return &verificationv1.PolicyPatterns{Allow: p.Allow, Deny: p.Deny}
	}
	out := &verificationv1.PolicyRules{
		DefaultAction: r.DefaultAction, Servers: patterns(r.Servers), MaxChangeRisk: r.MaxChangeRisk, AllowDeprecated: r.AllowDeprecated,
		Transports: r.Transports, RemoteHosts: patterns(r.RemoteHosts),
		Audit: &verificationv1.PolicyAuditRules{Require: r.Audit.Require, MinVerdict: r.Audit.MinVerdict,
			MinReadinessScore: int32(r.Audit.MinReadinessScore)},
		Tools:    &verificationv1.PolicyToolRules{Names: patterns(r.Tools.Names), Approved: r.Tools.Approved},
		PinTools: r.PinTools,
	}
	for _, a := range r.Tools.DenyAnnotations {
		out.Tools.DenyAnnotations = append(out.Tools.DenyAnnotations, &verificationv1.PolicyAnnotationRule{Annotation: a.Annotation, Value: a.Value})
	}
	return out
}

func enforcementVersionToProto(v enforcement.Version) *verificationv1.PolicyVersion {
	return &verificationv1.PolicyVersion{
		Id: v.ID.String(), PolicyId: v.PolicyID.String(), Version: int32(v.Version), Rules: enforcementRulesToProto(v.Rules),
		RulesSha256: v.RulesSHA256, Note: v.Note, CreatedAt: ts(v.CreatedAt),
	}
}

func enforcementPolicyToProto(p enforcement.Policy) *verificationv1.Policy {
	out := &verificationv1.Policy{
		Id: p.ID.String(), Name: p.Name, Description: p.Description, LatestVersion: int32(p.LatestVersion()),
		Versions: make([]*verificationv1.PolicyVersion, 0, len(p.Versions)), CreatedAt: ts(p.CreatedAt),
	}
	for _, v := range p.Versions {
		out.Versions = append(out.Versions, enforcementVersionToProto(v))
	}
	return out
}

// enforcementSnapshotToProto writes the content with the same names and values as its canonical JSON, so that
// a client can hash the content it reads (RFC 8785) and find content_sha256.
func enforcementSnapshotToProto(s enforcement.Snapshot) *verificationv1.Snapshot {
	c := &verificationv1.SnapshotContent{
		Format: s.Content.Format, RulesSha256: s.Content.RulesSHA256, Pinned: s.Content.Pinned,
		Servers: make([]*verificationv1.ServerDecision, 0, len(s.Content.Servers)),
	}
	for _, srv := range s.Content.Servers {
		sd := &verificationv1.ServerDecision{
			Server: srv.Server, Version: srv.Version, Status: srv.Status, RegistrySha256: srv.RegistrySHA256, ChangeRisk: srv.ChangeRisk,
			Decision: srv.Decision, Rule: srv.Rule,
			Remotes:  make([]*verificationv1.RemoteDecision, 0, len(srv.Remotes)),
			Packages: make([]*verificationv1.PackageDecision, 0, len(srv.Packages)),
		}
		for _, r := range srv.Remotes {
			rd := &verificationv1.RemoteDecision{
				Type: r.Type, Url: r.URL, Host: r.Host, Decision: r.Decision, Rule: r.Rule, AuditVerdict: r.AuditVerdict,
				ToolsListed: r.ToolsListed, Tools: make([]*verificationv1.ToolDecision, 0, len(r.Tools)),
			}
			if r.ReadinessScore != nil {
				score := int32(*r.ReadinessScore)
				rd.ReadinessScore = &score
			}
			for _, t := range r.Tools {
				rd.Tools = append(rd.Tools, &verificationv1.ToolDecision{
					Name: t.Name, Decision: t.Decision, Rule: t.Rule, DescriptionSha256: t.DescriptionSHA256,
					InputSchemaSha256: t.InputSchemaSHA256, OutputSchemaSha256: t.OutputSchemaSHA256, AnnotationsSha256: t.AnnotationsSHA256,
				})
			}
			sd.Remotes = append(sd.Remotes, rd)
		}
		for _, p := range srv.Packages {
			sd.Packages = append(sd.Packages, &verificationv1.PackageDecision{
				RegistryType: p.RegistryType, Identifier: p.Identifier, Version: p.Version, Transport: p.Transport, Decision: p.Decision, Rule: p.Rule,
			})
		}
		c.Servers = append(c.Servers, sd)
	}
	return &verificationv1.Snapshot{
		Id: s.ID.String(), PolicyId: s.PolicyID.String(), PolicyVersionId: s.PolicyVersionID.String(), Version: int32(s.Version),
		ContentSha256: s.ContentSHA256,
		Summary: &verificationv1.SnapshotSummary{
			ServersAllowed: int32(s.Summary.ServersAllowed), ServersDenied: int32(s.Summary.ServersDenied),
			ToolsAllowed: int32(s.Summary.ToolsAllowed), ToolsDenied: int32(s.Summary.ToolsDenied),
		},
		Content: c, CreatedAt: ts(s.CreatedAt),
	}
}

func enforcementArtifactToProto(a enforcement.Artifact) *verificationv1.EnforcementArtifact {
	out := &verificationv1.EnforcementArtifact{
		Id: a.ID.String(), SnapshotId: a.SnapshotID.String(), PolicyId: a.PolicyID.String(), Version: int32(a.Version), Format: a.Format,
		Sha256: a.SHA256, Files: make([]*verificationv1.EnforcementArtifactFile, 0, len(a.Files)), CreatedAt: ts(a.CreatedAt),
	}
	for _, f := range a.Files {
		out.Files = append(out.Files, &verificationv1.EnforcementArtifactFile{
			Path: f.Path, MediaType: f.MediaType, Sha256: f.SHA256, Size: int32(f.Size), Content: string(f.Content),
		})
	}
	return out
}
