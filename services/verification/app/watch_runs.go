package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
	"github.com/trustlayer/trustlayer/services/verification/internal/events"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/watch"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// WatchRunSettings are the variables of the watch runs' scheduler, read behind EnvPrefix.
type WatchRunSettings struct {
	// Scheduler runs due watches on this replica; a replica without it still serves run-now.
	Scheduler bool `env:"WATCH_SCHEDULER" envDefault:"true"`
	// SchedulerInterval is how often a replica with free slots looks for due watches (a run that
	// ends wakes it at once).
	SchedulerInterval time.Duration `env:"WATCH_SCHEDULER_INTERVAL" envDefault:"1s"`
	// RunConcurrency bounds the scheduled runs one replica has in flight.
	RunConcurrency int `env:"WATCH_RUN_CONCURRENCY" envDefault:"16"`
	// PerHost bounds the scheduled runs of one target host one replica has in flight.
	PerHost int `env:"WATCH_PER_HOST" envDefault:"2"`
}

// Validate checks the settings; prefix names the variables.
func (s *WatchRunSettings) Validate(prefix string) error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, config.Invalid(prefix+name, format, args...))
	}
	if s.SchedulerInterval < 10*time.Millisecond || s.SchedulerInterval > time.Hour {
		bad("WATCH_SCHEDULER_INTERVAL", "must be between 10ms and 1h")
	}
	if s.RunConcurrency < 1 || s.RunConcurrency > 1024 {
		bad("WATCH_RUN_CONCURRENCY", "must be between 1 and 1024")
	}
	if s.PerHost < 1 || s.PerHost > s.RunConcurrency {
		bad("WATCH_PER_HOST", "must be between 1 and WATCH_RUN_CONCURRENCY")
	}
	return errors.Join(errs...)
}

// watchRunLeaseMargin is how much longer than an audit's deadline a run holds its watch: time to
// read the previous run, publish the alert and record the run.
const watchRunLeaseMargin = time.Minute

// WatchRunParts are what the watch use cases need to run audits (watch.Deps' Runs, Auditor and
// Alerts), made once per platform: the routes' Service (run-now) and the scheduler share them.
type WatchRunParts struct {
	Runs    *store.WatchRuns
	Auditor watch.Auditor
	Alerts  watch.Alerts
}

// Deps returns d with the run parts set.
func (r WatchRunParts) Deps(d watch.Deps) watch.Deps {
	d.Runs, d.Auditor, d.Alerts = r.Runs, r.Auditor, r.Alerts
	return d
}

// newWatchRunParts makes the run parts over a connection pool of their own (so that a burst of
// runs never queues the API's requests behind it): the run store, an audit service whose reports
// this service's audit tokens of subject "watch:<organization id>" read, and the alerts, published
// through the organization's webhook endpoints.
func newWatchRunParts(ctx context.Context, cfg Config, p *platform.Platform) (WatchRunParts, error) {
	s, a := cfg.WatchRuns, cfg.Audits
	pc := p.Pool.Config()
	pc.MaxConns = int32(min(s.RunConcurrency, 8) + 4)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return WatchRunParts{}, fmt.Errorf("watch run pool: %w", err)
	}
	p.OnClose(pool.Close)
	auditor := watchAuditor{
		svc:    cfg.audit.audits.WithStore(store.NewAudits(pool)),
		issuer: a.Issuer,
	}
	hooks := webhooks.NewService(store.NewWebhooks(pool, events.Outbox{}), nil, cfg.Webhooks.domainConfig(), webhooks.WithLogger(p.Log))
	return WatchRunParts{
		Runs:    store.NewWatchRuns(pool, a.Timeout+watchRunLeaseMargin),
		Auditor: auditor,
		Alerts:  watchAlerts{hooks: hooks},
	}, nil
}

// startWatchScheduler runs svc's scheduler on p, unless this replica's is turned off.
func startWatchScheduler(cfg Config, p *platform.Platform, svc *watch.Service) {
	s := cfg.WatchRuns
	if !s.Scheduler {
		p.Log.Info("watch scheduler off on this replica (VERIFICATION_WATCH_SCHEDULER=false)")
		return
	}
	sc := watch.SchedulerConfig{Interval: s.SchedulerInterval, Concurrency: s.RunConcurrency, PerHost: s.PerHost, Log: p.Log}
	p.Go(func(ctx context.Context) error { return svc.RunScheduler(ctx, sc) })
}

// watchAuditor runs a watch's audits through the audit use case, as this service's own issuer: the
// watch package names the subject.
type watchAuditor struct {
	svc    *audits.Service
	issuer string
}

func (a watchAuditor) Run(ctx context.Context, kind string, t audit.Target, h audits.Holder) (audits.Record, error) {
	h.Issuer = a.issuer
	return a.svc.Run(ctx, kind, t, h)
}

// watchAlerts publishes the events of watch runs through the webhook pipeline.
type watchAlerts struct{ hooks *webhooks.Service }

func (a watchAlerts) Publish(ctx context.Context, ev watch.AlertEvent) (int, error) {
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return 0, err
	}
	return a.hooks.Publish(ctx, webhooks.OrgEvent{OrganizationID: ev.OrganizationID, Type: ev.Type, Key: ev.Key, At: ev.At, Data: data})
}
