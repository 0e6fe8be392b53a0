// Package intelwire wires registry intelligence onto a started platform: the store, the sync loop,
// the reads and the IntelligenceService routes. The service's composition root (app) loads Settings
// behind its prefix and calls Register.
package intelwire

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/readcache"
	"github.com/trustlayer/trustlayer/services/verification/internal/registryclient"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// Settings are registry intelligence's variables, read behind the service prefix (VERIFICATION_).
type Settings struct {
	// RegistryURLs lists the base URLs of the registries to sync, comma-separated (the listing is at
	// <base>/v0.1/servers, e.g. https://registry.modelcontextprotocol.io). Empty turns the sync off.
	RegistryURLs string `env:"REGISTRY_URLS"`
	// RegistryPollInterval is how often each registry is polled.
	RegistryPollInterval time.Duration `env:"REGISTRY_POLL_INTERVAL" envDefault:"5m"`
	// RegistryPageSize is the limit asked per page (the official registry allows at most 100).
	RegistryPageSize int `env:"REGISTRY_PAGE_SIZE" envDefault:"100"`
	// RegistryTimeout caps one page request; RegistryMaxAttempts bounds its retries (5xx, timeouts).
	RegistryTimeout     time.Duration `env:"REGISTRY_TIMEOUT" envDefault:"30s"`
	RegistryMaxAttempts int           `env:"REGISTRY_MAX_ATTEMPTS" envDefault:"3"`
	// RegistryMaxPages bounds one poll (10,000 pages of 100 is ten times the official registry today).
	RegistryMaxPages int `env:"REGISTRY_MAX_PAGES" envDefault:"10000"`
	// AllowPrivateCIDRs lists private networks registries may be reached in (on-premises registries);
	// the service-wide SSRF exception, empty by default.
	AllowPrivateCIDRs string `env:"ALLOW_PRIVATE_CIDRS"`
}

// Validate checks the settings; prefix is the one they were read behind, so that errors name the
// real variables.
func (s *Settings) Validate(prefix string) error {
	_, _, err := s.parse(prefix)
	return err
}

// parse returns the registry URLs and the allowed private prefixes, or one error per bad variable.
func (s *Settings) parse(prefix string) ([]string, []netip.Prefix, error) {
	var errs []error
	var urls []string
	seen := map[string]bool{}
	for raw := range strings.SplitSeq(s.RegistryURLs, ",") {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		u, err := registryclient.ParseBaseURL(raw)
		if err != nil {
			errs = append(errs, config.Invalid(prefix+"REGISTRY_URLS", "%v", err))
			continue
		}
		if !seen[u] {
			seen[u] = true
			urls = append(urls, u)
		}
	}
	cidrs, err := safehttp.ParseCIDRs(s.AllowPrivateCIDRs)
	if err != nil {
		errs = append(errs, config.Invalid(prefix+"ALLOW_PRIVATE_CIDRS", "%v", err))
	}
	if s.RegistryPollInterval < time.Second {
		errs = append(errs, config.Invalid(prefix+"REGISTRY_POLL_INTERVAL", "must be at least 1s"))
	}
	if s.RegistryPageSize < 1 || s.RegistryPageSize > 100 {
		errs = append(errs, config.Invalid(prefix+"REGISTRY_PAGE_SIZE", "must be between 1 and 100"))
	}
	if s.RegistryTimeout <= 0 || s.RegistryTimeout > 5*time.Minute {
		errs = append(errs, config.Invalid(prefix+"REGISTRY_TIMEOUT", "must be positive and at most 5m"))
	}
	if s.RegistryMaxAttempts < 1 || s.RegistryMaxAttempts > 10 {
		errs = append(errs, config.Invalid(prefix+"REGISTRY_MAX_ATTEMPTS", "must be between 1 and 10"))
	}
	if s.RegistryMaxPages < 1 {
		errs = append(errs, config.Invalid(prefix+"REGISTRY_MAX_PAGES", "must be at least 1"))
	}
	return urls, cidrs, errors.Join(errs...)
}

// Option adjusts Register.
type Option func(*options)

type options struct {
	reads *readcache.Cache
	heads *readcache.Heads
}

// WithReadCache has the server state reads keep their immutable parts in c, which the service also
// made the gateway's codec (gateway.WithCodec(c.Codec)) so that it writes them from its cache.
// Without it they get a cache of their own, and the gateway writes each answer with protojson.
func WithReadCache(c *readcache.Cache) Option { return func(o *options) { o.reads = c } }

// WithHeadCache has the server state reads keep server heads in h, which must be subscribed to the
// changes of intel_servers (store.ServerHeadChanges) by the caller. Without it every read sends the
// server's head statement.
func WithHeadCache(h *readcache.Heads) Option { return func(o *options) { o.heads = h } }

// Register adds IntelligenceService to p's servers and, when registries are configured, the sync
// loop to its background loops. Settings not loaded through config.Load are validated here.
func Register(_ context.Context, p *platform.Platform, s Settings, opts ...Option) error {
	urls, cidrs, err := s.parse("")
	if err != nil {
		return err
	}
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	if o.reads == nil {
		o.reads = readcache.New(readcache.DefaultMaxBytes)
	}
	registry := store.NewIntelligence(p.Pool)
	var readerOpts []intelligence.ReaderOption
	if o.heads != nil {
		readerOpts = append(readerOpts, intelligence.WithHeadCache(o.heads))
	}
	if err := p.Server.Register(&verificationv1.IntelligenceService_ServiceDesc, api.NewIntelligence(intelligence.NewReader(registry, readerOpts...), o.reads),
		serve.Gateway(verificationv1.RegisterIntelligenceServiceHandlerClient, verificationv1.NewIntelligenceServiceClient)); err != nil {
		return err
	}
	if len(urls) == 0 {
		p.Log.Info("registry sync off: no registry URLs configured")
		return nil
	}
	client := registryclient.New(registryclient.Options{AllowPrivate: cidrs, Timeout: s.RegistryTimeout, MaxAttempts: s.RegistryMaxAttempts})
	syncer := intelligence.NewSyncer(registry, client, urls, intelligence.SyncOptions{
		PageSize: s.RegistryPageSize, Interval: s.RegistryPollInterval, MaxPages: s.RegistryMaxPages,
	}, p.Log.With("component", "registry_sync"))
	p.Go(syncer.Run)
	return nil
}
