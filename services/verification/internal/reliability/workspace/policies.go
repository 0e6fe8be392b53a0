package workspace

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
)

// maxUpdatedBy bounds a policy's updated_by.
const maxUpdatedBy = 200

// GetPolicy returns a repository's deployment policy, or the default one.
func (s *Service) GetPolicy(ctx context.Context, org, repositoryID uuid.UUID) (DeploymentPolicy, error) {
	return s.store.GetPolicy(ctx, org, repositoryID)
}

// PutPolicy validates and stores a repository's deployment policy as its next revision; keyName
// names the caller's key, the author when p names none.
func (s *Service) PutPolicy(ctx context.Context, org, repositoryID uuid.UUID, p PolicyPut, keyName string) (DeploymentPolicy, error) {
	if _, err := s.store.GetRepository(ctx, org, repositoryID); err != nil {
		return DeploymentPolicy{}, err // 404 before 422
	}
	if p.Policy.Rules == nil {
		p.Policy.Rules = []reliability.Rule{}
	}
	if err := p.Policy.Validate(); err != nil {
		// Validate names the field as rules[2].change: the problem's path is rules.2.change.
		field, msg, _ := strings.Cut(err.Error(), ": ")
		return DeploymentPolicy{}, fault.Invalid(strings.NewReplacer("[", ".", "]", "").Replace(field), "value_error", msg)
	}
	p.UpdatedBy = strings.TrimSpace(p.UpdatedBy)
	switch {
	case utf8.RuneCountInString(p.UpdatedBy) > maxUpdatedBy:
		return DeploymentPolicy{}, fault.Invalid("updated_by", "string_too_long", "String should have at most 200 characters")
	case strings.ContainsFunc(p.UpdatedBy, unicode.IsControl) || !utf8.ValidString(p.UpdatedBy):
		return DeploymentPolicy{}, fault.Invalid("updated_by", "string_pattern_mismatch", "No control characters")
	case p.UpdatedBy == "":
		p.UpdatedBy = keyName
	}
	if p.ExpectedRevision != nil && *p.ExpectedRevision < 0 {
		return DeploymentPolicy{}, fault.Invalid("expected_revision", "greater_than_equal", "Input should be greater than or equal to 0")
	}
	return s.store.PutPolicy(ctx, org, repositoryID, p, s.clock())
}
