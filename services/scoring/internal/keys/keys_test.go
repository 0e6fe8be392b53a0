package keys

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/auth"
)

// memStore is a Store in memory that counts lookups.
type memStore struct {
	mu      sync.Mutex
	byHash  map[string]Key
	lookups atomic.Int32
}

func (m *memStore) CreateKey(context.Context, NewKey) (Key, error) {
	return Key{}, errors.New("unused")
}
func (m *memStore) KeyByID(context.Context, string) (Key, error) { return Key{}, ErrNotFound }
func (m *memStore) KeyByHash(_ context.Context, hash string) (Key, error) {
	m.lookups.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.byHash[hash]
	if !ok {
		return Key{}, ErrNotFound
	}
	return k, nil
}

func (m *memStore) revoke(hash string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.byHash[hash]
	now := time.Now()
	k.RevokedAt = &now
	m.byHash[hash] = k
}

func TestAuthenticateCachesAndRefreshesAhead(t *testing.T) {
	const secret = "sk_test-secret"
	hash := auth.HashAPIKey(secret)
	st := &memStore{byHash: map[string]Key{hash: {ID: "k1", Plan: "paid"}}}
	clock := time.Unix(1_800_000_000, 0)
	var mu sync.Mutex
	s := New(st, []byte("0123456789abcdef0123456789abcdef"))
	s.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	ctx := context.Background()

	for range 3 {
		if k, err := s.Authenticate(ctx, secret); err != nil || k.ID != "k1" {
			t.Fatalf("Authenticate: %v %v", k, err)
		}
	}
	if n := st.lookups.Load(); n != 1 {
		t.Fatalf("lookups while fresh: got %d, want 1", n)
	}
	if _, err := s.Authenticate(ctx, "sk_unknown"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("unknown key: %v", err)
	}

	// Past half the TTL: the cached key still answers at once, and one background read sees the
	// revocation, after which the key fails before its entry would have expired.
	st.revoke(hash)
	advance(DefaultCacheTTL/2 + time.Millisecond)
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatalf("cached key during refresh: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := s.Authenticate(ctx, secret)
		if errors.Is(err, ErrUnauthenticated) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("revocation not seen after the background refresh")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
