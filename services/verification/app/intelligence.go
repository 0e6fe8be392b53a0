package app

import (
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
	"github.com/trustlayer/trustlayer/services/verification/internal/events"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/registryclient"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// IntelligenceSettings are registry intelligence's variables, read behind EnvPrefix.
type IntelligenceSettings struct {
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
func (s *IntelligenceSettings) Validate(prefix string) error {
	_, _, err := s.parse(prefix)
	return err
}

// parse returns the registry URLs and the allowed private prefixes, or one error per bad variable.
func (s *IntelligenceSettings) parse(prefix string) ([]string, []netip.Prefix, error) {
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

// registerIntelligence adds the IntelligenceService routes and, when registries are configured, the
// sync loop. The server state reads keep their immutable parts in the gateway codec's cache and the
// server heads in the cache that LoadConfig's listener keeps live.
func registerIntelligence(cfg Config, p *platform.Platform) error {
	urls, cidrs, err := cfg.Intelligence.parse("")
	if err != nil {
		return err
	}
	st := store.NewIntelligence(p.Pool, events.Outbox{})
	reader := intelligence.NewReader(st, intelligence.WithHeadCache(cfg.reads.heads))
	if err := p.Server.Register(&verificationv1.IntelligenceService_ServiceDesc, api.NewIntelligence(reader, cfg.reads.answers),
		serve.Gateway(verificationv1.RegisterIntelligenceServiceHandlerClient, verificationv1.NewIntelligenceServiceClient)); err != nil {
		return err
	}
	if len(urls) == 0 {
		p.Log.Info("registry sync off: no registry URLs configured")
		return nil
	}
	s := cfg.Intelligence
	client := registryclient.New(registryclient.Options{AllowPrivate: cidrs, Timeout: s.RegistryTimeout, MaxAttempts: s.RegistryMaxAttempts})
	syncer := intelligence.NewSyncer(st, client, urls, intelligence.SyncOptions{
		PageSize: s.RegistryPageSize, Interval: s.RegistryPollInterval, MaxPages: s.RegistryMaxPages,
	}, p.Log.With("component", "registry_sync"))
	p.Go(syncer.Run)
	return nil
}
