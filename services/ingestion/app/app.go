// Package app is the ingestion service's composition root: its configuration, its part of the shared
// platform, and the APIs and loops it registers. cmd/ingestion runs it; end-to-end tests start it
// in-process.
package app

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"net/url"
	"time"

	"google.golang.org/grpc"

	"github.com/trustlayer/trustlayer/pkg/apidoc"
	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/pkg/serve"
	ingestionv1 "github.com/trustlayer/trustlayer/proto/ingestion/v1"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/api"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/archive"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/events"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/store"
)

const (
	// Name is the service name in logs, traces and GET /v1/build.
	Name = "ingestion"
	// EnvPrefix starts the name of every variable of this service.
	EnvPrefix = "INGESTION_"
)

// Settings are the ingestion service's own variables (behind EnvPrefix).
type Settings struct {
	// BlobURL is the archive bucket (gocloud.dev/blob URL).
	BlobURL string `env:"BLOB_URL" envDefault:"file:///var/lib/trustlayer/ingestion/archive?create_dir=1"`
	// AllowPrivateCIDRs lists private networks fetches may reach (on-premises document servers).
	AllowPrivateCIDRs string `env:"ALLOW_PRIVATE_CIDRS"`
	// FetchMaxBytes caps one document.
	FetchMaxBytes int64 `env:"FETCH_MAX_BYTES" envDefault:"52428800"`
	// FetchTimeout caps one fetch attempt.
	FetchTimeout time.Duration `env:"FETCH_TIMEOUT" envDefault:"30s"`
	// FetchMaxAttempts bounds retries of transient failures.
	FetchMaxAttempts int `env:"FETCH_MAX_ATTEMPTS" envDefault:"3"`
	// SchedulerInterval is how often due sources are looked for.
	SchedulerInterval time.Duration `env:"SCHEDULER_INTERVAL" envDefault:"30s"`

	allowPrivate []netip.Prefix
}

// Validate checks the settings; prefix is EnvPrefix.
func (s *Settings) Validate(prefix string) error {
	var errs []error
	if u, err := url.Parse(s.BlobURL); err != nil || !(u.Scheme == "file" && u.Path != "" || u.Scheme == "s3" && u.Host != "" || u.Scheme == "mem") {
		errs = append(errs, config.Invalid(prefix+"BLOB_URL", "want file:///path, s3://bucket or mem:// (got %q)", s.BlobURL))
	}
	cidrs, err := safehttp.ParseCIDRs(s.AllowPrivateCIDRs)
	if err != nil {
		errs = append(errs, config.Invalid(prefix+"ALLOW_PRIVATE_CIDRS", "%v", err))
	}
	s.allowPrivate = cidrs
	if s.FetchMaxBytes < 1024 || s.FetchMaxBytes > 1<<30 {
		errs = append(errs, config.Invalid(prefix+"FETCH_MAX_BYTES", "must be between 1024 and 1073741824"))
	}
	if s.FetchTimeout <= 0 || s.FetchTimeout > 5*time.Minute {
		errs = append(errs, config.Invalid(prefix+"FETCH_TIMEOUT", "must be positive and at most 5m"))
	}
	if s.FetchMaxAttempts < 1 || s.FetchMaxAttempts > 10 {
		errs = append(errs, config.Invalid(prefix+"FETCH_MAX_ATTEMPTS", "must be between 1 and 10"))
	}
	if s.SchedulerInterval < time.Second {
		errs = append(errs, config.Invalid(prefix+"SCHEDULER_INTERVAL", "must be at least 1s"))
	}
	return errors.Join(errs...)
}

// Config is the whole configuration of the service.
type Config struct {
	Spec     platform.Spec
	Settings Settings
}

// LoadConfig reads the configuration from getenv (defaults: HTTP :8083, gRPC :9093).
func LoadConfig(getenv func(string) string) (Config, error) {
	var settings Settings
	spec, err := platform.LoadSpec(getenv, Name, EnvPrefix, ":8083", ":9093", &settings)
	if err != nil {
		return Config{}, err
	}
	spec.Migrations = append(spec.Migrations, store.Migrations())
	spec.Streams = append(spec.Streams, bus.PolicyChanges)
	spec.Gateway = append(spec.Gateway,
		gateway.WithValidationStyle(gateway.FastAPI),
		gateway.WithIncomingHeaders(auth.AdminHeader))
	// Every ingestion route but /v1/build (the shared BuildService) needs the admin token.
	spec.Unary = func(*platform.Platform) []grpc.UnaryServerInterceptor {
		return []grpc.UnaryServerInterceptor{auth.RequireAdmin(spec.Service.AdminToken, api.AdminMethods)}
	}
	return Config{Spec: spec, Settings: settings}, nil
}

// ConfigVars lists every environment variable the service reads.
func ConfigVars() []string {
	return platform.ConfigVars(EnvPrefix, &Settings{})
}

// Register adds the service's APIs, its OpenAPI document and its scheduler to an opened platform.
func Register(ctx context.Context, cfg Config, p *platform.Platform) error {
	doc, err := api.Document()
	if err != nil {
		return err
	}
	arch, err := archive.Open(ctx, cfg.Settings.BlobURL)
	if err != nil {
		return err
	}
	p.OnClose(func() { _ = arch.Close() })
	svc := ingest.NewService(store.New(p.Pool), arch, events.PolicyChange, p.Log, cfg.Settings.allowPrivate, ingest.Limits{
		MaxBytes: cfg.Settings.FetchMaxBytes, Timeout: cfg.Settings.FetchTimeout, MaxAttempts: cfg.Settings.FetchMaxAttempts,
	})
	if err := p.Server.Register(&ingestionv1.SourceService_ServiceDesc, api.NewSources(svc), serve.Gateway(ingestionv1.RegisterSourceServiceHandlerClient, ingestionv1.NewSourceServiceClient)); err != nil {
		return err
	}
	if err := p.Server.Register(&ingestionv1.LedgerService_ServiceDesc, api.NewLedger(svc), serve.Gateway(ingestionv1.RegisterLedgerServiceHandlerClient, ingestionv1.NewLedgerServiceClient)); err != nil {
		return err
	}
	p.Server.Handle("GET /openapi.json", apidoc.Handler(doc))
	p.Go(func(ctx context.Context) error { return svc.Schedule(ctx, cfg.Settings.SchedulerInterval) })
	return nil
}

// Boot loads the configuration from getenv and opens the platform with every API and loop of the
// service registered, logging to logs; it does not run it (pkg/servicetest's Boot).
func Boot(ctx context.Context, getenv func(string) string, logs io.Writer) (*platform.Platform, error) {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return nil, err
	}
	p, err := platform.Open(ctx, cfg.Spec, getenv, logs)
	if err != nil {
		return nil, err
	}
	if err := Register(ctx, cfg, p); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Main runs the service binary with its arguments: "serve" (the default) boots the service as Boot
// does and runs it until ctx ends; "migrate" applies the migrations and exits.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	return platform.Command(ctx, args, getenv, stdout, loadSpec, Boot)
}

// loadSpec is the platform part of the configuration, all that "migrate" needs.
func loadSpec(getenv func(string) string) (platform.Spec, error) {
	cfg, err := LoadConfig(getenv)
	return cfg.Spec, err
}
