package store

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCoalescerGivesEachCallerItsOwnResult runs many concurrent callers through a coalescer whose
// runs block until released, so that callers pile up: every caller gets the result of its own
// request, no run exceeds max requests, and no more than parallel runs are ever in flight.
func TestCoalescerGivesEachCallerItsOwnResult(t *testing.T) {
	t.Parallel()
	const callers, maxBatch, parallel = 200, 8, 3
	var inFlight, peak, runs atomic.Int64
	release := make(chan struct{})
	var biggest atomic.Int64
	c := newCoalescer(maxBatch, parallel, func(_ context.Context, reqs []int) ([]int, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if int64(len(reqs)) > biggest.Load() {
			biggest.Store(int64(len(reqs)))
		}
		runs.Add(1)
		<-release
		out := make([]int, len(reqs))
		for i, r := range reqs {
			out[i] = r * 10
		}
		return out, nil
	})
	var wg sync.WaitGroup
	wrong := make(chan string, callers)
	for i := range callers {
		wg.Go(func() {
			got, err := c.do(context.Background(), i)
			if err != nil || got != i*10 {
				wrong <- "wrong result"
			}
		})
	}
	// Every caller is either running (parallel of them, blocked) or queued before any run ends.
	for queued := 0; queued < callers-parallel; runtime.Gosched() {
		c.mu.Lock()
		queued = len(c.queue)
		c.mu.Unlock()
	}
	close(release)
	wg.Wait()
	close(wrong)
	if n := len(wrong); n > 0 {
		t.Fatalf("%d callers got another's result or an error, want none", n)
	}
	if p := peak.Load(); p > parallel {
		t.Errorf("runs in flight at once: got %d, want at most %d", p, parallel)
	}
	if b := biggest.Load(); b > maxBatch {
		t.Errorf("largest run: got %d requests, want at most %d", b, maxBatch)
	}
	if r, want := runs.Load(), int64(parallel+(callers-parallel+maxBatch-1)/maxBatch); r != want {
		t.Errorf("runs: got %d for %d callers, want %d (the queue run in full batches)", r, callers, want)
	}
}

// TestCoalescerFailsTheWholeRun shows that an error of a run reaches every caller in it, and that
// the coalescer goes on serving afterwards.
func TestCoalescerFailsTheWholeRun(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	fail := true
	c := newCoalescer(4, 1, func(_ context.Context, reqs []int) ([]int, error) {
		if fail {
			return nil, boom
		}
		return reqs, nil
	})
	if _, err := c.do(context.Background(), 1); !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	fail = false
	if got, err := c.do(context.Background(), 2); err != nil || got != 2 {
		t.Fatalf("got %d %v, want 2 nil", got, err)
	}
}
