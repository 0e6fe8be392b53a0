package watch

import (
	"context"
	"slices"
	"strconv"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/readiness"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// SurfaceChanges are the values Rules.SurfaceChanges may hold: SurfaceAny, or a kind of
// surface.Change.
var SurfaceChanges = []string{
	SurfaceAny, surface.ToolAdded, surface.ToolRemoved, surface.DescriptionChanged, surface.ParameterAdded,
	surface.SchemaWidened, surface.AnnotationFlipped,
}

// NewPolicy is a policy request, as the client sent it.
type NewPolicy struct {
	Name  string
	Rules *Rules
}

// PolicyPatch is a PATCH of a policy: the fields the client set.
type PolicyPatch struct {
	Name  *string
	Rules *Rules
}

// CreatePolicy creates a named policy of the caller's organization.
func (s *Service) CreatePolicy(ctx context.Context, c Caller, in NewPolicy) (Policy, error) {
	name, problems := checkName("name", in.Name)
	var rules Rules
	if in.Rules == nil {
		problems = append(problems, fault.Problem{Field: "rules", Message: "Field required", Type: "missing"})
	} else {
		var p []fault.Problem
		rules, p = checkRules(*in.Rules)
		problems = append(problems, p...)
	}
	if len(problems) > 0 {
		return Policy{}, &fault.ValidationError{Problems: problems}
	}
	now := s.clock()
	return s.store.CreatePolicy(ctx, Policy{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: c.OrganizationID, Name: name, Rules: rules,
		CreatedAt: now, UpdatedAt: now,
	})
}

// ListPolicies returns a page of the caller's policies, newest first, and the next cursor.
func (s *Service) ListPolicies(ctx context.Context, c Caller, page Page) ([]Policy, string, error) {
	return s.store.ListPolicies(ctx, c.OrganizationID, page)
}

// GetPolicy returns a policy of the caller's.
func (s *Service) GetPolicy(ctx context.Context, c Caller, id uuid.UUID) (Policy, error) {
	return s.store.GetPolicy(ctx, c.OrganizationID, id)
}

// UpdatePolicy renames a policy or replaces its rules; an empty patch is invalid.
func (s *Service) UpdatePolicy(ctx context.Context, c Caller, id uuid.UUID, in PolicyPatch) (Policy, error) {
	if in.Name == nil && in.Rules == nil {
		return Policy{}, fault.Invalid("", "value_error", "Set at least one of name, rules")
	}
	change := PolicyChange{At: s.clock()}
	var problems []fault.Problem
	if in.Name != nil {
		name, p := checkName("name", *in.Name)
		problems = append(problems, p...)
		change.Name = &name
	}
	if in.Rules != nil {
		rules, p := checkRules(*in.Rules)
		problems = append(problems, p...)
		change.Rules = &rules
	}
	if len(problems) > 0 {
		return Policy{}, &fault.ValidationError{Problems: problems}
	}
	return s.store.UpdatePolicy(ctx, c.OrganizationID, id, change)
}

// DeletePolicy deletes a policy no watch uses (archived watches drop theirs).
func (s *Service) DeletePolicy(ctx context.Context, c Caller, id uuid.UUID) error {
	return s.store.DeletePolicy(ctx, c.OrganizationID, id)
}

// checkRules validates rules and returns them with each list's values once, in the order given.
func checkRules(in Rules) (Rules, []fault.Problem) {
	var problems []fault.Problem
	out := Rules{NoWorseVerdict: in.NoWorseVerdict}
	if in.MinScore != nil {
		if *in.MinScore < 0 || *in.MinScore > 100 {
			problems = append(problems, fault.Problem{Field: "rules.minScore",
				Message: "Input should be between 0 and 100", Type: "value_error"})
		}
		score := *in.MinScore
		out.MinScore = &score
	}
	var p []fault.Problem
	out.RequiredChecks, p = checkIDs("rules.requiredChecks", in.RequiredChecks, checkIDsKnown, "Unknown check id")
	problems = append(problems, p...)
	out.ForbiddenFindings, p = checkIDs("rules.forbiddenFindings", in.ForbiddenFindings, readinessRuleKnown, "Unknown readiness rule id")
	problems = append(problems, p...)
	out.SurfaceChanges, p = checkIDs("rules.surfaceChanges", in.SurfaceChanges,
		func(v string) bool { return slices.Contains(SurfaceChanges, v) },
		"Input should be one of any, tool_added, tool_removed, description_changed, parameter_added, schema_widened, annotation_flipped")
	problems = append(problems, p...)
	return out, problems
}

// checkIDs keeps each known value of a list once and reports the unknown ones.
func checkIDs(field string, in []string, known func(string) bool, message string) ([]string, []fault.Problem) {
	var problems []fault.Problem
	var out []string
	for i, v := range in {
		switch {
		case !known(v):
			problems = append(problems, fault.Problem{Field: field + "." + strconv.Itoa(i), Message: message + ": " + strconv.Quote(v), Type: "value_error"})
		case !slices.Contains(out, v):
			out = append(out, v)
		}
	}
	return out, problems
}

// checkIDsKnown reports whether id names a check of the conformance audit's catalog.
func checkIDsKnown(id string) bool {
	return slices.ContainsFunc(audit.Catalog, func(d audit.CheckDef) bool { return d.ID == id })
}

// readinessRuleKnown reports whether id names a readiness rule.
func readinessRuleKnown(id string) bool {
	return slices.ContainsFunc(readiness.Rules, func(r readiness.Rule) bool { return r.ID == id })
}
