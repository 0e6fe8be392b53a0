// Package keys issues and authenticates the scoring service's credentials: trial keys (no signup),
// admin-issued keys on a plan, and legacy HS256 JWTs for local and internal callers. Keys are random,
// shown once and stored as SHA-256 hashes (DESIGN.md "Data").
package keys

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
)

// Errors of the use cases.
var (
	// ErrUnauthenticated is a token that is unknown, malformed, expired or revoked.
	ErrUnauthenticated = errors.New("unauthenticated")
)

// Key kinds.
const (
	KindTrial  = "trial"
	KindIssued = "issued"
	KindJWT    = "jwt"
)

// Plans a key's account can be on. Their limits live in package meter.
var Plans = []string{"trial", "paid", "commit", "internal"}

// ScopeMetricsRead lets a key read GET /metrics.json.
const ScopeMetricsRead = "metrics:read"

// Key is a stored API key with its account's plan; the secret itself is never stored.
type Key struct {
	ID        string
	AccountID string
	Email     string
	Plan      string
	Kind      string
	Name      string
	Prefix    string
	Scopes    []string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// HasScope reports whether the key carries scope.
func (k Key) HasScope(scope string) bool { return slices.Contains(k.Scopes, scope) }

// NewKey is what Store.CreateKey stores: a key by hash and, when no account has Email, a new account
// with id AccountID on Plan.
type NewKey struct {
	ID, AccountID, Email, Plan, Kind, Name, Prefix, Hash string
	Scopes                                               []string
}

// Store persists keys. KeyByHash and KeyByID return fault.ErrNotFound for unknown keys; KeysByHash and
// KeysByID read many keys in one query and leave unknown ones out of their maps, which are keyed by
// the hashes and ids as given.
type Store interface {
	CreateKey(ctx context.Context, k NewKey) (Key, error)
	KeyByHash(ctx context.Context, hash string) (Key, error)
	KeyByID(ctx context.Context, id string) (Key, error)
	KeysByHash(ctx context.Context, hashes []string) (map[string]Key, error)
	KeysByID(ctx context.Context, ids []string) (map[string]Key, error)
}

// Issued is a new key with its secret, which exists only in this value.
type Issued struct {
	Key
	Secret string
}

// Token is an issued legacy JWT.
type Token struct {
	AccessToken string
	ExpiresAt   time.Time
	KeyID       string
}

// Service issues and authenticates credentials.
type Service struct {
	store     Store
	jwtSecret []byte
	cacheTTL  time.Duration
	now       func() time.Time
	cache     sync.Map // key hash, or idPrefix and key id -> *cached

	refreshMu sync.Mutex
	due       []dueEntry // entries past refreshAt, read again together by refreshDue
	gathering bool       // a refreshDue goroutine is running
}

// idPrefix starts the cache key of a lookup by key id; a lookup by hash uses the bare hash.
const idPrefix = "id:"

// cached is a key lookup a replica remembers. Past refreshAt, the first request queues the entry for a
// background read and every request keeps the cached key until expires: active keys never wait for
// PostgreSQL, and the keys first used together do not all expire, and wait, together (their
// synchronised expiry was the p99 of the scoring load run).
type cached struct {
	key        Key
	refreshAt  time.Time
	expires    time.Time
	refreshing atomic.Bool
}

// dueEntry is a cache entry queued for a background read.
type dueEntry struct {
	cacheKey string
	c        *cached
}

// refreshGather is how long a background refresh waits for more entries to come due before it reads
// them all in one query per kind. Keys first used together come due together: read one at a time,
// the 1,000 keys of the scoring load run were a storm of 1,000 queries and goroutines every 2.5 s
// (about 0.1 s of the service's CPU in 0.3 s, as much as its garbage collection), and the largest
// bursts of its slow requests.
const refreshGather = 100 * time.Millisecond

// refreshChunk bounds the keys one background query reads.
const refreshChunk = 1000

// DefaultCacheTTL bounds how long a revoked key may still authenticate on a replica that saw it
// recently: the price of not reading PostgreSQL on every scoring request.
const DefaultCacheTTL = 5 * time.Second

// New returns a Service. jwtSecret signs and verifies legacy JWTs (HS256).
func New(store Store, jwtSecret []byte) *Service {
	return &Service{store: store, jwtSecret: jwtSecret, cacheTTL: DefaultCacheTTL, now: time.Now}
}

// IssueTrial issues a trial key on an anonymous account of its own.
func (s *Service) IssueTrial(ctx context.Context) (Issued, error) {
	return s.issue(ctx, NewKey{Plan: "trial", Kind: KindTrial, Name: "trial"}, "trial")
}

// Issue issues a key on plan (default paid) for the account of email, or a new account.
func (s *Service) Issue(ctx context.Context, plan, email, name string, scopes []string) (Issued, error) {
	if plan == "" {
		plan = "paid"
	}
	if !slices.Contains(Plans, plan) {
		return Issued{}, fmt.Errorf("%w: plan must be one of %s", fault.ErrInvalid, strings.Join(Plans, ", "))
	}
	if email != "" && (!strings.Contains(email, "@") || len(email) > 254) {
		return Issued{}, fmt.Errorf("%w: email is not an e-mail address", fault.ErrInvalid)
	}
	if err := checkScopes(scopes); err != nil {
		return Issued{}, err
	}
	kind := KindIssued
	if plan == "trial" {
		kind = KindTrial
	}
	return s.issue(ctx, NewKey{Plan: plan, Kind: kind, Name: name, Email: strings.ToLower(email), Scopes: scopes}, "sk")
}

func (s *Service) issue(ctx context.Context, k NewKey, secretKind string) (Issued, error) {
	secret, err := auth.NewAPIKey(secretKind)
	if err != nil {
		return Issued{}, err
	}
	k.ID, k.AccountID = uuid.NewString(), uuid.NewString()
	k.Hash, k.Prefix = secret.Hash, secret.Prefix
	stored, err := s.store.CreateKey(ctx, k)
	if err != nil {
		return Issued{}, err
	}
	return Issued{Key: stored, Secret: secret.Secret}, nil
}

func checkScopes(scopes []string) error {
	for _, sc := range scopes {
		if sc != ScopeMetricsRead {
			return fmt.Errorf("%w: unknown scope %q (known: %s)", fault.ErrInvalid, sc, ScopeMetricsRead)
		}
	}
	return nil
}

// Token limits.
const (
	DefaultTokenTTL = time.Hour
	MaxTokenTTL     = 24 * time.Hour
)

// IssueToken issues a legacy JWT for an internal caller. It is backed by a key row of kind jwt on the
// internal plan, so that its calls are metered and it can be revoked like any key.
func (s *Service) IssueToken(ctx context.Context, subject string, scopes []string, ttl time.Duration) (Token, error) {
	if ttl == 0 {
		ttl = DefaultTokenTTL
	}
	if ttl < time.Minute || ttl > MaxTokenTTL {
		return Token{}, fmt.Errorf("%w: ttl_seconds must be between 60 and %d", fault.ErrInvalid, int(MaxTokenTTL.Seconds()))
	}
	subject = strings.TrimSpace(subject)
	if subject == "" || len(subject) > 200 {
		return Token{}, fmt.Errorf("%w: subject is required (at most 200 characters)", fault.ErrInvalid)
	}
	if err := checkScopes(scopes); err != nil {
		return Token{}, err
	}
	// The row's hash is of a random value nobody holds: the key exists for metering and revocation,
	// the JWT is the credential.
	issued, err := s.issue(ctx, NewKey{Plan: "internal", Kind: KindJWT, Name: subject, Scopes: scopes}, "jwt")
	if err != nil {
		return Token{}, err
	}
	now := s.now()
	exp := now.Add(ttl).Truncate(time.Second)
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Issuer:    "scoring",
		Subject:   subject,
		ID:        issued.ID,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(exp),
	})
	signed, err := tok.SignedString(s.jwtSecret)
	if err != nil {
		return Token{}, err
	}
	return Token{AccessToken: signed, ExpiresAt: exp, KeyID: issued.ID}, nil
}

// Authenticate returns the key behind a bearer token: an API key, or a legacy JWT whose jti names its
// key row. Revoked keys fail (within DefaultCacheTTL on other replicas).
func (s *Service) Authenticate(ctx context.Context, token string) (Key, error) {
	if strings.Count(token, ".") == 2 {
		return s.authenticateJWT(ctx, token)
	}
	// The lookup by hash is the comparison: the secret itself is never compared, and equal hashes of
	// a 256-bit secret leak nothing through timing.
	return s.lookup(ctx, auth.HashAPIKey(token))
}

func (s *Service) authenticateJWT(ctx context.Context, token string) (Key, error) {
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return s.jwtSecret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithIssuer("scoring"),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(s.now))
	if err != nil {
		return Key{}, ErrUnauthenticated
	}
	// The token names its key row, shared with ByID's cache entry (and its invalidation).
	k, err := s.ByID(ctx, claims.ID)
	if err == nil && k.Kind != KindJWT {
		return Key{}, ErrUnauthenticated
	}
	return k, err
}

// lookup returns the live key under cacheKey (a hash, or idPrefix and an id), from the cache or from
// the store.
func (s *Service) lookup(ctx context.Context, cacheKey string) (Key, error) {
	now := s.now()
	if v, ok := s.cache.Load(cacheKey); ok {
		c := v.(*cached)
		if now.Before(c.expires) {
			if now.After(c.refreshAt) && c.refreshing.CompareAndSwap(false, true) {
				s.queueRefresh(cacheKey, c)
			}
			return c.key, nil
		}
	}
	var k Key
	var err error
	if id, byID := strings.CutPrefix(cacheKey, idPrefix); byID {
		k, err = s.store.KeyByID(ctx, id)
	} else {
		k, err = s.store.KeyByHash(ctx, cacheKey)
	}
	if errors.Is(err, fault.ErrNotFound) || err == nil && k.RevokedAt != nil {
		s.cache.Delete(cacheKey)
		return Key{}, ErrUnauthenticated
	}
	if err != nil {
		return Key{}, err
	}
	s.cache.Store(cacheKey, s.entry(k))
	return k, nil
}

func (s *Service) entry(k Key) *cached {
	now := s.now()
	return &cached{key: k, refreshAt: now.Add(s.cacheTTL / 2), expires: now.Add(s.cacheTTL)}
}

// queueRefresh queues c for the next background read, starting one when none is running.
func (s *Service) queueRefresh(cacheKey string, c *cached) {
	s.refreshMu.Lock()
	s.due = append(s.due, dueEntry{cacheKey, c})
	start := !s.gathering
	s.gathering = true
	s.refreshMu.Unlock()
	if start {
		go s.refreshDue()
	}
}

// refreshDue reads the queued entries again, refreshGather after they were queued, until none is
// left. A failed read leaves its entries to expire: the next request after that reads its key itself.
func (s *Service) refreshDue() {
	for {
		time.Sleep(refreshGather)
		s.refreshMu.Lock()
		due := s.due
		s.due = nil
		if len(due) == 0 {
			s.gathering = false
			s.refreshMu.Unlock()
			return
		}
		s.refreshMu.Unlock()
		var byHash, byID []dueEntry
		for _, d := range due {
			if strings.HasPrefix(d.cacheKey, idPrefix) {
				byID = append(byID, d)
			} else {
				byHash = append(byHash, d)
			}
		}
		for chunk := range slices.Chunk(byHash, refreshChunk) {
			s.reload(chunk, "", s.store.KeysByHash)
		}
		for chunk := range slices.Chunk(byID, refreshChunk) {
			s.reload(chunk, idPrefix, s.store.KeysByID)
		}
	}
}

// reload reads the keys of due (their cache keys without prefix) with read, in one query, and
// replaces each entry that is still the one queued: an entry dropped meanwhile (ForgetAccount, a
// revocation) stays dropped, rather than coming back with what the read saw before the change.
func (s *Service) reload(due []dueEntry, prefix string, read func(context.Context, []string) (map[string]Key, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cacheTTL/2)
	defer cancel()
	vals := make([]string, len(due))
	for i, d := range due {
		vals[i] = strings.TrimPrefix(d.cacheKey, prefix)
	}
	found, err := read(ctx, vals)
	if err != nil {
		return
	}
	for i, d := range due {
		if k, ok := found[vals[i]]; ok && k.RevokedAt == nil {
			s.cache.CompareAndSwap(d.cacheKey, d.c, s.entry(k))
		} else {
			s.cache.CompareAndDelete(d.cacheKey, d.c)
		}
	}
}

// DeriveJWTSecret derives the JWT signing secret from the admin token when no secret is configured,
// so a deployment works with one secret while still never signing with the admin token itself.
func DeriveJWTSecret(adminToken string) []byte {
	m := hmac.New(sha256.New, []byte(adminToken))
	m.Write([]byte("scoring legacy jwt signing key v1"))
	return m.Sum(nil)
}
