// Package app is the scoring service's composition root: its configuration, its part of the shared
// platform, and the APIs it registers. cmd/scoring runs it; end-to-end tests start it in-process.
package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/pkg/buildinfo"
	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/periodic"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/api"
	"github.com/trustlayer/trustlayer/services/scoring/internal/billing"
	"github.com/trustlayer/trustlayer/services/scoring/internal/controlplane"
	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
	"github.com/trustlayer/trustlayer/services/scoring/internal/feedback"
	"github.com/trustlayer/trustlayer/services/scoring/internal/keys"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/policysignal"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
	webmcp "github.com/trustlayer/trustlayer/services/scoring/internal/web/mcp"
	"github.com/trustlayer/trustlayer/services/scoring/internal/web/oauth"
	"github.com/trustlayer/trustlayer/services/scoring/internal/web/ops"
	"github.com/trustlayer/trustlayer/services/scoring/internal/wire"
)

const (
	// Name is the service name in logs, traces and GET /v1/build.
	Name = "scoring"
	// EnvPrefix starts the name of every variable of this service.
	EnvPrefix = "SCORING_"
)

// Settings are the scoring service's own variables (behind EnvPrefix).
type Settings struct {
	// PublicURL is the service's external base URL; the 402 body's upgrade_url points under it.
	PublicURL string `env:"PUBLIC_URL" envDefault:"http://127.0.0.1:8082"`
	// JWTSecret signs legacy JWTs (HS256). Empty derives one from the admin token.
	JWTSecret string `env:"JWT_SECRET"`
	// OAuthSecret keys the OAuth authorization server's tokens. Empty derives one from the admin
	// token, so that changing the admin token signs every agent out; set it to rotate the admin
	// token without that.
	OAuthSecret string `env:"OAUTH_SECRET"`
	// DenialThresholdOverride, when set, replaces the operating-threshold table for every profile.
	DenialThresholdOverride float64 `env:"DENIAL_THRESHOLD_OVERRIDE"`
	// UsageFlushInterval is how often metered usage and request records are written.
	UsageFlushInterval time.Duration `env:"USAGE_FLUSH_INTERVAL" envDefault:"1s"`
	// SignalRefreshInterval is how often a replica reloads payer mappings and policy signals that
	// other replicas consumed.
	SignalRefreshInterval time.Duration `env:"SIGNAL_REFRESH_INTERVAL" envDefault:"30s"`
	// TrustedProxyHops is how many proxies in front of the service append the client's address to
	// X-Forwarded-For; the control plane's sign-in throttle counts failures per client address.
	TrustedProxyHops int `env:"TRUSTED_PROXY_HOPS" envDefault:"0"`
	// Stripe settings of billing: the secret API key, the webhook signing secret and the recurring
	// price of the paid plan, all three or none (checkout and the webhook then answer 503). APIBase
	// points stripe-go at another server (stripe-mock, a test's loopback peer); SuccessURL and
	// CancelURL default to GET /v1/billing/checkout/return under PublicURL.
	StripeSecretKey     string `env:"STRIPE_SECRET_KEY"`
	StripeWebhookSecret string `env:"STRIPE_WEBHOOK_SECRET"`
	StripePriceID       string `env:"STRIPE_PRICE_ID"`
	StripeAPIBase       string `env:"STRIPE_API_BASE"`
	StripeSuccessURL    string `env:"STRIPE_SUCCESS_URL"`
	StripeCancelURL     string `env:"STRIPE_CANCEL_URL"`
	// OIDCIssuer, OIDCClientID and OIDCClientSecret name the identity provider that the OAuth sign-in
	// bridge (/oauth/login) delegates to; all three or none (the bridge then answers 503).
	OIDCIssuer       string `env:"OIDC_ISSUER"`
	OIDCClientID     string `env:"OIDC_CLIENT_ID"`
	OIDCClientSecret string `env:"OIDC_CLIENT_SECRET"`
}

// Validate checks the settings; prefix is EnvPrefix.
func (s *Settings) Validate(prefix string) error {
	var errs []error
	if err := config.CheckURL(prefix+"PUBLIC_URL", s.PublicURL, "http", "https"); err != nil {
		errs = append(errs, err)
	}
	if s.JWTSecret != "" && len(s.JWTSecret) < 32 {
		errs = append(errs, config.Invalid(prefix+"JWT_SECRET", "must be at least 32 characters"))
	}
	if s.OAuthSecret != "" && len(s.OAuthSecret) < 32 {
		errs = append(errs, config.Invalid(prefix+"OAUTH_SECRET", "must be at least 32 characters"))
	}
	if t := s.DenialThresholdOverride; t != 0 && (t <= 0 || t >= 1) {
		errs = append(errs, config.Invalid(prefix+"DENIAL_THRESHOLD_OVERRIDE", "must be between 0 and 1, exclusive (got %v)", t))
	}
	if s.UsageFlushInterval < 10*time.Millisecond || s.UsageFlushInterval > time.Minute {
		errs = append(errs, config.Invalid(prefix+"USAGE_FLUSH_INTERVAL", "must be between 10ms and 1m"))
	}
	if s.SignalRefreshInterval < time.Second {
		errs = append(errs, config.Invalid(prefix+"SIGNAL_REFRESH_INTERVAL", "must be at least 1s"))
	}
	if s.TrustedProxyHops < 0 || s.TrustedProxyHops > 10 {
		errs = append(errs, config.Invalid(prefix+"TRUSTED_PROXY_HOPS", "must be between 0 and 10"))
	}
	errs = append(errs, oauth.ValidateOIDC(prefix, oauth.OIDC{Issuer: s.OIDCIssuer, ClientID: s.OIDCClientID, ClientSecret: s.OIDCClientSecret})...)
	errs = append(errs, stripeConfig(*s, nil).Validate(prefix)...)
	return errors.Join(errs...)
}

// Config is the whole configuration of the service.
type Config struct {
	Spec     platform.Spec
	Settings Settings
	// Limiter, when set, returns the scoring routes' limiter in place of the service's meter, which
	// it is given: scoring-bench compares the service with and without limits and metering. The
	// binary leaves it nil (the meter).
	Limiter func(*meter.Meter) api.Limiter
	// shared carries what the authentication interceptor builds with the platform's pool to Register,
	// so that the interceptor and the key routes share one key cache.
	shared *shared
}

type shared struct {
	creds *keys.Service
	// workspaces is the control plane: its sessions authenticate the workspace routes, and the OAuth
	// bridge finds agent keys through it (AgentKey).
	workspaces *controlplane.Service
	// oauth is the OAuth authorization server: its Authenticator is the interceptor's (access tokens
	// and every credential creds accepts); Register mounts its routes.
	oauth *oauth.Server
}

// LoadConfig reads the service's configuration from getenv (defaults: HTTP :8082, gRPC :9092).
func LoadConfig(getenv func(string) string) (Config, error) {
	var settings Settings
	spec, err := platform.LoadSpec(getenv, Name, EnvPrefix, ":8082", ":9092", &settings)
	if err != nil {
		return Config{}, err
	}
	spec.Migrations = append(spec.Migrations, store.Migrations())
	spec.Streams = append(spec.Streams, bus.PolicyChanges)
	spec.Prometheus = true // GET /metrics
	spec.Gateway = append(spec.Gateway,
		gateway.WithValidationStyle(gateway.DetailString),
		gateway.WithIncomingHeaders(auth.AdminHeader, "X-Service-Api-Key"),
		gateway.WithOutgoingHeaders("x-request-id", "retry-after"),
		gateway.WithErrorHeaders(api.ErrorHeaders),
		// Score requests and results by hand: protojson was most of a batch item's CPU.
		gateway.WithCodec(wire.New))
	sh := &shared{}
	spec.Unary = func(p *platform.Platform) []grpc.UnaryServerInterceptor {
		sh.creds = keys.New(store.New(p.Pool), jwtSecret(settings, spec.Service.AdminToken))
		sh.workspaces = controlplane.New(store.New(p.Pool),
			keys.NewWorkspaceKeys(sh.creds, store.New(p.Pool), controlplane.MaxActiveKeys), settings.PublicURL)
		sh.oauth = oauth.New(oauth.Config{
			Issuer: settings.PublicURL, Secret: oauthSecret(settings, spec.Service.AdminToken), Log: p.Log,
			OIDC: oauth.OIDC{Issuer: settings.OIDCIssuer, ClientID: settings.OIDCClientID, ClientSecret: settings.OIDCClientSecret},
		}, store.New(p.Pool), sh.creds)
		return []grpc.UnaryServerInterceptor{api.RequestIDs(), api.Authenticate(spec.Service.AdminToken, sh.oauth.Authenticator(),
			api.WithSessions(sh.workspaces))}
	}
	return Config{Spec: spec, Settings: settings, shared: sh}, nil
}

func jwtSecret(s Settings, adminToken string) []byte {
	if s.JWTSecret != "" {
		return []byte(s.JWTSecret)
	}
	return keys.DeriveJWTSecret(adminToken)
}

// oauthSecret keys the OAuth server's tokens: SCORING_OAUTH_SECRET, or the admin token when unset,
// hashed either way so that fosite always gets a 32-byte key.
func oauthSecret(s Settings, adminToken string) []byte {
	secret := s.OAuthSecret
	if secret == "" {
		secret = adminToken
	}
	return oauth.DeriveSecret(secret)
}

// stripeConfig is billing's processor configuration from the settings.
func stripeConfig(s Settings, log *slog.Logger) billing.StripeConfig {
	base := strings.TrimRight(s.PublicURL, "/") + "/v1/billing/checkout/return"
	c := billing.StripeConfig{SecretKey: s.StripeSecretKey, WebhookSecret: s.StripeWebhookSecret, PriceID: s.StripePriceID,
		APIBase: s.StripeAPIBase, SuccessURL: s.StripeSuccessURL, CancelURL: s.StripeCancelURL, Log: log}
	if c.SuccessURL == "" {
		c.SuccessURL = base + "?result=success&session_id={CHECKOUT_SESSION_ID}"
	}
	if c.CancelURL == "" {
		c.CancelURL = base + "?result=cancel"
	}
	return c
}

// ConfigVars lists every environment variable the service reads.
func ConfigVars() []string { return platform.ConfigVars(EnvPrefix, &Settings{}) }

// policyConsumer is the durable consumer of policy.change events; replicas share it.
const policyConsumer = "scoring-policy-signals"

// Register adds the service's APIs and loops to an opened platform.
func Register(ctx context.Context, cfg Config, p *platform.Platform) error {
	// Document 2 names GET /health as the minimal availability route beside the shared probes.
	p.Server.Handle("GET /health", p.Server.LivenessHandler())

	st := store.New(p.Pool)
	// The authentication interceptor, built when the platform opened, made the key service.
	creds := cfg.shared.creds
	models, err := model.Load()
	if err != nil {
		return err
	}
	index := policysignal.NewIndex()
	if err := index.Reload(ctx, st); err != nil {
		return err
	}
	engine := decision.New(models, index, decision.Config{DenialThresholdOverride: cfg.Settings.DenialThresholdOverride})
	m := meter.New(st, meter.WithFlushInterval(cfg.Settings.UsageFlushInterval), meter.WithLogger(p.Log))
	p.Go(m.Run)
	// The flush loop ends with the servers' context, while requests may still be draining: this last
	// flush runs after the servers stopped and before the pool closes, so no call goes unmetered.
	p.OnClose(func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Flush(flushCtx); err != nil {
			p.Log.Error("final usage flush failed", "error", err)
		}
	})
	upgradeURL := strings.TrimRight(cfg.Settings.PublicURL, "/") + "/v1/billing/checkout-session"
	var limiter api.Limiter = m
	if cfg.Limiter != nil {
		limiter = cfg.Limiter(m)
	}
	// Billing without Stripe settings still reports account status; checkout and the webhook answer 503.
	var processor billing.Processor
	if sc := stripeConfig(cfg.Settings, p.Log); sc.Configured() {
		processor = billing.NewStripe(sc)
	}
	bill := billing.New(st, processor, creds, p.Log)

	registrations := []struct {
		desc *grpc.ServiceDesc
		impl any
		gw   serve.GatewayRegistrar
	}{
		{&scoringv1.KeyService_ServiceDesc, api.NewKeys(creds), serve.Gateway(scoringv1.RegisterKeyServiceHandlerClient, scoringv1.NewKeyServiceClient)},
		{&scoringv1.UsageService_ServiceDesc, api.NewUsage(m, upgradeURL), serve.Gateway(scoringv1.RegisterUsageServiceHandlerClient, scoringv1.NewUsageServiceClient)},
		{&scoringv1.FeedbackService_ServiceDesc, api.NewFeedback(feedback.New(st, m)), serve.Gateway(scoringv1.RegisterFeedbackServiceHandlerClient, scoringv1.NewFeedbackServiceClient)},
		{&scoringv1.AppealService_ServiceDesc, api.Appeals{}, serve.Gateway(scoringv1.RegisterAppealServiceHandlerClient, scoringv1.NewAppealServiceClient)},
		{&scoringv1.PolicySignalService_ServiceDesc, api.NewSignals(st, index), serve.Gateway(scoringv1.RegisterPolicySignalServiceHandlerClient, scoringv1.NewPolicySignalServiceClient)},
		{&scoringv1.ControlPlaneService_ServiceDesc, api.NewControlPlane(cfg.shared.workspaces, cfg.Settings.TrustedProxyHops), serve.Gateway(scoringv1.RegisterControlPlaneServiceHandlerClient, scoringv1.NewControlPlaneServiceClient)},
		{&scoringv1.BillingService_ServiceDesc, api.NewBilling(bill), serve.Gateway(scoringv1.RegisterBillingServiceHandlerClient, scoringv1.NewBillingServiceClient)},
		// Last: the gateway tries the patterns of a method newest first, and each pattern that does not
		// match costs a match attempt and an errors.As by reflection. Registered first, POST /v1/score
		// was tried after every other POST route of the service (2.5 % of the service's CPU under the
		// scoring load in errors.As alone).
		{&scoringv1.ScoringService_ServiceDesc, api.NewScoring(engine, models, limiter, p.Log, upgradeURL), serve.Gateway(scoringv1.RegisterScoringServiceHandlerClient, scoringv1.NewScoringServiceClient)},
	}
	for _, r := range registrations {
		if err := p.Server.Register(r.desc, r.impl, r.gw); err != nil {
			return err
		}
	}

	p.Server.Handle("GET /v1/models/reliability/{name}", api.ReliabilityDiagrams(models))
	// The OAuth authorization server of agent clients: its grants act as the signed-in user's
	// workspace agent key (control plane AgentKey). Spent and expired grants are purged hourly.
	cfg.shared.oauth.Mount(p.Server, cfg.shared.workspaces)
	p.Go(func(ctx context.Context) error { return periodic.Run(ctx, time.Hour, cfg.shared.oauth.PurgeExpired) })
	// The MCP agent endpoint scores through the in-process connection, so a tool call passes the same
	// interceptors, limiter, meter and decision log as POST /v1/score; it accepts what the interceptor
	// accepts (keys, legacy JWTs, OAuth access tokens).
	agent, err := webmcp.New(webmcp.Config{PublicURL: cfg.Settings.PublicURL, Version: buildinfo.Get(Name).Version,
		Auth: cfg.shared.oauth.Authenticator(), Conn: p.Server.InProcess(), Log: p.Log})
	if err != nil {
		return err
	}
	agent.Register(p.Server.Handle)
	// The processor's webhook needs the raw body for its signature: a plain handler, public.
	p.Server.Handle("POST /v1/billing/webhook", api.BillingWebhook(bill, p.Log))
	p.Server.Handle("GET /v1/billing/checkout/return", api.CheckoutReturn())
	// Operations routes (internal/web/ops): Prometheus text to private-network callers, the JSON
	// snapshot to keys with metrics:read, and the API description built once from the protos.
	apiDoc, err := ops.Document(cfg.Settings.PublicURL)
	if err != nil {
		return err
	}
	p.Server.Handle("GET /metrics", ops.PrivateOnly(cfg.Settings.TrustedProxyHops, p.Metrics.Handler()))
	p.Server.Handle("GET /metrics.json", &ops.Snapshot{Service: Name, Started: time.Now(), Metrics: p.Metrics.Gatherer(),
		Usage: st, Keys: creds, Log: p.Log, FlushInterval: cfg.Settings.UsageFlushInterval})
	p.Server.Handle("GET /openapi.json", ops.OpenAPI(apiDoc))

	consumer := &bus.Consumer{Bus: p.Bus, Log: p.Log, Stream: bus.PolicyChanges, Concurrency: 2,
		Handle: policysignal.Handler(st, index, p.Log),
		Config: jetstream.ConsumerConfig{
			Durable: policyConsumer, FilterSubject: p.Bus.Subject(bus.PolicyChanges.Subjects[0]),
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second, DeliverPolicy: jetstream.DeliverAllPolicy,
		}}
	p.Go(consumer.Run)
	p.Go(func(ctx context.Context) error {
		return periodic.Run(ctx, cfg.Settings.SignalRefreshInterval, func(ctx context.Context) {
			if err := index.Reload(ctx, st); err != nil {
				p.Log.Warn("policy signal index reload failed", "error", err)
			}
		})
	})
	return nil
}

// gcPercent is the service's default GOGC on procs Ps. Its live heap is small (7-9 MB under load)
// while every request allocates about 13 KB of JSON and proto garbage, so Go's default of 100
// collects far more often than memory needs: 400 measured +35-45 % requests per second in
// scoring-bench. With two Ps or more, each collection is also a burst of slow requests (the marking
// takes a quarter of the Ps, and the stop that starts it waits for a thread the kernel may have
// descheduled), so 1,600 collects a quarter as often: at half the maximum rate the share of requests
// over 5 ms fell from 1.1-2.0 % to 0.5-0.9 %, and the p99 from 5.3-7.2 ms to 3.7-4.8 ms (PERFORMANCE.md,
// session 12). With one P it stays 400: 1,600 did worse there in session 8 and no better in session
// 12. After each collection the background sweeper holds the only P until it has swept, without
// polling the network (golang/go#56060), and a larger heap takes longer to sweep. The heap goal is
// bounded by GOMEMLIMIT, which setMemoryLimit takes from the container's limit. GOGC in the
// environment wins.
func gcPercent(procs int) int {
	if procs > 1 {
		return 1600
	}
	return 400
}

// setMemoryLimit sets Go's soft memory limit to 90 % of the container's memory limit (cgroup), so
// that the high GOGC cannot grow the heap into an out-of-memory kill when the live heap grows (records
// piling up while PostgreSQL is away): near the limit the collector runs more often instead. Without
// a container limit there is none; GOMEMLIMIT (or AUTOMEMLIMIT=off) in the environment wins. A
// limit that cannot be read leaves the process without one, which memlimit logs itself.
func setMemoryLimit(log *slog.Logger) {
	_, _ = memlimit.Set(memlimit.WithProvider(memlimit.FromCgroup), memlimit.WithLogger(log))
}

// Main runs the service binary with its arguments ("serve" by default, or "migrate").
func Main(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	return MainWith(ctx, args, getenv, stdout, nil)
}

// MainWith is Main with a last change to the loaded configuration (nil for none).
func MainWith(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, adjust func(*Config)) error {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent(runtime.GOMAXPROCS(0)))
	}
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	if adjust != nil {
		adjust(&cfg)
	}
	return platform.Command(ctx, args, getenv, stdout, cfg.Spec, func(p *platform.Platform) error {
		setMemoryLimit(p.Log)
		return Register(ctx, cfg, p)
	})
}
