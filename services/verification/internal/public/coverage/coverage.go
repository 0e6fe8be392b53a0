// Package coverage computes the coverage summary (GET /v1/coverage-summary): what the registry sync
// tracks, which listed remotes were audited lately, the changes of the last day and the last sync of
// each registry. A replica caches the summary for a few seconds: the counts scan the registry
// tables, and the route is public.
package coverage

import (
	"context"
	"sync"
	"time"
)

// Summary is the coverage at GeneratedAt.
type Summary struct {
	ServersTracked     int64
	ServersWithRemotes int64
	// Audited7d and Audited30d count servers with a listed remote that an audit checked within 7
	// and 30 days (the audits table, by URL).
	Audited7d  int64
	Audited30d int64
	Changes24h ChangeCounts
	Registries []Registry
	// GeneratedAt is when the store computed the counts.
	GeneratedAt time.Time
}

// ChangeCounts counts changes by risk.
type ChangeCounts struct {
	Total, High, Medium, Low int64
}

// Registry is one registry the sync polls.
type Registry struct {
	URL                 string
	LastSuccessAt       *time.Time
	LastPollAt          *time.Time
	ConsecutiveFailures int
}

// Store computes the summary at now.
type Store interface {
	CoverageSummary(ctx context.Context, now time.Time) (Summary, error)
}

// Service serves the summary from a cache of TTL per replica.
type Service struct {
	store Store
	ttl   time.Duration
	now   func() time.Time

	// mu is held while the summary is computed, so that a burst of requests after expiry costs one
	// computation, not one per request.
	mu     sync.Mutex
	cached Summary
	at     time.Time
}

// New returns the service; ttl 0 computes every summary afresh.
func New(store Store, ttl time.Duration) *Service {
	return &Service{store: store, ttl: ttl, now: time.Now}
}

// TTL is how long a summary is served from the cache.
func (s *Service) TTL() time.Duration { return s.ttl }

// Summary returns the cached summary while it is younger than the TTL, and computes it otherwise.
func (s *Service) Summary(ctx context.Context) (Summary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if !s.at.IsZero() && now.Sub(s.at) < s.ttl {
		return s.cached, nil
	}
	sum, err := s.store.CoverageSummary(ctx, now)
	if err != nil {
		return Summary{}, err
	}
	s.cached, s.at = sum, now
	return sum, nil
}
