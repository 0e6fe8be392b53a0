package webhooks

import (
	"context"
	"time"
)

// scheduleBatch bounds the deliveries one scheduler transaction enqueues.
const scheduleBatch = 500

// inboxRetention is how long handled change ids are remembered: longer than the INTEL_CHANGES stream
// keeps messages (30 days), so no redelivered change can outlive its idempotency key.
const inboxRetention = 31 * 24 * time.Hour

// RunScheduler enqueues due retries (and re-enqueues jobs that went unanswered) every interval until
// ctx ends. Several replicas may run it: Store.EnqueueDue claims rows with FOR UPDATE SKIP LOCKED.
func (s *Service) RunScheduler(ctx context.Context, interval time.Duration) error {
	var lastPrune time.Time
	for {
		n, err := s.store.EnqueueDue(ctx, scheduleBatch, s.cfg.RequeueAfter)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("webhook scheduler: enqueue failed; will retry", "error", err)
		}
		if time.Since(lastPrune) > time.Hour {
			if err := s.store.PruneInbox(ctx, inboxRetention); err != nil && ctx.Err() == nil {
				s.log.Warn("webhook scheduler: prune failed", "error", err)
			} else {
				lastPrune = time.Now()
			}
		}
		if n == scheduleBatch {
			continue // more are due
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}
