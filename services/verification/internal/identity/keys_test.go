package identity

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
)

// counted is a Lookup that counts its calls and answers what answer holds.
type counted struct {
	calls  atomic.Int32
	answer func(token string) (Caller, error)
	// during runs inside the lookup, after the database would have been read.
	during func()
}

func (c *counted) lookup(_ context.Context, token string) (Caller, error) {
	c.calls.Add(1)
	caller, err := c.answer(token)
	if c.during != nil {
		c.during()
	}
	return caller, err
}

var errRevoked = errors.New("invalid or revoked API key")

func newCounted() *counted {
	org := uuid.New()
	return &counted{answer: func(token string) (Caller, error) {
		if token == "revoked" {
			return Caller{}, errRevoked
		}
		return Caller{OrganizationID: org, KeyName: token}, nil
	}}
}

func TestKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// run calls Authenticate on k and returns how many lookups it wants to have happened.
		run func(t *testing.T, k *Keys, c *counted, clock *time.Time) int32
	}{
		{"a live cache looks a key up once", func(t *testing.T, k *Keys, _ *counted, _ *time.Time) int32 {
			for range 3 {
				if got, err := k.Authenticate(ctx, "vk_a"); err != nil || got.KeyName != "vk_a" {
					t.Fatalf("got %v, %v; want the caller of vk_a", got, err)
				}
			}
			return 1
		}},
		{"keys are cached apart", func(t *testing.T, k *Keys, _ *counted, _ *time.Time) int32 {
			for _, tok := range []string{"vk_a", "vk_b", "vk_a", "vk_b"} {
				if got, _ := k.Authenticate(ctx, tok); got.KeyName != tok {
					t.Fatalf("got %q, want %q", got.KeyName, tok)
				}
			}
			return 2
		}},
		{"a cache that is not live is not used", func(t *testing.T, k *Keys, _ *counted, _ *time.Time) int32 {
			k.Live(false)
			for range 3 {
				_, _ = k.Authenticate(ctx, "vk_a")
			}
			return 3
		}},
		{"going live again starts empty", func(t *testing.T, k *Keys, _ *counted, _ *time.Time) int32 {
			_, _ = k.Authenticate(ctx, "vk_a")
			k.Live(false)
			k.Live(true)
			_, _ = k.Authenticate(ctx, "vk_a")
			return 2
		}},
		{"refusals are not cached", func(t *testing.T, k *Keys, _ *counted, _ *time.Time) int32 {
			for range 2 {
				if _, err := k.Authenticate(ctx, "revoked"); !errors.Is(err, errRevoked) {
					t.Fatalf("got %v, want the lookup's error", err)
				}
			}
			return 2
		}},
		{"forget drops every key", func(t *testing.T, k *Keys, _ *counted, _ *time.Time) int32 {
			_, _ = k.Authenticate(ctx, "vk_a")
			_, _ = k.Authenticate(ctx, "vk_b")
			k.Forget()
			_, _ = k.Authenticate(ctx, "vk_a")
			_, _ = k.Authenticate(ctx, "vk_b")
			return 4
		}},
		{"an entry expires after the TTL", func(t *testing.T, k *Keys, _ *counted, clock *time.Time) int32 {
			_, _ = k.Authenticate(ctx, "vk_a")
			*clock = clock.Add(time.Minute - time.Nanosecond)
			_, _ = k.Authenticate(ctx, "vk_a")
			*clock = clock.Add(time.Nanosecond)
			_, _ = k.Authenticate(ctx, "vk_a")
			return 2
		}},
		{"a lookup that straddles a forget is not kept", func(t *testing.T, k *Keys, c *counted, _ *time.Time) int32 {
			// The key was read as active, then revoked (and forgotten) before the lookup returned.
			c.during = k.Forget
			_, _ = k.Authenticate(ctx, "vk_a")
			c.during = nil
			_, _ = k.Authenticate(ctx, "vk_a")
			_, _ = k.Authenticate(ctx, "vk_a")
			return 2
		}},
		{"a revocation refuses the key at once", func(t *testing.T, k *Keys, c *counted, _ *time.Time) int32 {
			_, _ = k.Authenticate(ctx, "vk_a")
			c.answer = func(string) (Caller, error) { return Caller{}, errRevoked }
			k.Forget()
			if _, err := k.Authenticate(ctx, "vk_a"); !errors.Is(err, errRevoked) {
				t.Fatalf("got %v after the revocation, want a refusal", err)
			}
			return 2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCounted()
			k := NewKeys(c.lookup, time.Minute)
			clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			k.now = func() time.Time { return clock }
			k.Live(true)
			want := tc.run(t, k, c, &clock)
			if got := c.calls.Load(); got != want {
				t.Errorf("got %d lookups, want %d", got, want)
			}
		})
	}
}
