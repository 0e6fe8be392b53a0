// Package organizations holds organizations and their API keys: the use cases behind the admin routes and
// the bearer-token check of every intelligence route.
package organizations

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// KeyKind starts every issued key ("vk_..."), so that a leaked one is recognisable.
const KeyKind = "vk"

// maxName bounds organization and key names.
const maxName = 200

// Organization owns API keys, webhooks and watches.
type Organization struct {
	ID        uuid.UUID
	Name      string
	CreatedAt time.Time
}

// APIKey is a stored key: never its secret.
type APIKey struct {
	ID             uuid.UUID
	OrganizationID uuid.UUID
	Name           string
	Prefix         string
	CreatedAt      time.Time
	RevokedAt      *time.Time
}

// Store persists organizations and keys. Lookups return fault.ErrNotFound for a missing row.
type Store interface {
	CreateOrganization(ctx context.Context, o Organization) (Organization, error)
	GetOrganization(ctx context.Context, id uuid.UUID) (Organization, error)
	CreateAPIKey(ctx context.Context, k APIKey, hash string) (APIKey, error)
	ListAPIKeys(ctx context.Context, organizationID uuid.UUID) ([]APIKey, error)
	// RevokeAPIKey marks the key revoked (keeping an earlier revocation time).
	RevokeAPIKey(ctx context.Context, organizationID, keyID uuid.UUID) error
	// ActiveKeyByHash returns the unrevoked key with this hash and its organization.
	ActiveKeyByHash(ctx context.Context, hash string) (APIKey, Organization, error)
}

// Service runs the organization use cases.
type Service struct {
	store Store
}

// NewService returns the use cases over store.
func NewService(store Store) *Service { return &Service{store: store} }

func checkName(field, name string, required bool) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "" && required:
		return "", fault.Invalid(field, "value_error", "Field required")
	case utf8.RuneCountInString(name) > maxName:
		return "", fault.Invalid(field, "value_error", "String should have at most 200 characters")
	}
	return name, nil
}

// CreateOrganization creates an organization.
func (s *Service) CreateOrganization(ctx context.Context, name string) (Organization, error) {
	name, err := checkName("name", name, true)
	if err != nil {
		return Organization{}, err
	}
	return s.store.CreateOrganization(ctx, Organization{ID: uuid.Must(uuid.NewV7()), Name: name})
}

// IssueKey issues a key for the organization and returns it with its secret, which is not stored.
func (s *Service) IssueKey(ctx context.Context, organizationID uuid.UUID, name string) (APIKey, string, error) {
	name, err := checkName("name", name, false)
	if err != nil {
		return APIKey{}, "", err
	}
	if name == "" {
		name = "default"
	}
	if _, err := s.store.GetOrganization(ctx, organizationID); err != nil {
		return APIKey{}, "", err
	}
	issued, err := auth.NewAPIKey(KeyKind)
	if err != nil {
		return APIKey{}, "", err
	}
	k, err := s.store.CreateAPIKey(ctx, APIKey{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: organizationID, Name: name, Prefix: issued.Prefix,
	}, issued.Hash)
	return k, issued.Secret, err
}

// ListKeys lists the organization's keys.
func (s *Service) ListKeys(ctx context.Context, organizationID uuid.UUID) ([]APIKey, error) {
	if _, err := s.store.GetOrganization(ctx, organizationID); err != nil {
		return nil, err
	}
	return s.store.ListAPIKeys(ctx, organizationID)
}

// RevokeKey revokes a key; revoking it again is not an error.
func (s *Service) RevokeKey(ctx context.Context, organizationID, keyID uuid.UUID) error {
	return s.store.RevokeAPIKey(ctx, organizationID, keyID)
}

// Authenticate returns the key and organization behind a bearer token. Every call reads the database,
// so a revoked key stops working at once, on every replica.
func (s *Service) Authenticate(ctx context.Context, token string) (APIKey, Organization, error) {
	if !strings.HasPrefix(token, KeyKind+"_") {
		return APIKey{}, Organization{}, fault.ErrUnauthenticated
	}
	k, o, err := s.store.ActiveKeyByHash(ctx, auth.HashAPIKey(token))
	if errors.Is(err, fault.ErrNotFound) {
		return APIKey{}, Organization{}, fault.ErrUnauthenticated
	}
	return k, o, err
}
