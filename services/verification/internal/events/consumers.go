package events

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// Durable consumer names, shared by every replica.
const (
	matcherConsumer = "webhook-matcher"
	workerConsumer  = "webhook-workers"
)

// MatcherConcurrency is how many changes are matched at once: each is one short transaction, and
// changes are independent (idempotent by change id), so their order does not matter. With fan-out 10
// the matcher, not the workers, bounded the bench's saturation run at 4; each holds a pool
// connection only for its transaction.
const MatcherConcurrency = 8

// matcherAckWait is how long a change may stay unacknowledged before JetStream redelivers it; it is
// also the delay before a change whose transaction failed is tried again.
const matcherAckWait = 30 * time.Second

// A message whose handling failed for a passing reason (the database is down) is left unacknowledged:
// JetStream redelivers it after AckWait, which spaces the retries without a NAK that would park it.

// Matcher is the durable consumer of intel.change.> that turns each change into deliveries.
func Matcher(b *bus.Bus, log *slog.Logger, svc *webhooks.Service) *bus.Consumer {
	return &bus.Consumer{Bus: b, Log: log, Stream: bus.IntelChanges, Concurrency: MatcherConcurrency,
		Handle: handleChange(svc, log),
		Config: jetstream.ConsumerConfig{
			Durable: matcherConsumer, FilterSubject: b.Subject(bus.IntelChanges.Subjects[0]),
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: matcherAckWait, DeliverPolicy: jetstream.DeliverAllPolicy,
		}}
}

// Workers is the durable consumer of the webhook.delivery work queue: workers jobs at once, each one
// attempt of one delivery. lease is how long a worker holds a delivery (webhooks.LeaseFor).
func Workers(b *bus.Bus, log *slog.Logger, svc *webhooks.Service, workers int, lease time.Duration) *bus.Consumer {
	return &bus.Consumer{Bus: b, Log: log, Stream: bus.WebhookDeliveries, Concurrency: workers,
		Handle: handleJob(svc, log),
		Config: jetstream.ConsumerConfig{
			Durable: workerConsumer, AckPolicy: jetstream.AckExplicitPolicy,
			// Past AckWait a job is redelivered; it must outlast the worker's lease on the delivery,
			// or the copy would find the delivery still taken and be dropped.
			AckWait: lease + 15*time.Second,
		}}
}

// handleChange matches one intel.change message. It is acknowledged once the transaction that
// recorded it (or found it recorded before) has committed.
func handleChange(svc *webhooks.Service, log *slog.Logger) func(context.Context, jetstream.Msg) {
	return func(ctx context.Context, m jetstream.Msg) {
		c, err := decodeChange(m.Data())
		if err != nil {
			log.Error("webhook matcher: undecodable change dropped", "subject", m.Subject(), "error", err)
			_ = m.Term()
			return
		}
		_, err = svc.HandleChange(ctx, c)
		switch {
		case errors.Is(err, fault.ErrInvalidChange):
			log.Error("webhook matcher: invalid change dropped", "change_id", c.ID, "error", err)
			_ = m.Term()
		case err != nil:
			if ctx.Err() == nil {
				log.Warn("webhook matcher: change not recorded; JetStream will redeliver it", "change_id", c.ID, "error", err)
			}
		default:
			_ = m.Ack()
		}
	}
}

// handleJob makes one delivery attempt. It is acknowledged once the attempt is recorded, or when there
// was nothing to do (a duplicate, stale or malformed job).
func handleJob(svc *webhooks.Service, log *slog.Logger) func(context.Context, jetstream.Msg) {
	return func(ctx context.Context, m jetstream.Msg) {
		id, attempt, err := decodeJob(m.Data())
		if err != nil {
			log.Error("webhook worker: job dropped", "error", err)
			_ = m.Term()
			return
		}
		if err := svc.Deliver(ctx, id, attempt); err != nil {
			if ctx.Err() == nil {
				log.Warn("webhook worker: attempt not recorded; JetStream will redeliver the job", "delivery_id", id, "error", err)
			}
			return
		}
		_ = m.Ack()
	}
}
