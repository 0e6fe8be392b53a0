package webhookwire

import (
	"context"
	"errors"
	"log/slog"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/proto"

	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// A message whose handling failed for a passing reason (the database is down) is left unacknowledged:
// JetStream redelivers it after AckWait, which spaces the retries without a NAK that would park it.

// handleChange matches one intel.change message. It is acknowledged once the transaction that
// recorded it (or found it recorded before) has committed.
func handleChange(svc *webhooks.Service, log *slog.Logger) func(context.Context, jetstream.Msg) {
	return func(ctx context.Context, m jetstream.Msg) {
		var ev verificationv1.IntelChange
		if err := proto.Unmarshal(m.Data(), &ev); err != nil {
			log.Error("webhook matcher: undecodable change dropped", "subject", m.Subject(), "error", err)
			_ = m.Term()
			return
		}
		_, err := svc.HandleChange(ctx, webhooks.Change{
			ID: ev.GetChangeId(), Namespace: ev.GetNamespace(), Name: ev.GetName(), FromVersion: ev.GetFromVersion(),
			ToVersion: ev.GetToVersion(), ChangeType: ev.GetChangeType(), Risk: ev.GetRisk(), Summary: ev.GetSummary(),
			Field: ev.GetField(), OldValue: ev.GetOldValue(), NewValue: ev.GetNewValue(), DetectedAt: ev.GetDetectedAt().AsTime(),
		})
		switch {
		case errors.Is(err, webhooks.ErrInvalidChange):
			log.Error("webhook matcher: invalid change dropped", "change_id", ev.GetChangeId(), "error", err)
			_ = m.Term()
		case err != nil:
			if ctx.Err() == nil {
				log.Warn("webhook matcher: change not recorded; JetStream will redeliver it", "change_id", ev.GetChangeId(), "error", err)
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
		var job verificationv1.WebhookDeliveryJob
		if err := proto.Unmarshal(m.Data(), &job); err != nil {
			log.Error("webhook worker: undecodable job dropped", "error", err)
			_ = m.Term()
			return
		}
		id, err := uuid.Parse(job.GetDeliveryId())
		if err != nil || job.GetAttempt() < 1 {
			log.Error("webhook worker: malformed job dropped", "delivery_id", job.GetDeliveryId(), "attempt", job.GetAttempt())
			_ = m.Term()
			return
		}
		if err := svc.Deliver(ctx, id, int(job.GetAttempt())); err != nil {
			if ctx.Err() == nil {
				log.Warn("webhook worker: attempt not recorded; JetStream will redeliver the job", "delivery_id", id, "error", err)
			}
			return
		}
		_ = m.Ack()
	}
}
