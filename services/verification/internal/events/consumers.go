package events

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// workerConsumer is the durable consumer of the work queue, shared by every replica.
const workerConsumer = "webhook-workers"

// A job whose attempt could not be recorded for a passing reason (the database is down) is left
// unacknowledged: JetStream redelivers it after AckWait, which spaces the retries without a NAK that
// would park it.

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
