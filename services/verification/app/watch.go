package app

import (
	"context"
	"errors"
	"time"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/watch"
)

// WatchAPISettings are the variables of the watch API (/v1/watch/*), read behind EnvPrefix.
type WatchAPISettings struct {
	// Limit is the plan's cap of an organization's watches that are not archived (active and
	// paused): 403 watch_limit_reached past it. The free plan's is 10.
	Limit int `env:"WATCH_API_LIMIT" envDefault:"10"`
	// MinInterval and DefaultInterval bound and default a watch's intervalSeconds (whole seconds).
	MinInterval     time.Duration `env:"WATCH_API_MIN_INTERVAL" envDefault:"60s"`
	DefaultInterval time.Duration `env:"WATCH_API_DEFAULT_INTERVAL" envDefault:"1h"`
}

// Validate checks the settings; prefix names the variables.
func (s *WatchAPISettings) Validate(prefix string) error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, config.Invalid(prefix+name, format, args...))
	}
	if s.Limit < 1 || s.Limit > 100000 {
		bad("WATCH_API_LIMIT", "must be between 1 and 100000")
	}
	if s.MinInterval < time.Second || s.MinInterval > watch.MaxInterval || s.MinInterval%time.Second != 0 {
		bad("WATCH_API_MIN_INTERVAL", "must be whole seconds between 1s and 720h")
	}
	if s.DefaultInterval < s.MinInterval || s.DefaultInterval > watch.MaxInterval || s.DefaultInterval%time.Second != 0 {
		bad("WATCH_API_DEFAULT_INTERVAL", "must be whole seconds between WATCH_API_MIN_INTERVAL and 720h")
	}
	return errors.Join(errs...)
}

// watchKeys is the watch API keys' check for the authentication interceptor, which is built before
// Register runs: it needs the store alone.
func watchKeys(p *platform.Platform) api.WatchKeyLookup {
	return watch.New(watch.Deps{Store: store.NewWatches(p.Pool)}).Authenticate
}

// registerWatchAPI adds the watch API's routes: keys, watches, policies and runs.
func registerWatchAPI(ctx context.Context, cfg Config, p *platform.Platform) error {
	s := cfg.Watch
	// The runs' parts (store, auditor, alerts) and the scheduler: app/watch_runs.go.
	runs, err := newWatchRunParts(ctx, cfg, p)
	if err != nil {
		return err
	}
	svc := watch.New(runs.Deps(watch.Deps{
		Store: store.NewWatches(p.Pool),
		// A watch's target passes the audit engine's own checks (registerAudits), resolved at creation.
		CheckTarget: cfg.Audits.checkTarget,
		Limit:       s.Limit, MinInterval: s.MinInterval, DefaultInterval: s.DefaultInterval,
		Log: p.Log,
	}))
	startWatchScheduler(cfg, p, svc)
	return p.Server.Register(&verificationv1.WatchService_ServiceDesc, api.NewWatch(svc),
		serve.Gateway(verificationv1.RegisterWatchServiceHandlerClient, verificationv1.NewWatchServiceClient))
}
