package bus_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/natstest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestNamespaceKeepsStacksApart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, err := bus.Connect(natstest.URL(), natstest.Namespace(t), "a", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := bus.Connect(natstest.URL(), natstest.Namespace(t), "b", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// The same stream definition in two namespaces: without namespacing, the second would fail on
	// overlapping subjects.
	for _, x := range []*bus.Bus{a, b} {
		if _, err := x.EnsureStream(ctx, bus.PolicyChanges); err != nil {
			t.Fatalf("EnsureStream: %v", err)
		}
		t.Cleanup(func() { _ = x.JS.DeleteStream(context.Background(), x.StreamName(bus.PolicyChanges.Name)) })
	}
	if _, err := a.JS.Publish(ctx, a.Subject("policy.change.coverage_added"), []byte("a")); err != nil {
		t.Fatal(err)
	}
	sa, _ := a.JS.Stream(ctx, a.StreamName(bus.PolicyChanges.Name))
	sb, _ := b.JS.Stream(ctx, b.StreamName(bus.PolicyChanges.Name))
	ia, _ := sa.Info(ctx)
	ib, _ := sb.Info(ctx)
	if ia.State.Msgs != 1 || ib.State.Msgs != 0 {
		t.Fatalf("messages: got a=%d b=%d, want a=1 b=0", ia.State.Msgs, ib.State.Msgs)
	}
	if got, want := ia.Config.Subjects[0], a.Subject("policy.change.>"); got != want {
		t.Errorf("subject: got %s, want %s", got, want)
	}
}

func TestEnsureStreamIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, err := bus.Connect(natstest.URL(), natstest.Namespace(t), "idem", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t.Cleanup(func() { _ = b.JS.DeleteStream(context.Background(), b.StreamName(bus.WebhookDeliveries.Name)) })
	for range 2 {
		s, err := b.EnsureStream(ctx, bus.WebhookDeliveries)
		if err != nil {
			t.Fatalf("EnsureStream: %v", err)
		}
		if s.CachedInfo().Config.Retention != jetstream.WorkQueuePolicy {
			t.Errorf("retention: got %v, want work queue", s.CachedInfo().Config.Retention)
		}
	}
	// A changed setting is applied to the existing stream.
	changed := bus.WebhookDeliveries
	changed.MaxAge = time.Hour
	s, err := b.EnsureStream(ctx, changed)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.MaxAge; got != time.Hour {
		t.Fatalf("changed stream's MaxAge: got %v, want 1h", got)
	}
}

func TestProvisionWaitsForNATS(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	url := srv.URL()
	srv.Stop()
	// The service starts while NATS is down: Connect must not fail.
	b, err := bus.Connect(url, "", "late", quiet)
	if err != nil {
		t.Fatalf("Connect while NATS is down: %v", err)
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Provision(ctx, bus.IntelChanges) }()
	time.Sleep(300 * time.Millisecond)
	srv.Restart()
	if err := <-done; err != nil {
		t.Fatalf("Provision: %v", err)
	}
	if _, err := b.JS.Stream(ctx, bus.IntelChanges.Name); err != nil {
		t.Fatalf("stream after provisioning: %v", err)
	}
}
