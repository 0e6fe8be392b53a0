package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/buildinfo"
	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/runs"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/schedule"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/web"
)

// ReliabilityRunSettings are the variables of agent reliability's scans, runs, diffs and baselines, read behind EnvPrefix.
type ReliabilityRunSettings struct {
	// Worker runs queued runs on this replica; a replica without it still queues them (scans,
	// enqueue-due) for the replicas that have one.
	Worker bool `env:"RELIABILITY_WORKER" envDefault:"true"`
	// WorkerConcurrency bounds the runs one replica has in flight.
	WorkerConcurrency int `env:"RELIABILITY_WORKER_CONCURRENCY" envDefault:"4"`
	// WorkerPollInterval is how often an idle worker looks for queued runs.
	WorkerPollInterval time.Duration `env:"RELIABILITY_WORKER_POLL_INTERVAL" envDefault:"1s"`
	// RunLease is how long a worker holds a run it took: past it, another worker takes the run
	// again. It must outlast a run's audits (two at most, each capped by AUDIT_TIMEOUT).
	RunLease time.Duration `env:"RELIABILITY_RUN_LEASE" envDefault:"5m"`
	// RunMaxAttempts bounds how often a run is taken; the next take fails it (attempts_exhausted).
	RunMaxAttempts int `env:"RELIABILITY_RUN_MAX_ATTEMPTS" envDefault:"3"`
}

// Validate checks the settings; prefix names the variables.
func (s *ReliabilityRunSettings) Validate(prefix string) error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, config.Invalid(prefix+name, format, args...))
	}
	if s.WorkerConcurrency < 1 || s.WorkerConcurrency > 256 {
		bad("RELIABILITY_WORKER_CONCURRENCY", "must be between 1 and 256")
	}
	if s.WorkerPollInterval < 10*time.Millisecond || s.WorkerPollInterval > time.Hour {
		bad("RELIABILITY_WORKER_POLL_INTERVAL", "must be between 10ms and 1h")
	}
	if s.RunLease < 10*time.Second || s.RunLease > 24*time.Hour {
		bad("RELIABILITY_RUN_LEASE", "must be between 10s and 24h")
	}
	if s.RunMaxAttempts < 1 || s.RunMaxAttempts > 100 {
		bad("RELIABILITY_RUN_MAX_ATTEMPTS", "must be between 1 and 100")
	}
	return errors.Join(errs...)
}

// reliabilityRunLeaseMargin is what a run's lease keeps beyond its audits: reading the baseline and
// policy and recording the run with its evidence.
const reliabilityRunLeaseMargin = 30 * time.Second

// newReliabilityRuns makes the runs use case of p over pool: its audits run through the audit use
// case as watch runs' do (stored in the audits table under this service's issuer, subject
// "reliability:<organization id>", redacted and behind the SSRF guard).
func newReliabilityRuns(cfg Config, p *platform.Platform, pool *pgxpool.Pool) (*runs.Service, error) {
	a := cfg.Audits
	info := buildinfo.Get(Name)
	return runs.New(runs.Deps{
		Store:       store.NewReliabilityRuns(pool),
		Auditor:     watchAuditor{svc: cfg.audit.audits.WithStore(store.NewAudits(pool)), issuer: a.Issuer},
		CheckTarget: a.checkTarget,
		NextDue: func(s runs.Schedule, after time.Time) (time.Time, error) {
			return schedule.Next(schedule.Schedule{IntervalSeconds: s.IntervalSeconds, Cron: s.Cron, Timezone: s.Timezone}, after)
		},
		Issuer:  a.Issuer,
		Version: info.Version + "+" + info.Commit,
	}), nil
}

// reliabilityWorkerConfig is the worker configuration of cfg, owned by a fresh name per replica.
func reliabilityWorkerConfig(cfg Config, p *platform.Platform) runs.WorkerConfig {
	s := cfg.Runs
	lease := max(s.RunLease, 2*cfg.Audits.Timeout+reliabilityRunLeaseMargin)
	return runs.WorkerConfig{Owner: "worker-" + uuid.NewString(), Concurrency: s.WorkerConcurrency, Lease: lease,
		Poll: s.WorkerPollInterval, MaxAttempts: s.RunMaxAttempts, Log: p.Log}
}

// registerReliabilityRuns adds the routes of agent reliability's scans, runs, diffs and baselines.
func registerReliabilityRuns(ctx context.Context, cfg Config, p *platform.Platform) error {
	svc, err := newReliabilityRuns(cfg, p, p.Pool)
	if err != nil {
		return err
	}
	if cfg.Runs.Worker {
		// The worker has a connection pool of its own, so that a burst of runs never queues the
		// API's requests behind it (as the watch runs do).
		pc := p.Pool.Config()
		pc.MaxConns = int32(min(cfg.Runs.WorkerConcurrency, 8) + 4)
		pool, err := pgxpool.NewWithConfig(ctx, pc)
		if err != nil {
			return fmt.Errorf("reliability worker pool: %w", err)
		}
		p.OnClose(pool.Close)
		worker, err := newReliabilityRuns(cfg, p, pool)
		if err != nil {
			return err
		}
		wc := reliabilityWorkerConfig(cfg, p)
		p.Go(func(ctx context.Context) error { return worker.Work(ctx, wc) })
	} else {
		p.Log.Info("agent reliability worker off on this replica (VERIFICATION_RELIABILITY_WORKER=false)")
	}
	return p.Server.Register(&verificationv1.ReliabilityRunService_ServiceDesc, api.NewReliabilityRuns(svc, web.EvidencePage),
		serve.Gateway(verificationv1.RegisterReliabilityRunServiceHandlerClient, verificationv1.NewReliabilityRunServiceClient))
}
