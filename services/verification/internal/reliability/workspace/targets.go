package workspace

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
)

// Bounds of a target's fields.
const (
	maxTargetName = 100
	maxTargetURL  = 2048
)

// NewTarget is a target to add.
type NewTarget struct {
	Name, URL  string
	Evaluators []string
}

func checkTargetName(raw string) (string, []fault.Problem) {
	n := strings.TrimSpace(raw)
	switch {
	case n == "":
		return "", []fault.Problem{{Field: "name", Message: "Field required", Type: "missing"}}
	case utf8.RuneCountInString(n) > maxTargetName:
		return "", []fault.Problem{{Field: "name", Message: "String should have at most 100 characters", Type: "string_too_long"}}
	case !utf8.ValidString(n) || strings.ContainsFunc(n, unicode.IsControl):
		return "", []fault.Problem{{Field: "name", Message: "A name has no control characters", Type: "string_pattern_mismatch"}}
	}
	return n, nil
}

// checkEvaluators returns the evaluators in their canonical order (mcp, readiness), both when
// raw is empty.
func checkEvaluators(raw []string) ([]string, []fault.Problem) {
	if len(raw) == 0 {
		return []string{EvaluatorMCP, EvaluatorReadiness}, nil
	}
	if len(raw) > 10 {
		return nil, []fault.Problem{{Field: "evaluators", Message: "List should have at most 2 items", Type: "too_long"}}
	}
	var problems []fault.Problem
	for i, e := range raw {
		if e != EvaluatorMCP && e != EvaluatorReadiness {
			problems = append(problems, fault.Problem{Field: fmt.Sprintf("evaluators.%d", i), Message: "Input should be 'mcp' or 'readiness'", Type: "enum"})
		}
	}
	if problems != nil {
		return nil, problems
	}
	var out []string
	for _, e := range []string{EvaluatorMCP, EvaluatorReadiness} {
		if slices.Contains(raw, e) {
			out = append(out, e)
		}
	}
	return out, nil
}

// checkTargetURL applies the audit engine's target checks to raw and returns it normalised
// (scheme and host in lower case, no default port), as the watch API does. A refusal is a problem
// of the field url whose type is the refusal's code; err is only the service's own failure.
func (s *Service) checkTargetURL(ctx context.Context, raw string) (string, []fault.Problem, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", []fault.Problem{{Field: "url", Message: "Field required", Type: "missing"}}, nil
	}
	if len(raw) > maxTargetURL {
		return "", []fault.Problem{{Field: "url", Message: "URL should have at most 2048 characters", Type: "string_too_long"}}, nil
	}
	if err := s.checkTarget(ctx, raw); err != nil {
		if t, ok := safehttp.AsTargetError(err); ok {
			return "", []fault.Problem{{Field: "url", Message: t.Message, Type: t.Code}}, nil
		}
		return "", nil, err
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", []fault.Problem{{Field: "url", Message: "Invalid URL", Type: safehttp.TargetURLRequired}}, nil
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	if port := u.Port(); port == "443" || port == "" {
		u.Host = host
		if strings.Contains(host, ":") {
			u.Host = "[" + host + "]"
		}
	} else {
		u.Host = net.JoinHostPort(host, port)
	}
	return u.String(), nil, nil
}

// planTargets is a plan's cap of a workspace's targets (0: none); an unknown plan reads as free.
func planTargets(plan string) int { return reliability.PlanOf(plan).Targets }

// ListTargets lists a repository's targets.
func (s *Service) ListTargets(ctx context.Context, org, repositoryID uuid.UUID) ([]Target, error) {
	return s.store.ListTargets(ctx, org, repositoryID)
}

// CreateTarget adds a target to a repository, within the plan's limit.
func (s *Service) CreateTarget(ctx context.Context, org, repositoryID uuid.UUID, n NewTarget) (Target, error) {
	// The repository first: an unknown repository is 404 whatever the body says.
	if _, err := s.store.GetRepository(ctx, org, repositoryID); err != nil {
		return Target{}, err
	}
	var problems []fault.Problem
	name, p := checkTargetName(n.Name)
	problems = append(problems, p...)
	evaluators, p := checkEvaluators(n.Evaluators)
	problems = append(problems, p...)
	target, p, err := s.checkTargetURL(ctx, n.URL)
	if err != nil {
		return Target{}, err
	}
	problems = append(problems, p...)
	if err := invalid(problems); err != nil {
		return Target{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Target{}, err
	}
	at := s.clock()
	return s.store.CreateTarget(ctx, Target{
		ID: id, OrganizationID: org, RepositoryID: repositoryID, Name: name, URL: target, Evaluators: evaluators,
		CreatedAt: at, UpdatedAt: at,
	}, planTargets)
}

// UpdateTarget changes what c gives.
func (s *Service) UpdateTarget(ctx context.Context, org, repositoryID, id uuid.UUID, c TargetChange) (Target, error) {
	if _, err := s.store.GetTarget(ctx, org, repositoryID, id); err != nil {
		return Target{}, err // 404 before 422
	}
	var problems []fault.Problem
	if c.Name != nil {
		n, p := checkTargetName(*c.Name)
		problems = append(problems, p...)
		c.Name = &n
	}
	if len(c.Evaluators) > 0 {
		e, p := checkEvaluators(c.Evaluators)
		problems = append(problems, p...)
		c.Evaluators = e
	}
	if c.URL != nil {
		u, p, err := s.checkTargetURL(ctx, *c.URL)
		if err != nil {
			return Target{}, err
		}
		problems = append(problems, p...)
		c.URL = &u
	}
	if err := invalid(problems); err != nil {
		return Target{}, err
	}
	c.At = s.clock()
	return s.store.UpdateTarget(ctx, org, repositoryID, id, c)
}

// DeleteTarget deletes a target with its schedule, runs and their trails.
func (s *Service) DeleteTarget(ctx context.Context, org, repositoryID, id uuid.UUID) error {
	return s.store.DeleteTarget(ctx, org, repositoryID, id)
}
