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

// TestSleepWaitsOrStopsWithItsContext: Sleep returns nil once d has passed, ctx's error at once when
// ctx ends first, and ctx's error without waiting when ctx had ended.
func TestSleepWaitsOrStopsWithItsContext(t *testing.T) {
	t.Parallel()
	start := time.Now()
	if err := periodic.Sleep(context.Background(), 20*time.Millisecond); err != nil || time.Since(start) < 20*time.Millisecond {
		t.Errorf("Sleep(20ms) = %v after %v, want nil after 20ms", err, time.Since(start))
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := periodic.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(1h) cancelled = %v, want context.Canceled", err)
	}
	if err := periodic.Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(0) on an ended context = %v, want context.Canceled", err)
	}
}
