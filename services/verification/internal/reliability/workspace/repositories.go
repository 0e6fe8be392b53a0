package workspace

import (
	"context"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Bounds of a repository's fields.
const (
	maxBranch      = 255
	maxDescription = 1000
)

// fullNamePattern is owner/name as code hosts allow them: letters, digits, '-', '_' and '.'.
var fullNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$`)

// NewRepository is a repository added by hand.
type NewRepository struct {
	FullName, DefaultBranch, Description string
}

func checkFullName(raw string) (string, []fault.Problem) {
	name := strings.TrimSpace(raw)
	switch {
	case name == "":
		return "", []fault.Problem{{Field: "full_name", Message: "Field required", Type: "missing"}}
	case !fullNamePattern.MatchString(name) || strings.HasPrefix(name, "./") || strings.HasPrefix(name, "../") ||
		strings.HasSuffix(name, "/.") || strings.HasSuffix(name, "/.."):
		return "", []fault.Problem{{Field: "full_name", Message: "want owner/name: letters, digits, '-', '_' and '.', at most 100 each", Type: "string_pattern_mismatch"}}
	}
	return name, nil
}

func checkBranch(raw string) (string, []fault.Problem) {
	b := strings.TrimSpace(raw)
	switch {
	case b == "":
		return "", []fault.Problem{{Field: "default_branch", Message: "String should have at least 1 character", Type: "string_too_short"}}
	case utf8.RuneCountInString(b) > maxBranch:
		return "", []fault.Problem{{Field: "default_branch", Message: "String should have at most 255 characters", Type: "string_too_long"}}
	case strings.ContainsFunc(b, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) || !utf8.ValidString(b):
		return "", []fault.Problem{{Field: "default_branch", Message: "A branch name has no spaces or control characters", Type: "string_pattern_mismatch"}}
	}
	return b, nil
}

func checkDescription(raw string) (string, []fault.Problem) {
	if utf8.RuneCountInString(raw) > maxDescription {
		return "", []fault.Problem{{Field: "description", Message: "String should have at most 1000 characters", Type: "string_too_long"}}
	}
	return strings.TrimSpace(raw), nil
}

func invalid(problems []fault.Problem) error {
	if len(problems) == 0 {
		return nil
	}
	return &fault.ValidationError{Problems: problems}
}

// ListRepositories lists the workspace's repositories, oldest first.
func (s *Service) ListRepositories(ctx context.Context, org uuid.UUID) ([]Repository, error) {
	return s.store.ListRepositories(ctx, org)
}

// CreateRepository adds a repository by hand.
func (s *Service) CreateRepository(ctx context.Context, org uuid.UUID, n NewRepository) (Repository, error) {
	var problems []fault.Problem
	name, p := checkFullName(n.FullName)
	problems = append(problems, p...)
	branch := "main"
	if strings.TrimSpace(n.DefaultBranch) != "" {
		branch, p = checkBranch(n.DefaultBranch)
		problems = append(problems, p...)
	}
	desc, p := checkDescription(n.Description)
	problems = append(problems, p...)
	if err := invalid(problems); err != nil {
		return Repository{}, err
	}
	at := s.clock()
	id, err := uuid.NewV7()
	if err != nil {
		return Repository{}, err
	}
	return s.store.CreateRepository(ctx, Repository{
		ID: id, OrganizationID: org, FullName: name, Provider: ProviderManual, DefaultBranch: branch,
		Description: desc, CreatedAt: at, UpdatedAt: at,
	})
}

// GetRepository returns a repository of the workspace.
func (s *Service) GetRepository(ctx context.Context, org, id uuid.UUID) (Repository, error) {
	return s.store.GetRepository(ctx, org, id)
}

// UpdateRepository changes what c gives.
func (s *Service) UpdateRepository(ctx context.Context, org, id uuid.UUID, c RepositoryChange) (Repository, error) {
	var problems []fault.Problem
	if c.FullName != nil {
		name, p := checkFullName(*c.FullName)
		problems = append(problems, p...)
		c.FullName = &name
	}
	if c.DefaultBranch != nil {
		b, p := checkBranch(*c.DefaultBranch)
		problems = append(problems, p...)
		c.DefaultBranch = &b
	}
	if c.Description != nil {
		d, p := checkDescription(*c.Description)
		problems = append(problems, p...)
		c.Description = &d
	}
	if err := invalid(problems); err != nil {
		return Repository{}, err
	}
	c.At = s.clock()
	return s.store.UpdateRepository(ctx, org, id, c)
}

// DeleteRepository deletes a repository and everything under it.
func (s *Service) DeleteRepository(ctx context.Context, org, id uuid.UUID) error {
	return s.store.DeleteRepository(ctx, org, id)
}
