// Package bus connects a service to NATS JetStream and provisions the streams of the
// repository README ("Architecture", the stream table).
// Every stream name and subject goes through the Bus's namespace, so that separate stacks or test runs
// can share one NATS server without seeing each other's messages.
package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Streams shared by the services. Subjects are written without namespace; Bus applies it.
var (
	// PolicyChanges carries ingestion's published change events (policy.change.<change_type>), which
	// scoring consumes as payer-policy signals.
	PolicyChanges = jetstream.StreamConfig{
		Name: "POLICY_CHANGES", Subjects: []string{"policy.change.>"},
		Retention: jetstream.LimitsPolicy, MaxAge: 90 * 24 * time.Hour, Storage: jetstream.FileStorage,
		Duplicates: dedupWindow,
	}
	// IntelChanges carries verification's registry changes (intel.change.<risk>).
	IntelChanges = jetstream.StreamConfig{
		Name: "INTEL_CHANGES", Subjects: []string{"intel.change.>"},
		Retention: jetstream.LimitsPolicy, MaxAge: 30 * 24 * time.Hour, Storage: jetstream.FileStorage,
		Duplicates: dedupWindow,
	}
	// WebhookDeliveries is the work queue of webhook delivery jobs: each job is taken by one worker.
	WebhookDeliveries = jetstream.StreamConfig{
		Name: "WEBHOOK_DELIVERIES", Subjects: []string{"webhook.delivery"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
		Duplicates: dedupWindow,
	}
)

// dedupWindow is how long JetStream remembers a Nats-Msg-Id. The outbox relay re-publishes a row only
// when its transaction failed after the publish, which it retries within seconds; ten minutes leaves
// room for a relay that was stuck on a slow database.
const dedupWindow = 10 * time.Minute

// Bus is a NATS connection with its JetStream context and namespace.
type Bus struct {
	Conn      *nats.Conn
	JS        jetstream.JetStream
	namespace string
	log       *slog.Logger
}

// Connect dials NATS and keeps reconnecting for ever. A server that is down at start does not stop the
// service: the connection is retried in the background and events wait in the outbox meanwhile.
func Connect(url, namespace, clientName string, log *slog.Logger, opts ...nats.Option) (*Bus, error) {
	base := []nats.Option{
		nats.Name(clientName),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("NATS disconnected", "error", err)
		}),
		nats.ReconnectHandler(func(c *nats.Conn) { log.Info("NATS reconnected", "server", c.ConnectedUrlRedacted()) }),
	}
	nc, err := nats.Connect(url, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("JetStream: %w", err)
	}
	return &Bus{Conn: nc, JS: js, namespace: namespace, log: log}, nil
}

// Subject returns subject inside the bus's namespace.
func (b *Bus) Subject(subject string) string {
	if b.namespace == "" {
		return subject
	}
	return b.namespace + "." + subject
}

// StreamName returns a stream name inside the bus's namespace.
func (b *Bus) StreamName(name string) string {
	if b.namespace == "" {
		return name
	}
	return b.namespace + "_" + name
}

// EnsureStream creates the stream or updates it to cfg, inside the namespace.
func (b *Bus) EnsureStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	cfg.Name = b.StreamName(cfg.Name)
	subjects := make([]string, len(cfg.Subjects))
	for i, s := range cfg.Subjects {
		subjects[i] = b.Subject(s)
	}
	cfg.Subjects = subjects
	// A stream is updated only when its settings really differ. Every replica's provisioning and every
	// consumer's (re)start ensures it, and an update, even one that changes nothing, rewrites the
	// stream's store concurrently with consumers being created on it: a data race inside nats-server
	// under -race. So a failed lookup (JetStream still restoring its streams after a restart, say) is
	// an error to retry, never a reason to update, and a missing stream is created, not upserted.
	s, err := b.JS.Stream(ctx, cfg.Name)
	switch {
	case err == nil && sameStream(s.CachedInfo().Config, cfg):
		return s, nil
	case err == nil:
		s, err = b.JS.UpdateStream(ctx, cfg)
	case errors.Is(err, jetstream.ErrStreamNotFound):
		s, err = b.JS.CreateStream(ctx, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("provision stream %s: %w", cfg.Name, err)
	}
	return s, nil
}

// sameStream compares the settings the services choose; the server fills in the others.
func sameStream(have, want jetstream.StreamConfig) bool {
	return slices.Equal(have.Subjects, want.Subjects) && have.Retention == want.Retention && have.MaxAge == want.MaxAge &&
		have.Storage == want.Storage && have.Duplicates == want.Duplicates
}

// Provision ensures every stream, retrying until it succeeds or ctx ends; it is meant to run in the
// background, since NATS may come up after the service.
func (b *Bus) Provision(ctx context.Context, streams ...jetstream.StreamConfig) error {
	for {
		var errs []error
		for _, cfg := range streams {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := b.EnsureStream(cctx, cfg)
			cancel()
			errs = append(errs, err)
		}
		err := errors.Join(errs...)
		if err == nil {
			return nil
		}
		b.log.Warn("stream provisioning failed; retrying", "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// Close drains the connection: pending publishes are flushed and subscriptions finish their messages.
func (b *Bus) Close() {
	if err := b.Conn.Drain(); err != nil {
		b.Conn.Close()
	}
}
