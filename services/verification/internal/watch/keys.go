package watch

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// KeyKind starts every watch API key ("wk_..."): a token system apart from the intelligence keys
// ("vk_...").
const KeyKind = "wk"

// Key bounds.
const (
	maxName = 200
	// MaxKeyLifetime bounds expiresInSeconds: one year.
	MaxKeyLifetime = 365 * 24 * time.Hour
)

// Scopes lists the scopes a key may hold.
var Scopes = []string{ScopeRead, ScopeWrite}

// NewKey is a key request, as the client sent it.
type NewKey struct {
	OrganizationID string
	Name           string
	Scopes         []string
	// ExpiresInSeconds, when set, ends the key's life (1..MaxKeyLifetime).
	ExpiresInSeconds *int64
}

// Active reports whether the key is neither revoked nor expired at now.
func (k Key) Active(now time.Time) bool {
	return k.RevokedAt == nil && (k.ExpiresAt == nil || now.Before(*k.ExpiresAt))
}

// HasScope reports whether the caller holds one of scopes.
func (c Caller) HasScope(scopes ...string) bool {
	for _, s := range scopes {
		if slices.Contains(c.Scopes, s) {
			return true
		}
	}
	return false
}

// hashKey is the stored form of a key: its SHA-256. A fast hash is right here: the secret has 256
// bits of entropy, so there is nothing to brute-force.
func hashKey(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// IssueKey issues a watch API key to an organization and returns it with its secret, which is not
// stored.
func (s *Service) IssueKey(ctx context.Context, in NewKey) (Key, string, error) {
	var problems []fault.Problem
	org, err := uuid.Parse(strings.TrimSpace(in.OrganizationID))
	switch {
	case strings.TrimSpace(in.OrganizationID) == "":
		problems = append(problems, fault.Problem{Field: "organizationId", Message: "Field required", Type: "missing"})
	case err != nil:
		problems = append(problems, fault.Problem{Field: "organizationId", Message: "Input should be a valid UUID", Type: "uuid_parsing"})
	}
	name, p := checkName("name", in.Name)
	problems = append(problems, p...)
	scopes, p := checkScopes(in.Scopes)
	problems = append(problems, p...)
	now := s.clock()
	var expires *time.Time
	if in.ExpiresInSeconds != nil {
		if n := *in.ExpiresInSeconds; n < 1 || n > int64(MaxKeyLifetime/time.Second) {
			problems = append(problems, fault.Problem{Field: "expiresInSeconds",
				Message: "Input should be between 1 and 31536000", Type: "value_error"})
		} else {
			at := now.Add(time.Duration(n) * time.Second)
			expires = &at
		}
	}
	if len(problems) > 0 {
		return Key{}, "", &fault.ValidationError{Problems: problems}
	}
	issued, err := auth.NewAPIKey(KeyKind)
	if err != nil {
		return Key{}, "", err
	}
	k, err := s.store.CreateKey(ctx, Key{
		ID: uuid.Must(uuid.NewV7()), OrganizationID: org, Name: name, Prefix: issued.Prefix, Scopes: scopes,
		CreatedAt: now, ExpiresAt: expires,
	}, hashKey(issued.Secret))
	if err != nil {
		return Key{}, "", err
	}
	return k, issued.Secret, nil
}

// checkName trims a required name of 1..200 characters.
func checkName(field, name string) (string, []fault.Problem) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", []fault.Problem{{Field: field, Message: "Field required", Type: "missing"}}
	case utf8.RuneCountInString(name) > maxName:
		return "", []fault.Problem{{Field: field, Message: "String should have at most 200 characters", Type: "string_too_long"}}
	}
	return name, nil
}

// checkScopes keeps each known scope once, in the order of Scopes.
func checkScopes(in []string) ([]string, []fault.Problem) {
	if len(in) == 0 {
		return nil, []fault.Problem{{Field: "scopes", Message: "List should have at least 1 item", Type: "too_short"}}
	}
	var problems []fault.Problem
	for i, sc := range in {
		if !slices.Contains(Scopes, sc) {
			problems = append(problems, fault.Problem{Field: "scopes." + strconv.Itoa(i),
				Message: "Input should be 'watch:read' or 'watch:write'", Type: "enum"})
		}
	}
	var out []string
	for _, sc := range Scopes {
		if slices.Contains(in, sc) {
			out = append(out, sc)
		}
	}
	return out, problems
}

// ListKeys lists an organization's keys, without secrets.
func (s *Service) ListKeys(ctx context.Context, organizationID uuid.UUID) ([]Key, error) {
	return s.store.ListKeys(ctx, organizationID)
}

// RevokeKey revokes a key at once; revoking it again is not an error.
func (s *Service) RevokeKey(ctx context.Context, id uuid.UUID) error {
	return s.store.RevokeKey(ctx, id, s.clock())
}

// Authenticate returns the caller behind a watch API key: fault.ErrUnauthenticated for a token that
// is no key or a revoked one, fault.ErrWatchKeyExpired for a key past its expiry. Every call reads
// the database, so a revocation works at once on every replica.
func (s *Service) Authenticate(ctx context.Context, token string) (Caller, error) {
	if !strings.HasPrefix(token, KeyKind+"_") {
		return Caller{}, fault.ErrUnauthenticated
	}
	hash := hashKey(token)
	k, stored, err := s.store.KeyByHash(ctx, hash)
	switch {
	case errors.Is(err, fault.ErrNotFound):
		return Caller{}, fault.ErrUnauthenticated
	case err != nil:
		return Caller{}, err
	case subtle.ConstantTimeCompare(hash, stored) != 1, k.RevokedAt != nil:
		return Caller{}, fault.ErrUnauthenticated
	case !k.Active(s.now()):
		return Caller{}, fault.ErrWatchKeyExpired
	}
	return Caller{OrganizationID: k.OrganizationID, KeyID: k.ID, Scopes: k.Scopes}, nil
}
