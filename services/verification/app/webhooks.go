package app

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/events"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// relayBatch is how many outbox rows one transaction of the service's relay claims
// (platform.Spec.Relay); a retry or replay wave is one job per delivery, so batches are larger than
// the relay's default of 100.
const relayBatch = 500

// relayGather is how long the relay lets changes committed one at a time gather before it publishes
// them (outbox.WithGather): each change is one outbox row, and the relay's transaction, its
// statements and its wait for JetStream's acknowledgement were a tenth of the service's CPU per
// change in the fan-out bench while changes arrived one by one. Webhook deliveries do not wait on
// it: the matchers take changes from the database, not from the bus.
const relayGather = 10 * time.Millisecond

// WebhookSettings are the watch and webhook pipeline's variables, read behind EnvPrefix.
type WebhookSettings struct {
	// Workers is how many deliveries are POSTed at once per replica: first attempts, which the
	// replica that matched a change sends itself, and the work queue's jobs (retries, replays, alerts,
	// first attempts a stopped replica left) together. A POST holds no database connection while it
	// waits for a receiver, so slow receivers cost goroutines, not connections.
	Workers int `env:"WEBHOOK_WORKERS" envDefault:"64"`
	// AllowPrivateCIDRs lists the private networks endpoints may live in (default none); inside them,
	// plain http is accepted for IP-literal URLs.
	AllowPrivateCIDRs string `env:"ALLOW_PRIVATE_CIDRS"`
	// Timeout caps one POST; a receiver should answer at once and do its work afterwards.
	Timeout time.Duration `env:"WEBHOOK_TIMEOUT" envDefault:"10s"`
	// MaxAttempts is how many POSTs a delivery gets before it is exhausted.
	MaxAttempts int `env:"WEBHOOK_MAX_ATTEMPTS" envDefault:"10"`
	// RetryBase and RetryMax shape the retry schedule (see webhooks.Config).
	RetryBase time.Duration `env:"WEBHOOK_RETRY_BASE" envDefault:"30s"`
	RetryMax  time.Duration `env:"WEBHOOK_RETRY_MAX" envDefault:"4h"`
	// DisableAfter disables an endpoint after this many deliveries in a row exhausted their attempts.
	DisableAfter int `env:"WEBHOOK_DISABLE_AFTER" envDefault:"5"`
	// SchedulerInterval is how often due retries are looked for.
	SchedulerInterval time.Duration `env:"WEBHOOK_SCHEDULER_INTERVAL" envDefault:"1s"`
	// RequeueAfter is how long an enqueued job may go unanswered before it is enqueued again.
	RequeueAfter time.Duration `env:"WEBHOOK_REQUEUE_AFTER" envDefault:"15m"`
	// MaxActiveWatches caps an organization's active watches (403 watch_limit_reached).
	MaxActiveWatches int `env:"WATCH_LIMIT" envDefault:"100"`
	// MaxEndpoints caps an organization's endpoints (403 webhook_endpoint_limit_reached).
	MaxEndpoints int `env:"WEBHOOK_ENDPOINT_LIMIT" envDefault:"20"`

	allowPrivate []netip.Prefix
}

// Validate checks the settings; prefix is the one they were loaded behind, so errors name the real
// variables.
func (s *WebhookSettings) Validate(prefix string) error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, config.Invalid(prefix+name, format, args...))
	}
	cidrs, err := safehttp.ParseCIDRs(s.AllowPrivateCIDRs)
	if err != nil {
		bad("ALLOW_PRIVATE_CIDRS", "%v", err)
	}
	s.allowPrivate = cidrs
	if s.Workers < 1 || s.Workers > 256 {
		bad("WEBHOOK_WORKERS", "must be between 1 and 256")
	}
	if s.Timeout <= 0 || s.Timeout > time.Minute {
		bad("WEBHOOK_TIMEOUT", "must be positive and at most 1m")
	}
	if s.MaxAttempts < 1 || s.MaxAttempts > 30 {
		bad("WEBHOOK_MAX_ATTEMPTS", "must be between 1 and 30")
	}
	if s.RetryBase <= 0 {
		bad("WEBHOOK_RETRY_BASE", "must be positive")
	}
	if s.RetryMax < s.RetryBase || s.RetryMax > 24*time.Hour {
		bad("WEBHOOK_RETRY_MAX", "must be at least WEBHOOK_RETRY_BASE and at most 24h")
	}
	if s.DisableAfter < 1 {
		bad("WEBHOOK_DISABLE_AFTER", "must be at least 1")
	}
	if s.SchedulerInterval <= 0 {
		bad("WEBHOOK_SCHEDULER_INTERVAL", "must be positive")
	}
	// A job waits in the queue and runs for up to WEBHOOK_TIMEOUT; re-enqueueing it sooner than twice
	// that would mostly duplicate jobs that are merely busy.
	if s.RequeueAfter < 2*s.Timeout {
		bad("WEBHOOK_REQUEUE_AFTER", "must be at least twice WEBHOOK_TIMEOUT")
	}
	if s.MaxActiveWatches < 1 {
		bad("WATCH_LIMIT", "must be at least 1")
	}
	if s.MaxEndpoints < 1 {
		bad("WEBHOOK_ENDPOINT_LIMIT", "must be at least 1")
	}
	return errors.Join(errs...)
}

func (s *WebhookSettings) domainConfig() webhooks.Config {
	return webhooks.Config{
		MaxActiveWatches: s.MaxActiveWatches, MaxEndpoints: s.MaxEndpoints, Timeout: s.Timeout,
		Workers: s.Workers, MaxAttempts: s.MaxAttempts, RetryBase: s.RetryBase, RetryMax: s.RetryMax, DisableAfter: s.DisableAfter,
		RequeueAfter: s.RequeueAfter, AllowPrivate: s.allowPrivate,
	}
}

// registerWebhooks wires the watch and webhook pipeline: the WebhookService routes, the change
// matcher (which takes the changes this service commits from its queue in the database, and sends
// first attempts), the pool of delivery workers (a durable consumer of the webhook.delivery work
// queue) and the retry scheduler. It returns the subscription that wakes the matcher, for the
// replica's change listener (watchChanges).
func registerWebhooks(ctx context.Context, cfg Config, p *platform.Platform) (store.Subscription, error) {
	s := cfg.Webhooks
	// Validated again for a Config that did not come from LoadConfig: Validate also parses the
	// private networks the delivery client may reach.
	if err := s.Validate(""); err != nil {
		return store.Subscription{}, fmt.Errorf("webhook settings: %w", err)
	}
	pool, err := openPool(ctx, p.Pool, s.Workers)
	if err != nil {
		return store.Subscription{}, err
	}
	p.OnClose(pool.Close)
	servers := serverCatalog{store.NewIntelligence(p.Pool, events.Outbox{})}
	svc := webhooks.NewService(store.NewWebhooks(pool, events.Outbox{}), servers, s.domainConfig(), webhooks.WithLogger(p.Log))
	if err := p.Server.Register(&verificationv1.WebhookService_ServiceDesc, api.NewWebhooks(svc),
		serve.Gateway(verificationv1.RegisterWebhookServiceHandlerClient, verificationv1.NewWebhookServiceClient)); err != nil {
		return store.Subscription{}, err
	}
	p.Go(svc.RunMatcher)
	p.Go(events.Workers(p.Bus, p.Log, svc, s.Workers, webhooks.LeaseFor(s.Timeout)).Run)
	p.Go(func(ctx context.Context) error { return svc.RunScheduler(ctx, s.SchedulerInterval) })
	return store.PendingChanges(svc.Wake), nil
}

// serverCatalog tells the watch routes which servers the registry sync knows.
type serverCatalog struct{ st *store.Intelligence }

func (c serverCatalog) Exists(ctx context.Context, namespace, name string) (bool, error) {
	_, err := c.st.ServerID(ctx, intelligence.ServerKey{Namespace: namespace, Name: name})
	if errors.Is(err, fault.ErrServerNotFound) {
		return false, nil
	}
	return err == nil, err
}

// openPool opens the pipeline's own connection pool on the service's database, so that a burst of
// deliveries never queues the API's requests behind it (the shared pool defaults to 4 connections on
// a 2-core machine). Workers hold a connection only for a statement, so at most 16 serve them; the
// rest serve the matcher, the scheduler and the webhook routes.
func openPool(ctx context.Context, shared *pgxpool.Pool, workers int) (*pgxpool.Pool, error) {
	cfg := shared.Config()
	cfg.MaxConns = int32(min(workers, 16) + webhooks.MatcherConcurrency + 2)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("webhook pool: %w", err)
	}
	return pool, nil
}
