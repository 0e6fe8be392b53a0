package controlplane_test

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/internal/controlplane"
)

// clock is a settable time for the session and link expiry rules.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestSessionsSlideAndEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{now: time.Now()}
	cp, _, _, _ := fixture(t, controlplane.WithClock(c.Now), controlplane.WithSessionLifetime(time.Hour, 3*time.Hour))
	o, err := cp.Signup(ctx, controlplane.Credentials{Email: "s@example.com", Password: "correct horse battery staple"}, "")
	if err != nil {
		t.Fatal(err)
	}
	// Used every 50 minutes, the session outlives its idle timeout of an hour...
	for i := range 3 {
		c.Advance(50 * time.Minute)
		if _, err := cp.Authenticate(ctx, o.Token); err != nil {
			t.Fatalf("use %d after %v: %v", i+1, time.Duration(i+1)*50*time.Minute, err)
		}
	}
	// ...but not its absolute lifetime of three hours.
	c.Advance(35 * time.Minute)
	if _, err := cp.Authenticate(ctx, o.Token); !errors.Is(err, controlplane.ErrUnauthenticated) {
		t.Fatalf("after 3h05: got %v, want ErrUnauthenticated", err)
	}

	// Unused for longer than the idle timeout, a session ends.
	idle, err := cp.Login(ctx, controlplane.Credentials{Email: "s@example.com", Password: "correct horse battery staple"})
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(61 * time.Minute)
	if _, err := cp.Authenticate(ctx, idle.Token); !errors.Is(err, controlplane.ErrUnauthenticated) {
		t.Fatalf("after 61 idle minutes: got %v, want ErrUnauthenticated", err)
	}
	for _, tok := range []string{"", "wss_", "sk_notasession", o.Token + "x"} {
		if _, err := cp.Authenticate(ctx, tok); !errors.Is(err, controlplane.ErrUnauthenticated) {
			t.Errorf("Authenticate(%q): got %v, want ErrUnauthenticated", tok, err)
		}
	}
}

func TestSetupLinksExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{now: time.Now()}
	cp, _, _, _ := fixture(t, controlplane.WithClock(c.Now))
	o, err := cp.Signup(ctx, controlplane.Credentials{Email: "l@example.com", Password: "correct horse battery staple"}, "")
	if err != nil {
		t.Fatal(err)
	}
	created, err := cp.CreateKey(ctx, o.Session, "late", controlplane.DeliverySetupLink)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(created.SetupURL)
	token := u.Query().Get("token")
	if got := created.SetupExpiresAt.Sub(c.Now()); got < 23*time.Hour || got > 24*time.Hour {
		t.Fatalf("link lifetime: got %v, want 24h", got)
	}
	c.Advance(24*time.Hour + time.Second)
	if _, _, err := cp.SetupStatus(ctx, token); !errors.Is(err, controlplane.ErrGone) {
		t.Fatalf("status of an expired link: got %v, want ErrGone", err)
	}
	if _, err := cp.RevealSetup(ctx, token); !errors.Is(err, controlplane.ErrGone) {
		t.Fatalf("reveal of an expired link: got %v, want ErrGone", err)
	}
}
