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

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/scoring/internal/api"
	"github.com/trustlayer/trustlayer/services/scoring/internal/billing"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
	"github.com/trustlayer/trustlayer/services/scoring/internal/score"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
	"github.com/trustlayer/trustlayer/services/scoring/internal/web/oauth"
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
	// The model versions that answer a call pinning none (README "Model versions"); empty keeps the
	// versions the README names. A version the binary does not serve is refused at start.
	DenialModelVersion        string `env:"DENIAL_MODEL_VERSION"`
	PriorAuthModelVersion     string `env:"PRIOR_AUTH_MODEL_VERSION"`
	ReimbursementModelVersion string `env:"REIMBURSEMENT_MODEL_VERSION"`
	// UsageFlushInterval is how often metered usage and request records are written.
	UsageFlushInterval time.Duration `env:"USAGE_FLUSH_INTERVAL" envDefault:"1s"`
	// SignalRefreshInterval is how often a replica reloads payer mappings and policy signals that
	// other replicas consumed.
	SignalRefreshInterval time.Duration `env:"SIGNAL_REFRESH_INTERVAL" envDefault:"30s"`
	// TrialKeysPerAddress and TrialKeysPerHour bound POST /v1/keys/trial within any hour: per client
	// address and in all, across replicas (counted in PostgreSQL).
	TrialKeysPerAddress int `env:"TRIAL_KEYS_PER_ADDRESS" envDefault:"5"`
	TrialKeysPerHour    int `env:"TRIAL_KEYS_PER_HOUR" envDefault:"100"`
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
	if err := modelVersions(prefix, s); err != nil {
		errs = append(errs, err)
	}
	if s.UsageFlushInterval < 10*time.Millisecond || s.UsageFlushInterval > time.Minute {
		errs = append(errs, config.Invalid(prefix+"USAGE_FLUSH_INTERVAL", "must be between 10ms and 1m"))
	}
	if s.SignalRefreshInterval < time.Second {
		errs = append(errs, config.Invalid(prefix+"SIGNAL_REFRESH_INTERVAL", "must be at least 1s"))
	}
	if s.TrialKeysPerAddress < 1 || s.TrialKeysPerAddress > 10000 {
		errs = append(errs, config.Invalid(prefix+"TRIAL_KEYS_PER_ADDRESS", "must be between 1 and 10000"))
	}
	if s.TrialKeysPerHour < 1 || s.TrialKeysPerHour > 1000000 {
		errs = append(errs, config.Invalid(prefix+"TRIAL_KEYS_PER_HOUR", "must be between 1 and 1000000"))
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
	Settings Settings
	// spec is the platform's part, which Boot opens.
	spec platform.Spec
	// creds is what authentication shares with the routes; loadConfig's spec.Unary builds it.
	creds *credentials
	// limiter, when set, replaces the meter as the scoring routes' limiter (WithLimiter).
	limiter func(*meter.Meter) score.Limiter
}

// loadConfig reads the service's configuration from getenv (defaults: HTTP :8082, gRPC :9092).
func loadConfig(getenv func(string) string) (Config, error) {
	var settings Settings
	spec, err := platform.LoadSpec(getenv, Name, EnvPrefix, ":8082", ":9092", &settings)
	if err != nil {
		return Config{}, err
	}
	spec.Migrations = append(spec.Migrations, store.Migrations())
	spec.Streams = append(spec.Streams, bus.PolicyChanges)
	spec.Prometheus = true // GET /metrics
	spec.Routes = routeLimits()
	spec.Gateway = append(spec.Gateway,
		gateway.WithValidationStyle(gateway.DetailString),
		gateway.WithIncomingHeaders(auth.AdminHeader, "X-Service-Api-Key"),
		gateway.WithOutgoingHeaders("x-request-id", "retry-after"),
		gateway.WithErrorHeaders(api.ErrorHeaders),
		// Score requests and results by hand: protojson was most of a batch item's CPU.
		gateway.WithCodec(wire.New))
	creds := &credentials{settings: settings, adminToken: spec.Service.AdminToken}
	spec.Unary = creds.interceptors
	return Config{Settings: settings, spec: spec, creds: creds}, nil
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

// Option changes what Boot builds; the service binary takes none.
type Option func(*Config)

// WithLimiter puts limiter(m) in place of the meter m as the scoring routes' limiter. scoring-bench
// measures what limits and metering cost against the same service with a limiter that admits every
// request; nothing else should need it.
func WithLimiter(limiter func(m *meter.Meter) score.Limiter) Option {
	return func(c *Config) { c.limiter = limiter }
}

// Boot loads the configuration from getenv and opens the platform with every API and loop of the
// service registered, logging to logs; it does not run it (pkg/servicetest's Boot).
func Boot(ctx context.Context, getenv func(string) string, logs io.Writer) (*platform.Platform, error) {
	return BootWith(ctx, getenv, logs)
}

// BootWith is Boot with options.
func BootWith(ctx context.Context, getenv func(string) string, logs io.Writer, opts ...Option) (*platform.Platform, error) {
	cfg, err := loadConfig(getenv)
	if err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := platform.Open(ctx, cfg.spec, getenv, logs)
	if err != nil {
		return nil, err
	}
	if err := register(ctx, cfg, p); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Main runs the service binary with its arguments (platform.RunMain): "serve" (the default) boots
// the service as Boot does and runs it until ctx ends; "migrate" applies the migrations and exits.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	return MainWith(ctx, args, getenv, stdout)
}

// MainWith is Main with options. The binary's own memory settings apply to "serve" only: the
// default GOGC before the service starts, and the memory limit once it logs.
func MainWith(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer, opts ...Option) error {
	serve := func(ctx context.Context, getenv func(string) string, stdout io.Writer) (*platform.Platform, error) {
		if getenv("GOGC") == "" {
			debug.SetGCPercent(gcPercent(runtime.GOMAXPROCS(0)))
		}
		p, err := BootWith(ctx, getenv, stdout, opts...)
		if err != nil {
			return nil, err
		}
		setMemoryLimit(p.Log)
		return p, nil
	}
	return platform.Command(ctx, args, getenv, stdout, loadSpec, serve)
}

// loadSpec is the platform part of the configuration, all that "migrate" needs.
func loadSpec(getenv func(string) string) (platform.Spec, error) {
	cfg, err := loadConfig(getenv)
	return cfg.spec, err
}
