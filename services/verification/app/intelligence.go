package app

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
	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
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
	// SurfaceSweep turns on the remote sweep: every remote URL that a server's current listing names
	// is audited (conformance, through the audit engine and its SSRF guard) once per
	// SurfaceSweepInterval, so that its tool surface joins the server's timeline even when nobody
	// audits or watches it. Off by default: it sends requests to every listed remote.
	SurfaceSweep bool `env:"SURFACE_SWEEP" envDefault:"false"`
	// SurfaceSweepInterval is how often each listed remote is audited.
	SurfaceSweepInterval time.Duration `env:"SURFACE_SWEEP_INTERVAL" envDefault:"24h"`
	// SurfaceSweepTick is how often a replica claims the remotes that are due.
	SurfaceSweepTick time.Duration `env:"SURFACE_SWEEP_TICK" envDefault:"1m"`
	// SurfaceSweepConcurrency bounds the sweep's audits in flight on one replica; SurfaceSweepBatch
	// the remotes one replica claims per tick.
	SurfaceSweepConcurrency int `env:"SURFACE_SWEEP_CONCURRENCY" envDefault:"4"`
	SurfaceSweepBatch       int `env:"SURFACE_SWEEP_BATCH" envDefault:"100"`
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
	if s.SurfaceSweepInterval < time.Second {
		errs = append(errs, config.Invalid(prefix+"SURFACE_SWEEP_INTERVAL", "must be at least 1s"))
	}
	if s.SurfaceSweepTick < 100*time.Millisecond {
		errs = append(errs, config.Invalid(prefix+"SURFACE_SWEEP_TICK", "must be at least 100ms"))
	}
	if s.SurfaceSweepConcurrency < 1 || s.SurfaceSweepConcurrency > 64 {
		errs = append(errs, config.Invalid(prefix+"SURFACE_SWEEP_CONCURRENCY", "must be between 1 and 64"))
	}
	if s.SurfaceSweepBatch < 1 || s.SurfaceSweepBatch > 10000 {
		errs = append(errs, config.Invalid(prefix+"SURFACE_SWEEP_BATCH", "must be between 1 and 10000"))
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
	if err := startRemoteSweep(cfg, p, st); err != nil {
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

// sweepHolder is whom the sweep's audit reports belong to: no audit token has this issuer, so no
// caller reads them back; their tool surfaces are recorded with them.
var sweepHolder = audits.Holder{Issuer: "verification", Subject: "registry-remote-sweep"}

// startRemoteSweep runs the remote sweep when VERIFICATION_SURFACE_SWEEP is on, with an audit engine
// of its own under the audit settings (ports, private networks, limits, deadline).
func startRemoteSweep(cfg Config, p *platform.Platform, st *store.Intelligence) error {
	s := cfg.Intelligence
	if !s.SurfaceSweep {
		return nil
	}
	a := cfg.Audits
	targets := a.targets()
	auditor := sweepAuditor{svc: cfg.audit.audits.WithStore(store.NewAudits(p.Pool)), targets: targets}
	sw := intelligence.NewSweeper(st, auditor, intelligence.SweepOptions{
		Interval: s.SurfaceSweepInterval, Tick: s.SurfaceSweepTick, Concurrency: s.SurfaceSweepConcurrency, Batch: s.SurfaceSweepBatch,
	}, p.Log.With("component", "remote_sweep"))
	p.Go(sw.Run)
	return nil
}

// sweepAuditor audits a listed remote: the SSRF guard's target check first (a listed URL is user
// input), then a conformance audit, whose report store records the tool surface.
type sweepAuditor struct {
	svc     *audits.Service
	targets safehttp.TargetPolicy
}

func (a sweepAuditor) AuditRemote(ctx context.Context, url string) error {
	_, err := safehttp.CheckTarget(ctx, url, a.targets)
	if err == nil {
		_, err = a.svc.Run(ctx, audits.KindConformance, audit.Target{URL: url}, sweepHolder)
	}
	return sweepError(err)
}

// sweepError reduces a failed sweep audit to a stable code, which is what the sweep logs and keeps:
// no resolved address, no internal cause.
func sweepError(err error) error {
	te, refused := safehttp.AsTargetError(err)
	switch {
	case err == nil:
		return nil
	case refused:
		return errors.New(te.Code)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errors.New("cancelled")
	case errors.Is(err, audits.ErrUnavailable):
		return errors.New("service_dependency_unavailable")
	}
	return errors.New("service_audit_failed")
}
