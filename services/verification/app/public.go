package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/periodic"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/analytics"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/claim"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/codehost"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/coverage"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/throttle"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/web"
)

// PublicSettings are the variables of the public routes: coverage summary, analytics events and
// claim pages, read behind EnvPrefix (docs/public.md, "Settings").
type PublicSettings struct {
	// CoverageCacheTTL is how long a replica serves a computed coverage summary.
	CoverageCacheTTL time.Duration `env:"COVERAGE_CACHE_TTL" envDefault:"5s"`

	// AnalyticsRetention and AnalyticsMaxEvents bound the stored events: older ones are deleted, and
	// the oldest beyond the cap, every AnalyticsPruneInterval.
	AnalyticsRetention     time.Duration `env:"ANALYTICS_RETENTION" envDefault:"720h"`
	AnalyticsMaxEvents     int           `env:"ANALYTICS_MAX_EVENTS" envDefault:"1000000"`
	AnalyticsPruneInterval time.Duration `env:"ANALYTICS_PRUNE_INTERVAL" envDefault:"1m"`
	// AnalyticsPerClient and AnalyticsOverall cap the events per minute of one client address and of
	// all together (429 contact_rate_limited past them).
	AnalyticsPerClient int `env:"ANALYTICS_EVENTS_PER_CLIENT_MINUTE" envDefault:"60"`
	AnalyticsOverall   int `env:"ANALYTICS_EVENTS_PER_MINUTE" envDefault:"3000"`

	// ClaimIntentsPerClient and ClaimIntentsOverall cap POST /claim/intent per hour (429
	// contact_rate_limited); ClaimChecksPerClient and ClaimChecksOverall cap POST /claim/start per hour
	// (429 scan_rate_limited).
	ClaimIntentsPerClient int `env:"CLAIM_INTENTS_PER_CLIENT_HOUR" envDefault:"20"`
	ClaimIntentsOverall   int `env:"CLAIM_INTENTS_PER_HOUR" envDefault:"1000"`
	ClaimChecksPerClient  int `env:"CLAIM_CHECKS_PER_CLIENT_HOUR" envDefault:"60"`
	ClaimChecksOverall    int `env:"CLAIM_CHECKS_PER_HOUR" envDefault:"2000"`
	// ClaimTTL is how long a claim may be verified after its intent; ClaimSignInTTL how long a
	// code-host sign-in may take.
	ClaimTTL       time.Duration `env:"CLAIM_TTL" envDefault:"168h"`
	ClaimSignInTTL time.Duration `env:"CLAIM_SIGN_IN_TTL" envDefault:"10m"`
	// ClaimDNSServer is the DNS server (host:port) TXT records and the HTTP proof's host are resolved
	// with; empty uses the system's resolver.
	ClaimDNSServer string `env:"CLAIM_DNS_SERVER"`
	// ClaimHTTPScheme and ClaimHTTPPort say where the HTTP proof is fetched: https on 443 in
	// production; a staging deployment or a test may name http and another port.
	ClaimHTTPScheme string `env:"CLAIM_HTTP_SCHEME" envDefault:"https"`
	ClaimHTTPPort   int    `env:"CLAIM_HTTP_PORT" envDefault:"0"`

	// CodeHostURL and CodeHostAPIURL are the code host's sign-in and API base URLs; CodeHostClientID
	// and CodeHostClientSecret this service's OAuth application (empty: the code_host method answers
	// 503 code_host_unavailable); CodeHostCallbackURL its registered callback, this service's
	// GET /claim/callback.
	CodeHostURL          string `env:"CLAIM_CODE_HOST_URL" envDefault:"https://github.com"`
	CodeHostAPIURL       string `env:"CLAIM_CODE_HOST_API_URL" envDefault:"https://api.github.com"`
	CodeHostClientID     string `env:"CLAIM_CODE_HOST_CLIENT_ID"`
	CodeHostClientSecret string `env:"CLAIM_CODE_HOST_CLIENT_SECRET"`
	CodeHostCallbackURL  string `env:"CLAIM_CODE_HOST_CALLBACK_URL"`

	// TrustedProxyHops is how many proxies in front of the service append to X-Forwarded-For; the
	// client address the public limits count is the entry that many places before the connection's.
	TrustedProxyHops int `env:"PUBLIC_TRUSTED_PROXY_HOPS" envDefault:"0"`
}

// Validate checks the settings; prefix names the variables.
func (s *PublicSettings) Validate(prefix string) error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, config.Invalid(prefix+name, format, args...))
	}
	if s.CoverageCacheTTL < 0 || s.CoverageCacheTTL > 10*time.Minute {
		bad("COVERAGE_CACHE_TTL", "must be between 0s and 10m")
	}
	if s.AnalyticsRetention < time.Hour || s.AnalyticsRetention > 366*24*time.Hour {
		bad("ANALYTICS_RETENTION", "must be between 1h and 8784h")
	}
	if s.AnalyticsMaxEvents < 1 || s.AnalyticsMaxEvents > 100_000_000 {
		bad("ANALYTICS_MAX_EVENTS", "must be between 1 and 100000000")
	}
	if s.AnalyticsPruneInterval < time.Second || s.AnalyticsPruneInterval > time.Hour {
		bad("ANALYTICS_PRUNE_INTERVAL", "must be between 1s and 1h")
	}
	for name, v := range map[string]int{
		"ANALYTICS_EVENTS_PER_CLIENT_MINUTE": s.AnalyticsPerClient, "ANALYTICS_EVENTS_PER_MINUTE": s.AnalyticsOverall,
		"CLAIM_INTENTS_PER_CLIENT_HOUR": s.ClaimIntentsPerClient, "CLAIM_INTENTS_PER_HOUR": s.ClaimIntentsOverall,
		"CLAIM_CHECKS_PER_CLIENT_HOUR": s.ClaimChecksPerClient, "CLAIM_CHECKS_PER_HOUR": s.ClaimChecksOverall,
	} {
		if v < 1 || v > 1_000_000 {
			bad(name, "must be between 1 and 1000000")
		}
	}
	if s.ClaimTTL < time.Hour || s.ClaimTTL > 90*24*time.Hour {
		bad("CLAIM_TTL", "must be between 1h and 2160h")
	}
	if s.ClaimSignInTTL < time.Minute || s.ClaimSignInTTL > time.Hour {
		bad("CLAIM_SIGN_IN_TTL", "must be between 1m and 1h")
	}
	if s.ClaimDNSServer != "" {
		if _, err := netip.ParseAddrPort(s.ClaimDNSServer); err != nil {
			bad("CLAIM_DNS_SERVER", "want an IP address and port, such as 1.1.1.1:53 (got %q)", s.ClaimDNSServer)
		}
	}
	if s.ClaimHTTPScheme != "https" && s.ClaimHTTPScheme != "http" {
		bad("CLAIM_HTTP_SCHEME", "must be https or http")
	}
	if s.ClaimHTTPPort < 0 || s.ClaimHTTPPort > 65535 {
		bad("CLAIM_HTTP_PORT", "must be between 0 (the scheme's) and 65535")
	}
	for name, v := range map[string]string{"CLAIM_CODE_HOST_URL": s.CodeHostURL, "CLAIM_CODE_HOST_API_URL": s.CodeHostAPIURL} {
		if err := config.CheckURL(prefix+name, v, "http", "https"); err != nil {
			errs = append(errs, err)
		}
	}
	if (s.CodeHostClientID == "") != (s.CodeHostClientSecret == "") {
		bad("CLAIM_CODE_HOST_CLIENT_SECRET", "CLAIM_CODE_HOST_CLIENT_ID and CLAIM_CODE_HOST_CLIENT_SECRET are set together")
	}
	if s.CodeHostClientID != "" {
		if s.CodeHostCallbackURL == "" {
			bad("CLAIM_CODE_HOST_CALLBACK_URL", "is required with CLAIM_CODE_HOST_CLIENT_ID (this service's external URL + %s)", web.CallbackPath)
		} else if err := config.CheckURL(prefix+"CLAIM_CODE_HOST_CALLBACK_URL", s.CodeHostCallbackURL, "http", "https"); err != nil {
			errs = append(errs, err)
		}
	}
	if s.TrustedProxyHops < 0 || s.TrustedProxyHops > 10 {
		bad("PUBLIC_TRUSTED_PROXY_HOPS", "must be between 0 and 10")
	}
	return errors.Join(errs...)
}

// registerPublic adds the routes of the public routes: coverage summary, analytics events and claim pages.
func registerPublic(ctx context.Context, cfg Config, p *platform.Platform) error {
	s := cfg.Public
	st := store.NewPublic(p.Pool)
	resolver := claimResolver(s.ClaimDNSServer)
	events := analytics.New(st, s.AnalyticsRetention, s.AnalyticsMaxEvents, p.Log)
	claims := claim.New(claim.Deps{
		Store: st, Resolver: resolver, Fetcher: newProofFetcher(resolver, s.ClaimHTTPScheme, cfg.Audits.allowPrivate),
		CodeHost: newCodeHost(s), TTL: s.ClaimTTL, StateTTL: s.ClaimSignInTTL,
		HTTPOrigin: func(domain string) string {
			if s.ClaimHTTPPort != 0 {
				return s.ClaimHTTPScheme + "://" + net.JoinHostPort(domain, strconv.Itoa(s.ClaimHTTPPort))
			}
			return s.ClaimHTTPScheme + "://" + domain
		},
	})
	rules := api.PublicRules{
		Analytics:   throttle.Rule{Scope: "analytics", PerClient: s.AnalyticsPerClient, Overall: s.AnalyticsOverall, Window: time.Minute},
		ClaimIntent: throttle.Rule{Scope: "claim_intent", PerClient: s.ClaimIntentsPerClient, Overall: s.ClaimIntentsOverall, Window: time.Hour},
		ClaimStart:  throttle.Rule{Scope: "claim_start", PerClient: s.ClaimChecksPerClient, Overall: s.ClaimChecksOverall, Window: time.Hour},
		ProxyHops:   s.TrustedProxyHops,
	}
	// Retention of events, of the rate counters (every window is at most an hour long) and of expired
	// pending claims; every replica runs it, and the deletes are idempotent.
	p.Go(func(ctx context.Context) error {
		return periodic.Run(ctx, s.AnalyticsPruneInterval, func(ctx context.Context) {
			events.Prune(ctx)
			if err := st.PruneRateCounters(ctx, time.Now().Add(-2*time.Hour)); err != nil && ctx.Err() == nil {
				p.Log.Warn("rate counter retention failed", "error", err)
			}
			if err := st.PruneClaims(ctx, time.Now().Add(-claimKeepExpired)); err != nil && ctx.Err() == nil {
				p.Log.Warn("claim retention failed", "error", err)
			}
		})
	})
	pages := web.NewClaimPages(claims, api.PublicError, p.Log)
	p.Server.Handle("GET /claim", http.HandlerFunc(pages.Claim))
	p.Server.Handle("GET /claim/start/{namespace}/{name}", http.HandlerFunc(pages.Start))
	p.Server.Handle("GET "+web.CallbackPath, http.HandlerFunc(pages.Callback))
	return p.Server.Register(&verificationv1.PublicService_ServiceDesc,
		api.NewPublic(coverage.New(st, s.CoverageCacheTTL), events, claims, throttle.New(st), rules),
		serve.Gateway(verificationv1.RegisterPublicServiceHandlerClient, verificationv1.NewPublicServiceClient))
}

// claimKeepExpired is how long a pending claim is kept after it expired, so that a late check still
// answers "expired" rather than claim_not_found for a while.
const claimKeepExpired = 7 * 24 * time.Hour

// newCodeHost is the code host's sign-in, nil when no OAuth application is configured.
func newCodeHost(s PublicSettings) claim.CodeHost {
	if s.CodeHostClientID == "" {
		return nil
	}
	return codehost.New(codehost.Config{BaseURL: s.CodeHostURL, APIURL: s.CodeHostAPIURL,
		ClientID: s.CodeHostClientID, ClientSecret: s.CodeHostClientSecret, CallbackURL: s.CodeHostCallbackURL})
}

// dnsResolver resolves through one DNS server, or the system's configuration when server is "".
type dnsResolver struct{ r *net.Resolver }

func claimResolver(server string) dnsResolver {
	if server == "" {
		return dnsResolver{r: net.DefaultResolver}
	}
	d := net.Dialer{Timeout: 3 * time.Second}
	return dnsResolver{r: &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, server)
	}}}
}

// LookupTXT looks up name's TXT records within 5 seconds.
func (d dnsResolver) LookupTXT(ctx context.Context, name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return d.r.LookupTXT(ctx, name)
}

// lookupIP resolves host for the proof fetcher (checked again by the SSRF guard).
func (d dnsResolver) lookupIP(ctx context.Context, host string) ([]netip.Addr, error) {
	return d.r.LookupNetIP(ctx, "ip", host)
}

// proofFetcher fetches a .well-known proof through the SSRF guard: the claimant names the domain, so
// every address it resolves to is checked at connect time (VERIFICATION_ALLOW_PRIVATE_CIDRS opens
// ranges, for tests), no redirect is followed, and the body is capped at 4 KiB.
type proofFetcher struct{ c *safehttp.Client }

// proofMaxBytes caps the proof's body: a token is 43 characters.
const proofMaxBytes = 4 << 10

func newProofFetcher(d dnsResolver, scheme string, allowPrivate []netip.Prefix) proofFetcher {
	return proofFetcher{c: safehttp.New(safehttp.Policy{
		AllowPrivate: allowPrivate, MaxBytes: proofMaxBytes, Timeout: 5 * time.Second,
		MaxRedirects: -1, MaxAttempts: 1, RequireHTTPS: scheme == "https",
	}, safehttp.WithLookup(d.lookupIP))}
}

// Fetch returns the proof's body; its error is a fixed public text, which names no address.
func (f proofFetcher) Fetch(ctx context.Context, u string) ([]byte, error) {
	resp, err := f.c.Do(ctx, &safehttp.Request{URL: u})
	if err != nil {
		return nil, errors.New(safehttp.PublicErrorText(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("the body could not be read: %s", safehttp.PublicErrorText(err))
	}
	return b, nil
}
