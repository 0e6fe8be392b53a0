package intelligence

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/trustlayer/trustlayer/pkg/periodic"
)

// SweepStore is the persistence of the remote sweep.
type SweepStore interface {
	// ClaimDueRemotes refreshes the list of remote URLs that current snapshots list and claims up to
	// n that are due, each once per due time across replicas, moving it interval ahead.
	ClaimDueRemotes(ctx context.Context, interval time.Duration, n int) ([]string, error)
	// RecordSweepError keeps the outcome of a URL's last sweep audit ("" for a success).
	RecordSweepError(ctx context.Context, url, msg string) error
}

// RemoteAuditor audits a remote URL through the audit use case (SSRF guard, limits, report stored,
// tool surface recorded with the report).
type RemoteAuditor interface {
	AuditRemote(ctx context.Context, url string) error
}

// SweepOptions tune the sweep.
type SweepOptions struct {
	// Interval is how often each listed remote is audited.
	Interval time.Duration
	// Tick is how often a replica looks for due remotes.
	Tick time.Duration
	// Concurrency bounds the audits one replica runs at once; Batch the remotes it claims per tick.
	Concurrency int
	Batch       int
}

// Sweeper audits every remote URL that a current listing names, once per Interval, so that the
// timelines hold live tool surfaces even of servers nobody audits or watches.
type Sweeper struct {
	store   SweepStore
	auditor RemoteAuditor
	opts    SweepOptions
	log     *slog.Logger
}

// NewSweeper returns a Sweeper.
func NewSweeper(st SweepStore, a RemoteAuditor, opts SweepOptions, log *slog.Logger) *Sweeper {
	opts.Concurrency = max(1, opts.Concurrency)
	opts.Batch = max(opts.Concurrency, opts.Batch)
	if opts.Tick <= 0 {
		opts.Tick = time.Minute
	}
	return &Sweeper{store: st, auditor: a, opts: opts, log: log}
}

// Run sweeps at once, then every Tick, until ctx ends.
func (s *Sweeper) Run(ctx context.Context) error {
	sweep := func(ctx context.Context) {
		if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.WarnContext(ctx, "remote sweep failed; retrying at the next tick", "error", err)
		}
	}
	sweep(ctx)
	return periodic.Run(ctx, s.opts.Tick, sweep)
}

// Sweep claims the due remotes (at most Batch) and audits them, Concurrency at a time; it returns
// how many it audited. An audit that fails is logged and recorded, and its remote waits for its next
// due time.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	urls, err := s.store.ClaimDueRemotes(ctx, s.opts.Interval, s.opts.Batch)
	if err != nil {
		return 0, err
	}
	slots := make(chan struct{}, s.opts.Concurrency)
	var wg sync.WaitGroup
	for _, u := range urls {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			msg := ""
			if err := s.auditor.AuditRemote(ctx, u); err != nil {
				msg = err.Error()
				s.log.WarnContext(ctx, "remote sweep audit failed", "url", u, "error", err)
			}
			if err := s.store.RecordSweepError(context.WithoutCancel(ctx), u, msg); err != nil {
				s.log.WarnContext(ctx, "remote sweep: record outcome", "url", u, "error", err)
			}
		})
	}
	wg.Wait()
	return len(urls), nil
}
