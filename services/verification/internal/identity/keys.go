package identity

import (
	"context"
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Lookup returns the caller behind a bearer token, reading the database. It returns an error for a
// token that is unknown or revoked, and its errors are never cached.
type Lookup func(ctx context.Context, token string) (Caller, error)

// DefaultKeyTTL bounds how long a cached lookup is used. Revocations reach every replica through
// PostgreSQL's NOTIFY (Forget) within milliseconds; the TTL only bounds what a lost notification could
// cost, and a replica that is not hearing notifications caches nothing.
const DefaultKeyTTL = 10 * time.Second

// maxKeys bounds the cache: far more keys than are in use at once.
const maxKeys = 10_000

// Keys caches Lookup's answers by the SHA-256 of the token, so that a bearer request does not read
// the database. A verification-bench CPU profile had the key lookup as one of the two statements of
// every server state read; PostgreSQL's share of the machine was most of what kept the read below
// its throughput target.
//
// Revocation must still take effect at once on every replica (README, "Authentication"). The cache is
// used only while the replica hears about every change of a key (Live(true), set by the listener of
// the api_keys_changed channel once it is listening), and Forget drops everything on a change: a
// revocation through this replica's own route forgets before the route answers, and the trigger of
// migration 00005 notifies every replica at commit. A listener that loses its connection calls
// Live(false) and the cache goes unused until it listens again.
type Keys struct {
	lookup Lookup
	ttl    time.Duration
	now    func() time.Time
	cache  *lru.Cache[[sha256.Size]byte, cachedCaller]
	// mu orders Forget against the storing of a lookup that started before it: epoch counts Forgets,
	// and a lookup that straddles one is not stored (it may have read the key before the revocation).
	mu    sync.Mutex
	epoch uint64
	live  atomic.Bool
}

type cachedCaller struct {
	caller  Caller
	expires time.Time
}

// NewKeys returns a cache over lookup with entries valid for ttl. It is not live until Live(true).
func NewKeys(lookup Lookup, ttl time.Duration) *Keys {
	cache, _ := lru.New[[sha256.Size]byte, cachedCaller](maxKeys)
	return &Keys{lookup: lookup, ttl: ttl, now: time.Now, cache: cache}
}

// Authenticate returns the caller behind token: cached, or from the lookup.
func (k *Keys) Authenticate(ctx context.Context, token string) (Caller, error) {
	// The hash, not the token, is the cache key: the cache holds no secret. Equal hashes of a 256-bit
	// secret leak nothing through timing.
	h := sha256.Sum256([]byte(token))
	if k.live.Load() {
		if c, ok := k.cache.Get(h); ok && k.now().Before(c.expires) {
			return c.caller, nil
		}
	}
	k.mu.Lock()
	epoch := k.epoch
	k.mu.Unlock()
	caller, err := k.lookup(ctx, token)
	if err != nil {
		return Caller{}, err
	}
	k.mu.Lock()
	if epoch == k.epoch && k.live.Load() {
		k.cache.Add(h, cachedCaller{caller: caller, expires: k.now().Add(k.ttl)})
	}
	k.mu.Unlock()
	return caller, nil
}

// Forget drops every cached lookup: a key or an organization changed.
func (k *Keys) Forget() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.epoch++
	k.cache.Purge()
}

// Live says whether changes are being heard. Either way the cache starts empty: changes may have been
// missed before.
func (k *Keys) Live(on bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.live.Store(on)
	k.epoch++
	k.cache.Purge()
}
