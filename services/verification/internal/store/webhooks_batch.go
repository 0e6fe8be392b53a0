package store

import (
	"context"
	"sync"
	"time"
)

// coalescer groups the requests that callers make while the database is busy with earlier ones: a
// group commit. Up to parallel runs go at once; a caller that finds fewer running runs its own
// request at once, so an idle pipeline waits for no batch. Callers arriving while parallel runs are
// in flight queue up, and when a run ends the first of them runs the queue (up to max requests) in
// one go. Delivery workers claim and record deliveries through it: each run is one transaction, so N
// workers cost about N/max commits (and WAL flushes) instead of N, while a few runs in flight keep
// the database busy between them.
type coalescer[Q, R any] struct {
	max, parallel int
	// run does reqs in one go and returns one result per request, in order; an error fails them all.
	run func(ctx context.Context, reqs []Q) ([]R, error)

	mu      sync.Mutex
	queue   []*coalescedCall[Q, R]
	running int
}

type coalescedCall[Q, R any] struct {
	req  Q
	res  R
	err  error
	done chan struct{}
	// lead is set when the call is woken to run batch (which it heads) rather than with its result.
	lead  bool
	batch []*coalescedCall[Q, R]
}

// coalescedRunTimeout bounds one run. A run carries other callers' requests, so it does not end with
// the context of the caller that happens to run it (a worker shutting down would fail the others).
const coalescedRunTimeout = 30 * time.Second

func newCoalescer[Q, R any](max, parallel int, run func(context.Context, []Q) ([]R, error)) *coalescer[Q, R] {
	return &coalescer[Q, R]{max: max, parallel: parallel, run: run}
}

// do runs req, alone or with the requests queued beside it, and returns its result.
func (c *coalescer[Q, R]) do(ctx context.Context, req Q) (R, error) {
	call := &coalescedCall[Q, R]{req: req, done: make(chan struct{})}
	c.mu.Lock()
	var batch []*coalescedCall[Q, R]
	if c.running < c.parallel {
		c.running++
		batch = []*coalescedCall[Q, R]{call}
		c.mu.Unlock()
	} else {
		c.queue = append(c.queue, call)
		c.mu.Unlock()
		<-call.done
		if !call.lead {
			return call.res, call.err
		}
		// Woken to lead: the slot of the run that just ended is ours, and so is the batch it took
		// off the queue for us.
		batch = call.batch
	}

	reqs := make([]Q, len(batch))
	for i, b := range batch {
		reqs[i] = b.req
	}
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), coalescedRunTimeout)
	res, err := c.run(runCtx, reqs)
	cancel()
	for i, b := range batch {
		if err != nil {
			b.err = err
		} else {
			b.res = res[i]
		}
		if b != call {
			close(b.done)
		}
	}

	c.mu.Lock()
	if len(c.queue) > 0 {
		// Hand this run's slot, and the next batch, to the head of the queue.
		next := c.queue[0]
		next.batch = c.queue[:min(len(c.queue), c.max)]
		c.queue = c.queue[len(next.batch):]
		next.lead = true
		close(next.done)
	} else {
		c.running--
		if c.running == 0 {
			c.queue = nil
		}
	}
	c.mu.Unlock()
	return call.res, call.err
}
