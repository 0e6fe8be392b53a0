// Package app is the verification service's composition root: its configuration, its part of the
// shared platform, and the APIs it registers. cmd/verification runs it; end-to-end tests start it
// in-process.
package app

import (
	"context"
	"errors"
	"io"
	"net/url"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/pkg/blobstore"
	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/feeds"
	"github.com/trustlayer/trustlayer/services/verification/internal/identity"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelwire"
	"github.com/trustlayer/trustlayer/services/verification/internal/organizations"
	"github.com/trustlayer/trustlayer/services/verification/internal/readcache"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/web"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhookwire"
)

const (
	// Name is the service name in logs, traces and GET /v1/build.
	Name = "verification"
	// EnvPrefix starts the name of every variable of this service.
	EnvPrefix = "VERIFICATION_"
)

// Settings are the verification service's own variables (behind EnvPrefix).
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
	Spec     platform.Spec
	Settings Settings
	Intel    intelwire.Settings
	Webhooks webhookwire.Settings
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
	var settings Settings
	var intel intelwire.Settings
	var hooks webhookwire.Settings
	spec, err := platform.LoadSpec(getenv, Name, EnvPrefix, ":8081", ":9091", &settings, &intel, &hooks)
	if err != nil {
		return Config{}, err
	}
	spec.Migrations = append(spec.Migrations, store.Migrations())
	spec.Streams = append(spec.Streams, bus.IntelChanges, bus.WebhookDeliveries)
	spec.Relay = append(spec.Relay, outbox.WithBatchSize(webhookwire.RelayBatch))
	r := &reads{answers: readcache.New(readcache.DefaultMaxBytes), heads: readcache.NewHeads(readcache.DefaultMaxHeads)}
	spec.Gateway = append(spec.Gateway,
		gateway.WithValidationStyle(gateway.FastAPI),
		gateway.WithIncomingHeaders(auth.AdminHeader),
		gateway.WithCodec(r.answers.Codec))
	spec.Unary = func(p *platform.Platform) []grpc.UnaryServerInterceptor {
		tenants := organizations.NewService(store.NewOrganizations(p.Pool))
		r.keys = identity.NewKeys(api.KeyLookup(tenants), identity.DefaultKeyTTL)
		// The caches of keys and of server heads are used only while this listener (one connection
		// for both) hears every revocation and every change of a server's row.
		p.Go(func(ctx context.Context) error {
			return store.WatchChanges(ctx, p.Pool.Config().ConnConfig.Copy(), p.Log,
				store.KeyChanges(r.keys), store.ServerHeadChanges(r.heads))
		})
		return []grpc.UnaryServerInterceptor{api.AuthenticateCached(spec.Service.AdminToken, r.keys)}
	}
	return Config{Spec: spec, Settings: settings, Intel: intel, Webhooks: hooks, reads: r}, nil
}

// ConfigVars lists every environment variable the service reads.
func ConfigVars() []string {
	return platform.ConfigVars(EnvPrefix, &Settings{}, &intelwire.Settings{}, &webhookwire.Settings{})
}

// Register adds the service's APIs and loops to an opened platform.
func Register(ctx context.Context, cfg Config, p *platform.Platform) error {
	var tenantStore organizations.Store = store.NewOrganizations(p.Pool)
	var intelOpts []intelwire.Option
	if cfg.reads != nil {
		// The heads are live only while the listener started by LoadConfig's spec.Unary listens.
		intelOpts = append(intelOpts, intelwire.WithReadCache(cfg.reads.answers), intelwire.WithHeadCache(cfg.reads.heads))
		if cfg.reads.keys != nil {
			// A revocation through this replica forgets its cached keys before the route answers.
			tenantStore = api.ForgetOnRevoke(tenantStore, cfg.reads.keys)
		}
	}
	tenants := organizations.NewService(tenantStore)
	if err := p.Server.Register(&verificationv1.OrganizationService_ServiceDesc, api.NewOrganizations(tenants),
		serve.Gateway(verificationv1.RegisterOrganizationServiceHandlerClient, verificationv1.NewOrganizationServiceClient)); err != nil {
		return err
	}
	if err := p.Server.Register(&verificationv1.IdentityService_ServiceDesc, api.Identity{}, serve.Gateway(verificationv1.RegisterIdentityServiceHandlerClient, verificationv1.NewIdentityServiceClient)); err != nil {
		return err
	}
	if err := intelwire.Register(ctx, p, cfg.Intel, intelOpts...); err != nil {
		return err
	}
	if err := webhookwire.Register(ctx, p, cfg.Webhooks, serverCatalog{store.NewIntelligence(p.Pool)}); err != nil {
		return err
	}
	return registerFeeds(ctx, cfg, p)
}

// serverCatalog tells the watch routes which servers the registry sync knows.
type serverCatalog struct{ registry *store.Intelligence }

func (c serverCatalog) Exists(ctx context.Context, namespace, name string) (bool, error) {
	_, err := c.registry.ServerID(ctx, intelligence.ServerKey{Namespace: namespace, Name: name})
	if errors.Is(err, intelligence.ErrServerNotFound) {
		return false, nil
	}
	return err == nil, err
}

// registerFeeds wires the data feeds: the exporter loop, the listing API and the signed downloads.
func registerFeeds(ctx context.Context, cfg Config, p *platform.Platform) error {
	blobs, err := blobstore.Open(ctx, cfg.Settings.BlobURL)
	if err != nil {
		return err
	}
	p.OnClose(func() { _ = blobs.Close() })
	artifacts := store.NewFeeds(p.Pool)
	// Download URLs are signed with a key derived from the admin token, which every replica shares.
	signer := feeds.NewSigner(cfg.Spec.Service.AdminToken)
	if err := p.Server.Register(&verificationv1.DataFeedService_ServiceDesc,
		api.NewFeeds(feeds.NewService(artifacts, signer), cfg.Settings.PublicURL), serve.Gateway(verificationv1.RegisterDataFeedServiceHandlerClient, verificationv1.NewDataFeedServiceClient)); err != nil {
		return err
	}
	p.Server.Handle("GET "+feeds.FilePath+"{id}", &web.FeedFiles{Store: artifacts, Blobs: blobs, Signer: signer, Log: p.Log})
	exporter := feeds.NewExporter(store.NewFeedSource(p.Pool), artifacts, blobs, p.Log)
	p.Go(func(ctx context.Context) error { return exporter.Run(ctx, cfg.Settings.FeedExportInterval) })
	return nil
}

// gcPercent is the service's default GOGC. Its live heap is small (the read cache, at most
// readcache.DefaultMaxBytes, and pools) while every request allocates JSON and proto garbage, so the
// default of 100 collects far more often than memory needs (measured in verification-bench: see the
// README's performance section). GOGC in the environment still wins.
const gcPercent = 400

// Main runs the service binary with its arguments ("serve" by default, or "migrate").
func Main(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	return platform.Command(ctx, args, getenv, stdout, cfg.Spec, func(p *platform.Platform) error {
		return Register(ctx, cfg, p)
	})
}
