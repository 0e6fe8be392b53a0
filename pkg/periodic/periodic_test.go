package periodic_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/periodic"
)

func TestRunCallsEveryIntervalAndStopsWithItsContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	done := make(chan error, 1)
	start := time.Now()
	var first atomic.Int64
	go func() {
		done <- periodic.Run(ctx, 20*time.Millisecond, func(context.Context) {
			if calls.Add(1) == 1 {
				first.Store(int64(time.Since(start)))
			}
		})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("got %d calls in 5 s, want at least 3", calls.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Duration(first.Load()); d < 20*time.Millisecond {
		t.Errorf("first call after %v, want one interval after the start", d)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: got %v, want context.Canceled", err)
	}
}
