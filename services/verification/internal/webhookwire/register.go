package webhookwire

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// Durable consumer names, shared by every replica.
const (
	matcherConsumer = "webhook-matcher"
	workerConsumer  = "webhook-workers"
)

// matcherConcurrency is how many changes are matched at once: each is one short transaction, and
// changes are independent (idempotent by change id), so their order does not matter. With fan-out 10
// the matcher, not the workers, bounded the bench's saturation run at 4; each holds a pool
// connection only for its transaction.
const matcherConcurrency = 8

// RelayBatch is how many outbox rows one transaction of the service's relay claims
// (platform.Spec.Relay); a change fans out to one job per endpoint, so batches are larger than the
// relay's default of 100.
const RelayBatch = 500

// Register wires the watch and webhook pipeline onto p: the WebhookService routes and the background
// loops. s is validated again here, so that a caller that skipped config.Load still gets its errors;
// servers tells which servers exist (the registry sync's store).
func Register(ctx context.Context, p *platform.Platform, s Settings, servers webhooks.ServerCatalog) error {
	if err := s.Validate(""); err != nil {
		return fmt.Errorf("webhook settings: %w", err)
	}
	pool, err := openPool(ctx, p.Pool, s.Workers)
	if err != nil {
		return err
	}
	p.OnClose(pool.Close)
	svc := webhooks.NewService(store.NewWebhooks(pool), servers, s.domainConfig(), webhooks.WithLogger(p.Log))
	if err := p.Server.Register(&verificationv1.WebhookService_ServiceDesc, api.NewWebhooks(svc),
		serve.Gateway(verificationv1.RegisterWebhookServiceHandlerClient, verificationv1.NewWebhookServiceClient)); err != nil {
		return err
	}

	matcher := &bus.Consumer{Bus: p.Bus, Log: p.Log, Stream: bus.IntelChanges, Concurrency: matcherConcurrency,
		Handle: handleChange(svc, p.Log),
		Config: jetstream.ConsumerConfig{
			Durable: matcherConsumer, FilterSubject: p.Bus.Subject(bus.IntelChanges.Subjects[0]),
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: matcherAckWait, DeliverPolicy: jetstream.DeliverAllPolicy,
		}}
	p.Go(matcher.Run)

	workers := &bus.Consumer{Bus: p.Bus, Log: p.Log, Stream: bus.WebhookDeliveries, Concurrency: s.Workers,
		Handle: handleJob(svc, p.Log),
		Config: jetstream.ConsumerConfig{
			Durable: workerConsumer, AckPolicy: jetstream.AckExplicitPolicy,
			// Past AckWait a job is redelivered; it must outlast the worker's lease on the delivery,
			// or the copy would find the delivery still taken and be dropped.
			AckWait: webhooks.LeaseFor(s.Timeout) + 15*time.Second,
		}}
	p.Go(workers.Run)

	p.Go(func(ctx context.Context) error { return svc.RunScheduler(ctx, s.SchedulerInterval) })
	return nil
}

// matcherAckWait is how long a change may stay unacknowledged before JetStream redelivers it; it is
// also the delay before a change whose transaction failed is tried again.
const matcherAckWait = 30 * time.Second

// openPool opens the pipeline's own connection pool on the service's database, so that a burst of
// deliveries never queues the API's requests behind it (the shared pool defaults to 4 connections on
// a 2-core machine). Workers hold a connection only for a statement, so at most 16 serve them; the
// rest serve the matcher, the scheduler and the webhook routes.
func openPool(ctx context.Context, shared *pgxpool.Pool, workers int) (*pgxpool.Pool, error) {
	cfg := shared.Config()
	cfg.MaxConns = int32(min(workers, 16) + matcherConcurrency + 2)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("webhook pool: %w", err)
	}
	return pool, nil
}
