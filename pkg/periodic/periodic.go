// Package periodic runs a function on a fixed interval until its context ends: the shape of every
// background loop the services have (schedulers, exporters, pollers, health watchers), and the
// pauses such loops take (Sleep).
package periodic

import (
	"context"
	"time"
)

// Run calls fn every interval, the first time one interval after the start, until ctx ends, and
// returns ctx's error. fn handles (logs) its own failures: one failed round never stops the loop.
func Run(ctx context.Context, every time.Duration, fn func(context.Context)) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		fn(ctx)
	}
}

// Sleep waits d, or until ctx ends; it returns ctx's error when ctx ended first (or had ended), nil
// otherwise.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
