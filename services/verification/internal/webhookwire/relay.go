package webhookwire

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/pkg/outbox"
)

// outboxChannel is the channel migration 00003's trigger notifies when outbox rows are committed.
const outboxChannel = "outbox_pending"

// relayPoll bounds how long a committed event can wait when a notification is missed (the listening
// connection was being re-established).
const relayPoll = time.Second

// wakeRelay relays outbox rows as soon as they are committed: it LISTENs on a connection of its own
// and runs the relay on each notification. The platform's relay polls every 200 ms, which alone would
// put up to two polls (the change, then its delivery jobs) between a change and its delivery. Both
// relays claim rows with SKIP LOCKED, so they never publish the same row at once.
func wakeRelay(ctx context.Context, conn *pgx.ConnConfig, relay *outbox.Relay, log *slog.Logger) error {
	for {
		if err := listen(ctx, conn, relay); err != nil && ctx.Err() == nil {
			log.Warn("webhook relay: listener failed; reconnecting", "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(relayPoll):
		}
	}
}

// relayDrainers is how many relay transactions run at once after a wake-up. The relay awaits each
// message's acknowledgement before the next, so one drainer publishes about 1,500 jobs a second on a
// 2-core machine; SKIP LOCKED gives concurrent drainers disjoint batches.
const relayDrainers = 4

// drain relays until nothing is pending. Failures (NATS down) are the platform relay's to report;
// this one tries again on the next notification or poll.
func drain(ctx context.Context, relay *outbox.Relay) {
	var wg sync.WaitGroup
	for range relayDrainers {
		wg.Go(func() {
			for {
				if n, err := relay.RelayOnce(ctx); err != nil || n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
}

func listen(ctx context.Context, cfg *pgx.ConnConfig, relay *outbox.Relay) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+outboxChannel); err != nil {
		return err
	}
	for {
		drain(ctx, relay)
		wait, cancel := context.WithTimeout(ctx, relayPoll)
		_, err := conn.WaitForNotification(wait)
		cancel()
		if err != nil && wait.Err() == nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
