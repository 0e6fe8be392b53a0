package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Subscription is one channel WatchChanges LISTENs to, and whom it tells.
type Subscription struct {
	// Channel is the NOTIFY channel, one a migration's trigger notifies.
	Channel string
	// Live is told whether every notification of the channel is being heard from now on: true once
	// the listener listens, false as soon as its connection is lost or the watch ends.
	Live func(on bool)
	// Notify is called with each notification's payload, in the order of the commits.
	Notify func(payload string)
}

// Timing of the listener: how long it waits for a notification before checking that its connection
// still answers (a connection that died without an error would otherwise look like a quiet channel),
// how long that check may take, and the pause before reconnecting.
const (
	changesQuiet   = 5 * time.Second
	changesPing    = 2 * time.Second
	changesBackoff = time.Second
)

// WatchChanges LISTENs to every subscription's channel on one connection of its own (cfg), until
// ctx ends: one connection per replica for all its caches and the webhook matcher. Each subscription
// is live while the listener is listening and checked, and is notified of each payload of its
// channel. A lost connection turns every subscription off until the listener listens again.
func WatchChanges(ctx context.Context, cfg *pgx.ConnConfig, log *slog.Logger, subs ...Subscription) error {
	byChannel := make(map[string]Subscription, len(subs))
	channels := make([]string, 0, len(subs))
	for _, s := range subs {
		byChannel[s.Channel] = s
		channels = append(channels, s.Channel)
	}
	for {
		err := listenChanges(ctx, cfg, byChannel)
		for _, s := range subs {
			s.Live(false)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// Each subscriber knows its own fallback (caches read the database, the webhook matcher polls).
		log.Warn("change listener lost its connection; its subscribers fall back until it is back", "channels", channels, "error", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(changesBackoff):
		}
	}
}

func listenChanges(ctx context.Context, cfg *pgx.ConnConfig, subs map[string]Subscription) error {
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for ch := range subs {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			return fmt.Errorf("listen %s: %w", ch, err)
		}
	}
	// Live only once every LISTEN holds: a change committed from now on is heard.
	for _, s := range subs {
		s.Live(true)
	}
	for {
		wait, cancel := context.WithTimeout(ctx, changesQuiet)
		n, err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil:
			if s, ok := subs[n.Channel]; ok {
				s.Notify(n.Payload)
			}
		case wait.Err() != nil:
			ping, cancel := context.WithTimeout(ctx, changesPing)
			err = conn.Ping(ping)
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}
