package watch

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Scheduler defaults (app.WatchRunSettings documents them).
const (
	DefaultSchedulerInterval = time.Second
	DefaultRunConcurrency    = 16
	DefaultPerHost           = 2
)

// candidatesPerSlot is how many due watches a claim considers per free slot: enough that a host at
// its limit does not hide the watches of other hosts behind it.
const candidatesPerSlot = 4

// SchedulerConfig shapes one replica's scheduler.
type SchedulerConfig struct {
	// Interval is the longest the scheduler waits between two looks for due watches: it sleeps until
	// the next run falls due when that is sooner, and a run that ends frees its slot and wakes it at
	// once.
	Interval time.Duration
	// Concurrency bounds the runs this replica has in flight.
	Concurrency int
	// PerHost bounds the runs of one target host this replica has in flight, so that many watches
	// of one host never hammer it.
	PerHost int
	// Log is where it logs; nil means the service's (Deps.Log), or slog.Default() without one.
	Log *slog.Logger
	// OnClaim, when set, is told of each run claimed and how late it starts (now - next_run_at): the
	// scheduling lag (benchmarks, metrics).
	OnClaim func(w Watch, lag time.Duration)
	// OnDone, when set, is told of each run the scheduler finished.
	OnDone func(r Run)
}

func (c SchedulerConfig) withDefaults() SchedulerConfig {
	if c.Interval <= 0 {
		c.Interval = DefaultSchedulerInterval
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultRunConcurrency
	}
	if c.PerHost <= 0 {
		c.PerHost = DefaultPerHost
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

// hostSlots counts this replica's runs in flight, in all and per target host.
type hostSlots struct {
	mu      sync.Mutex
	total   int
	perHost map[string]int
	limit   int
	hostCap int
}

// free is how many more runs may start.
func (h *hostSlots) free() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.limit - h.total
}

// saturated lists the hosts at their limit.
func (h *hostSlots) saturated() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := []string{}
	for host, n := range h.perHost {
		if n >= h.hostCap {
			out = append(out, host)
		}
	}
	return out
}

// pick takes, among candidates (earliest due first), those that fit the free slots and their
// hosts' limits, and counts them in flight.
func (h *hostSlots) pick(candidates []Watch) []Watch {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Watch
	for _, w := range candidates {
		if h.total >= h.limit {
			break
		}
		if h.perHost[w.TargetHost] >= h.hostCap {
			continue
		}
		h.total++
		h.perHost[w.TargetHost]++
		out = append(out, w)
	}
	return out
}

// release undoes pick for ws: the claim failed, or their runs ended.
func (h *hostSlots) release(ws ...Watch) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, w := range ws {
		h.total--
		if h.perHost[w.TargetHost]--; h.perHost[w.TargetHost] <= 0 {
			delete(h.perHost, w.TargetHost)
		}
	}
}

// RunScheduler runs due watches until ctx ends, then waits for the runs in flight (which end with
// ctx and are recorded failed). Several replicas may run it on one database: a claim leases each
// watch it takes (RunStore.ClaimDue, FOR UPDATE SKIP LOCKED), so a watch never runs twice at once.
// Each replica runs at most cfg.Concurrency runs, and cfg.PerHost of one target host, at a time; a
// run sets its watch's next run one interval (plus jitter) after it started.
func (s *Service) RunScheduler(ctx context.Context, cfg SchedulerConfig) error {
	if cfg.Log == nil {
		cfg.Log = s.log
	}
	cfg = cfg.withDefaults()
	slots := &hostSlots{perHost: map[string]int{}, limit: cfg.Concurrency, hostCap: cfg.PerHost}
	var wg sync.WaitGroup
	defer wg.Wait()
	wake := make(chan struct{}, 1)
	timer := time.NewTimer(cfg.Interval)
	defer timer.Stop()
	for {
		if n := slots.free(); n > 0 {
			now := s.clock()
			var picked []Watch
			claimed, err := s.runs.ClaimDue(ctx, Claim{
				Now: now, Candidates: n * candidatesPerSlot, SkipHosts: slots.saturated(),
				Pick: func(c []Watch) []Watch {
					// A retried transaction calls Pick again: undo the previous try's counts.
					slots.release(picked...)
					picked = slots.pick(c)
					return picked
				},
			})
			if err != nil {
				slots.release(picked...)
				if ctx.Err() == nil {
					cfg.Log.Warn("watch scheduler: claim failed; will retry", "error", err)
				}
			}
			for _, c := range claimed {
				if cfg.OnClaim != nil {
					cfg.OnClaim(c.Watch, now.Sub(c.Watch.NextRunAt))
				}
				wg.Go(func() {
					defer func() {
						slots.release(c.Watch)
						select {
						case wake <- struct{}{}:
						default:
						}
					}()
					r, err := s.execute(ctx, c)
					if err != nil {
						cfg.Log.Warn("watch scheduler: could not record the run", "watch", c.Watch.ID, "run", c.Run.ID, "error", err)
					}
					if cfg.OnDone != nil {
						cfg.OnDone(r)
					}
				})
			}
			if err == nil && len(claimed) > 0 && len(claimed) == n {
				continue // every slot taken: more may be due once one frees
			}
		}
		timer.Reset(s.sleep(ctx, cfg))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		case <-wake:
		}
	}
}

// minSleep keeps the scheduler from spinning on a next run that is due this very moment.
const minSleep = 2 * time.Millisecond

// sleep is how long the scheduler waits for the next claim: until the next run falls due, at most
// cfg.Interval (a run of another replica, or a new watch, may fall due sooner). Due watches it could
// not take (their hosts or its slots were full) wait for a run of its own to end, which wakes it.
func (s *Service) sleep(ctx context.Context, cfg SchedulerConfig) time.Duration {
	next, found, err := s.runs.NextDue(ctx, s.clock())
	if err != nil || !found {
		return cfg.Interval
	}
	return min(max(next.Sub(s.clock()), minSleep), cfg.Interval)
}
