// Package periodic runs a function on a fixed interval until its context ends: the shape of every
// background loop the services have (schedulers, exporters, pollers, health watchers).
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
