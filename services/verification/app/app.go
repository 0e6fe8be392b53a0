// Package app is the verification service's composition root: its configuration, its part of the
// shared platform, and the APIs and loops it registers. cmd/verification runs it through Main; tests
// and end-to-end tests start it in-process through Boot.
package app

import (
	"context"
	"errors"
	"io"
	"net/url"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"

	"github.com/trustlayer/trustlayer/pkg/apidoc"
	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/identity"
	"github.com/trustlayer/trustlayer/services/verification/internal/organizations"
	"github.com/trustlayer/trustlayer/services/verification/internal/readcache"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

const (
	// Name is the service name in logs, traces and GET /v1/build.
	Name = "verification"
	// EnvPrefix starts the name of every variable of this service.
	EnvPrefix = "VERIFICATION_"
)

// Settings are the verification service's own variables (behind EnvPrefix) other than those of
// registry intelligence (IntelligenceSettings) and of webhooks (WebhookSettings).
type Settings struct {
	// BlobURL is the bucket of data-feed artifacts (gocloud.dev/blob URL).
	BlobURL string `env:"BLOB_URL" envDefault:"file:///var/lib/trustlayer/verification/blobs?create_dir=1"`
	// FeedExportInterval is how often the data feeds are exported.
	FeedExportInterval time.Duration `env:"FEED_EXPORT_INTERVAL" envDefault:"1h"`
	// PublicURL is the service's external base URL, used in download links (default: the Host the
	// request came to, over http).
	PublicURL string `env:"PUBLIC_URL"`
}

// Validate checks the settings; prefix is EnvPrefix.
func (s *Settings) Validate(prefix string) error {
	var errs []error
	if u, err := url.Parse(s.BlobURL); err != nil || !(u.Scheme == "file" && u.Path != "" || u.Scheme == "s3" && u.Host != "" || u.Scheme == "mem") {
		errs = append(errs, config.Invalid(prefix+"BLOB_URL", "want file:///path, s3://bucket or mem:// (got %q)", s.BlobURL))
	}
	if s.FeedExportInterval < time.Minute {
		errs = append(errs, config.Invalid(prefix+"FEED_EXPORT_INTERVAL", "must be at least 1m"))
	}
	if s.PublicURL != "" {
		if err := config.CheckURL(prefix+"PUBLIC_URL", s.PublicURL, "http", "https"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Config is the whole configuration of the service.
type Config struct {
	Spec         platform.Spec
	Settings     Settings
	Intelligence IntelligenceSettings
	Webhooks     WebhookSettings
	Audits       AuditSettings
	Watch        WatchAPISettings
	WatchRuns    WatchRunSettings
	Reliability  ReliabilitySettings
	Runs         ReliabilityRunSettings
	Billing      ReliabilityBillingSettings
	Enforcement  EnforcementSettings
	Public       PublicSettings
	// audit holds the audit token issuer and verifier, made by LoadConfig for the same reason.
	audit *auditParts
	// reads holds what the read path caches: made by LoadConfig, since the gateway's codec and the
	// authentication interceptor are built (by platform.Open) before Register runs.
	reads *reads
}

// reads are the read path's caches: the server state answers' immutable parts, the server heads
// and the bearer keys.
type reads struct {
	answers *readcache.Cache
	heads   *readcache.Heads
	keys    *identity.Keys
}

// LoadConfig reads the service's configuration from getenv (defaults: HTTP :8081, gRPC :9091).
func LoadConfig(getenv func(string) string) (Config, error) {
	return loadConfig(getenv, readcache.New(readcache.DefaultMaxBytes))
}

// loadConfig is LoadConfig with the server state answers cached in answers.
func loadConfig(getenv func(string) string, answers *readcache.Cache) (Config, error) {
	var settings Settings
	var intel IntelligenceSettings
	var hooks WebhookSettings
	var auditSettings AuditSettings
	var watchAPI WatchAPISettings
	var watchRuns WatchRunSettings
	var reliability ReliabilitySettings
	var runs ReliabilityRunSettings
	var billing ReliabilityBillingSettings
	var enforcement EnforcementSettings
	var public PublicSettings
	spec, err := platform.LoadSpec(getenv, Name, EnvPrefix, ":8081", ":9091", &settings, &intel, &hooks, &auditSettings, &watchAPI, &watchRuns,
		&reliability, &runs, &billing, &enforcement, &public)
	if err != nil {
		return Config{}, err
	}
	spec.Routes = append(spec.Routes, auditRoutes(spec.Service.HTTPWriteTimeout, &auditSettings)...)
	parts, err := newAuditParts(&auditSettings)
	if err != nil {
		return Config{}, err
	}
	spec.Migrations = append(spec.Migrations, store.Migrations())
	// A call that fails because the database cannot be reached answers the business error shape.
	spec.Unavailable = api.ErrUnavailable
	spec.Streams = append(spec.Streams, bus.IntelChanges, bus.WebhookDeliveries)
	spec.Relay = append(spec.Relay, outbox.WithBatchSize(relayBatch), outbox.WithGather(relayGather))
	r := &reads{answers: answers, heads: readcache.NewHeads(readcache.DefaultMaxHeads)}
	spec.Gateway = append(spec.Gateway,
		gateway.WithValidationStyle(gateway.FastAPI),
		gateway.WithIncomingHeaders(auth.AdminHeader),
		gateway.WithCodec(r.answers.Codec))
	spec.Unary = func(p *platform.Platform) []grpc.UnaryServerInterceptor {
		orgs := organizations.NewService(store.NewOrganizations(p.Pool))
		// Kept fresh by Register's change listener.
		r.keys = identity.NewKeys(api.KeyLookup(orgs), identity.DefaultKeyTTL)
		return []grpc.UnaryServerInterceptor{
			api.AuthenticateAudits(spec.Service.AdminToken, parts.verifier),
			api.AuthenticateCached(spec.Service.AdminToken, r.keys),
			api.AuthenticateWatch(spec.Service.AdminToken, watchKeys(p)),
		}
	}
	return Config{Spec: spec, Settings: settings, Intelligence: intel, Webhooks: hooks, Audits: auditSettings, Watch: watchAPI, WatchRuns: watchRuns,
		Reliability: reliability, Runs: runs, Billing: billing, Enforcement: enforcement, Public: public, audit: parts, reads: r}, nil
}

// ConfigVars lists every environment variable the service reads.
func ConfigVars() []string {
	return platform.ConfigVars(EnvPrefix, &Settings{}, &IntelligenceSettings{}, &WebhookSettings{}, &AuditSettings{}, &WatchAPISettings{}, &WatchRunSettings{},
		&ReliabilitySettings{}, &ReliabilityRunSettings{}, &ReliabilityBillingSettings{}, &EnforcementSettings{}, &PublicSettings{})
}

// Register adds the service's APIs, its OpenAPI document and its loops to an opened platform; cfg
// comes from LoadConfig.
func Register(ctx context.Context, cfg Config, p *platform.Platform) error {
	doc, err := api.Document()
	if err != nil {
		return err
	}
	p.Server.Handle("GET /openapi.json", apidoc.Handler(doc))
	if err := registerOrganizations(cfg, p); err != nil {
		return err
	}
	if err := registerIntelligence(cfg, p); err != nil {
		return err
	}
	pending, err := registerWebhooks(ctx, cfg, p)
	if err != nil {
		return err
	}
	watchChanges(cfg, p, pending)
	if err := registerAudits(cfg, p); err != nil {
		return err
	}
	if err := registerWatchAPI(ctx, cfg, p); err != nil {
		return err
	}
	for _, register := range []func(context.Context, Config, *platform.Platform) error{
		registerReliability, registerReliabilityRuns, registerReliabilityBilling, registerEnforcement, registerPublic,
	} {
		if err := register(ctx, cfg, p); err != nil {
			return err
		}
	}
	return registerFeeds(ctx, cfg, p)
}

// watchChanges starts the replica's one change listener (one connection): the caches of keys and
// of server heads are used only while it hears every revocation and every change of a server's row,
// and it wakes the webhook matchers (pending) at each commit that queued changes.
func watchChanges(cfg Config, p *platform.Platform, pending store.Subscription) {
	subs := []store.Subscription{store.ServerHeadChanges(cfg.reads.heads), pending}
	if cfg.reads.keys != nil {
		subs = append(subs, store.KeyChanges(cfg.reads.keys))
	}
	p.Go(func(ctx context.Context) error {
		return store.WatchChanges(ctx, p.Pool.Config().ConnConfig.Copy(), p.Log, subs...)
	})
}

// registerOrganizations adds the admin routes of organizations and keys, and the caller's identity.
func registerOrganizations(cfg Config, p *platform.Platform) error {
	var st organizations.Store = store.NewOrganizations(p.Pool)
	if cfg.reads.keys != nil {
		// A revocation through this replica forgets its cached keys before the route answers.
		st = api.ForgetOnRevoke(st, cfg.reads.keys)
	}
	if err := p.Server.Register(&verificationv1.OrganizationService_ServiceDesc, api.NewOrganizations(organizations.NewService(st)),
		serve.Gateway(verificationv1.RegisterOrganizationServiceHandlerClient, verificationv1.NewOrganizationServiceClient)); err != nil {
		return err
	}
	return p.Server.Register(&verificationv1.IdentityService_ServiceDesc, api.Identity{},
		serve.Gateway(verificationv1.RegisterIdentityServiceHandlerClient, verificationv1.NewIdentityServiceClient))
}

// Boot loads the configuration from getenv and opens the platform with every API and loop
// registered, logging to logs; it does not run it (a platform.Boot).
func Boot(ctx context.Context, getenv func(string) string, logs io.Writer) (*platform.Platform, error) {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return nil, err
	}
	return open(ctx, cfg, getenv, logs)
}

// open opens the platform of cfg and registers the service on it.
func open(ctx context.Context, cfg Config, getenv func(string) string, logs io.Writer) (*platform.Platform, error) {
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

// gcPercent is the service's default GOGC. Its live heap is small (the read cache, at most
// readcache.DefaultMaxBytes, and pools) while every request allocates JSON and proto garbage, so the
// default of 100 collects far more often than memory needs (measured in verification-bench: see
// docs/performance.md). GOGC in the environment still wins.
const gcPercent = 400

// Main runs the service binary with its arguments: "serve" (the default) boots the service as Boot
// does and runs it until ctx ends; "migrate" applies the migrations and exits.
func Main(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	return platform.Command(ctx, args, getenv, stdout, loadSpec, Boot)
}

// loadSpec is the platform part of the configuration, all that "migrate" needs.
func loadSpec(getenv func(string) string) (platform.Spec, error) {
	cfg, err := LoadConfig(getenv)
	return cfg.Spec, err
}
