package keys

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
)

// memStore is a Store in memory that counts lookups: single ones, and the batches of background
// refreshes with the hashes they carried. A batch first calls onBatch, when set.
type memStore struct {
	mu      sync.Mutex
	byHash  map[string]Key
	lookups atomic.Int32
	batches atomic.Int32
	batched atomic.Int32
	onBatch func()
}

func (m *memStore) KeysByHash(_ context.Context, hashes []string) (map[string]Key, error) {
	if m.onBatch != nil {
		m.onBatch()
	}
	m.batches.Add(1)
	m.batched.Add(int32(len(hashes)))
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]Key{}
	for _, h := range hashes {
		if k, ok := m.byHash[h]; ok {
			out[h] = k
		}
	}
	return out, nil
}

func (m *memStore) KeysByID(context.Context, []string) (map[string]Key, error) {
	return map[string]Key{}, nil
}

func (m *memStore) CreateKey(context.Context, NewKey) (Key, error) {
	return Key{}, errors.New("unused")
}
func (m *memStore) KeyByID(context.Context, string) (Key, error) { return Key{}, fault.ErrNotFound }
func (m *memStore) KeyByHash(_ context.Context, hash string) (Key, error) {
	m.lookups.Add(1)
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.byHash[hash]
	if !ok {
		return Key{}, fault.ErrNotFound
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
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	s := New(st, []byte("0123456789abcdef0123456789abcdef"))
	s.now = clock.Now
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
	clock.Advance(DefaultCacheTTL/2 + time.Millisecond)
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

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// waitRefreshed waits until no background refresh is running.
func waitRefreshed(t *testing.T, s *Service) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.refreshMu.Lock()
		idle := !s.gathering
		s.refreshMu.Unlock()
		if idle {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("background refresh still running after 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestRefreshReadsKeysDueTogetherInOneQuery(t *testing.T) {
	t.Parallel()
	const n = 50
	st := &memStore{byHash: map[string]Key{}}
	secrets := make([]string, n)
	for i := range secrets {
		secrets[i] = fmt.Sprintf("sk_test-%d", i)
		st.byHash[auth.HashAPIKey(secrets[i])] = Key{ID: fmt.Sprint("k", i), Plan: "paid"}
	}
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	s := New(st, []byte("0123456789abcdef0123456789abcdef"))
	s.now = clock.Now
	ctx := context.Background()
	authenticateAll := func() {
		t.Helper()
		for i, sec := range secrets {
			if k, err := s.Authenticate(ctx, sec); err != nil || k.ID != fmt.Sprint("k", i) {
				t.Fatalf("Authenticate %d: %+v %v", i, k, err)
			}
		}
	}
	authenticateAll()
	clock.Advance(DefaultCacheTTL/2 + time.Millisecond)
	authenticateAll()
	waitRefreshed(t, s)
	// The keys came due within a few microseconds: one query reads them all, where each used to
	// have a query (and a goroutine) of its own. Two, should the machine pause between them.
	if got, batches := st.batched.Load(), st.batches.Load(); got != n || batches > 2 {
		t.Fatalf("refresh read %d keys in %d queries, want %d keys in one or two", got, batches, n)
	}
	// Past the first entries' expiry, the refreshed ones still answer without a lookup.
	clock.Advance(DefaultCacheTTL/2 + time.Millisecond)
	authenticateAll()
	if got := st.lookups.Load(); got != n {
		t.Fatalf("single lookups: got %d, want only the first %d", got, n)
	}
	waitRefreshed(t, s)
}

func TestRefreshDoesNotBringBackForgottenKeys(t *testing.T) {
	t.Parallel()
	const secret = "sk_test-forgotten"
	entered, release := make(chan struct{}), make(chan struct{})
	st := &memStore{
		byHash:  map[string]Key{auth.HashAPIKey(secret): {ID: "k1", AccountID: "acct-1", Plan: "trial"}},
		onBatch: func() { close(entered); <-release },
	}
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	s := New(st, []byte("0123456789abcdef0123456789abcdef"))
	s.now = clock.Now
	ctx := context.Background()
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	clock.Advance(DefaultCacheTTL/2 + time.Millisecond)
	if _, err := s.Authenticate(ctx, secret); err != nil { // queues the refresh
		t.Fatal(err)
	}
	<-entered
	// Billing moved the account to another plan while the refresh was reading the old row.
	s.ForgetAccount("acct-1")
	close(release)
	waitRefreshed(t, s)
	if _, err := s.Authenticate(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if got := st.lookups.Load(); got != 2 {
		t.Fatalf("lookups: got %d, want 2: the refresh must not restore the entry ForgetAccount dropped", got)
	}
}
