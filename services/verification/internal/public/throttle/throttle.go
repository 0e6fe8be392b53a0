// Package throttle bounds the public POST routes per client address and overall, with fixed windows
// counted in PostgreSQL so that every replica enforces one bound. A client address is never stored:
// its subject is a truncated SHA-256 digest.
package throttle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// Rule is the bound of one route.
type Rule struct {
	// Scope names the route among the counters ("analytics", "claim_intent", "claim_start").
	Scope string
	// PerClient caps one client address's requests per window; Overall caps every client's together.
	// 0 leaves that bound off.
	PerClient, Overall int
	Window             time.Duration
}

// Subject is one counter: a window's hits may not go past Limit.
type Subject struct {
	Key   string
	Limit int
}

// Store counts hits. Hit adds one hit to every subject's counter of the window that starts at
// windowStart, or to none when one of them is already at its limit (then it reports false).
type Store interface {
	Hit(ctx context.Context, subjects []Subject, windowStart time.Time) (allowed bool, err error)
}

// Limiter applies rules.
type Limiter struct {
	store Store
	now   func() time.Time
}

// New returns a limiter over store.
func New(store Store) *Limiter { return &Limiter{store: store, now: time.Now} }

// Allow counts one request of client (its address, "" when unknown) under rule: 0 when it may go
// on, or how long until the window ends when it may not.
func (l *Limiter) Allow(ctx context.Context, rule Rule, client string) (time.Duration, error) {
	if rule.Window <= 0 {
		return 0, nil
	}
	var subjects []Subject
	if rule.PerClient > 0 {
		if client == "" {
			client = "unknown"
		}
		sum := sha256.Sum256([]byte(client))
		subjects = append(subjects, Subject{Key: rule.Scope + ":c:" + hex.EncodeToString(sum[:16]), Limit: rule.PerClient})
	}
	if rule.Overall > 0 {
		subjects = append(subjects, Subject{Key: rule.Scope + ":all", Limit: rule.Overall})
	}
	if len(subjects) == 0 {
		return 0, nil
	}
	now := l.now()
	start := now.Truncate(rule.Window)
	ok, err := l.store.Hit(ctx, subjects, start)
	if err != nil || ok {
		return 0, err
	}
	return max(start.Add(rule.Window).Sub(now), time.Second), nil
}
