package meter_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
)

// memSink is a sink that keeps nothing: for measuring the meter alone.
type memSink struct{}

func (memSink) WriteBatch(context.Context, meter.Batch) error        { return nil }
func (memSink) Usage(context.Context, string, string) (int64, error) { return 0, nil }

// open is a plan whose limits never refuse, so that loops measure the admitted path.
var open = meter.Plan{Name: "open", IncludedCalls: 1 << 50, HardQuota: true, RatePerSecond: 1e12, Burst: 1 << 40, MaxInFlight: 1 << 20}

// TestAdmitAllocatesNothing is not parallel: AllocsPerRun refuses to run beside other tests.
func TestAdmitAllocatesNothing(t *testing.T) {
	ctx := context.Background()
	noQuota := open
	noQuota.HardQuota = false
	for _, p := range []meter.Plan{open, noQuota} {
		m := meter.New(memSink{}, meter.WithClock(newClock(november).Now), meter.WithLogger(quiet))
		key := uuid.NewString()
		warm := admit(t, m, key, p, 1) // creates the key's state and reads its usage
		warm.Release()
		allocs := testing.AllocsPerRun(1000, func() {
			tk, err := m.Admit(ctx, key, p, 1)
			if err != nil {
				panic(err)
			}
			tk.Release()
		})
		if allocs != 0 {
			t.Errorf("Admit+Release with HardQuota=%v: got %v allocations, want 0", p.HardQuota, allocs)
		}
	}
}

// BenchmarkAdmit measures Admit+Release from parallel goroutines, each on its own key (the common
// case: many callers) or all on one key (one caller's concurrency).
func BenchmarkAdmit(b *testing.B) {
	for _, c := range []struct {
		name     string
		distinct bool
	}{{"distinct_keys", true}, {"one_key", false}} {
		b.Run(c.name, func(b *testing.B) {
			m := meter.New(memSink{}, meter.WithLogger(quiet))
			shared := uuid.NewString()
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				key := shared
				if c.distinct {
					key = uuid.NewString()
				}
				for pb.Next() {
					tk, err := m.Admit(ctx, key, open, 1)
					if err != nil {
						b.Error(err)
						return
					}
					tk.Release()
				}
			})
		})
	}
}

// BenchmarkCommit measures Admit+Commit of one call with its request record, parallel on distinct
// keys, while Run flushes to a sink that keeps nothing.
func BenchmarkCommit(b *testing.B) {
	m := meter.New(memSink{}, meter.WithFlushInterval(10*time.Millisecond), meter.WithLogger(quiet))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	var seq atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key, account := uuid.NewString(), uuid.NewString()
		r := rec("", key, account)
		prefix := uuid.NewString() + "."
		for pb.Next() {
			tk, err := m.Admit(ctx, key, open, 1)
			if err != nil {
				b.Error(err)
				return
			}
			r.RequestID = prefix + strconv.FormatInt(seq.Add(1), 10)
			tk.Commit(1, r)
		}
	})
}
