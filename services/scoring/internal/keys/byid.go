package keys

import (
	"context"

	"github.com/google/uuid"
)

// ByID returns the live key with id, with its account's plan and scopes: OAuth access tokens and the
// control plane's agent access name their key by id. A revoked key yields ErrUnauthenticated, the
// same error as an unknown one (or an id that is not a UUID), so that a caller cannot tell them
// apart. The lookup shares the replica's key cache (DefaultCacheTTL, refreshed ahead), so a
// token-bound call costs no PostgreSQL query for the key while it is cached.
func (s *Service) ByID(ctx context.Context, id string) (Key, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Key{}, ErrUnauthenticated
	}
	return s.lookup(ctx, idPrefix+id)
}
