package app

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/probe"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
	"github.com/trustlayer/trustlayer/services/verification/internal/audittoken"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// JWKSPath serves the public keys of the audit tokens this service signs.
const JWKSPath = "/.well-known/jwks.json"

// AuditSettings are the variables of the audit routes (behind EnvPrefix).
type AuditSettings struct {
	// SigningKey is the PEM private key (PKCS#8 Ed25519 or P-256, or SEC1 P-256) that signs audit
	// tokens. Empty: a key is generated at start, so tokens stop working at restart and differ per
	// replica; set it in production.
	SigningKey string `env:"AUDIT_SIGNING_KEY"`
	// Issuer and Audience are the iss and aud of the tokens this service signs.
	Issuer   string `env:"AUDIT_ISSUER" envDefault:"trustlayer-verification"`
	Audience string `env:"AUDIT_AUDIENCE" envDefault:"trustlayer-audits"`
	// JWKSURL, JWKSIssuer and JWKSAudience accept the tokens of an external issuer as well: all three
	// or none.
	JWKSURL      string `env:"AUDIT_JWKS_URL"`
	JWKSIssuer   string `env:"AUDIT_JWKS_ISSUER"`
	JWKSAudience string `env:"AUDIT_JWKS_AUDIENCE"`
	// AllowedPorts lists the ports a target may name besides 443 (comma-separated).
	AllowedPorts string `env:"AUDIT_ALLOWED_PORTS"`
	// AllowPrivateCIDRs opens private networks to targets (tests, on-premises servers).
	AllowPrivateCIDRs string `env:"ALLOW_PRIVATE_CIDRS"`
	// Timeout caps one audit; RequestTimeout one request to the target.
	Timeout        time.Duration `env:"AUDIT_TIMEOUT" envDefault:"45s"`
	RequestTimeout time.Duration `env:"AUDIT_REQUEST_TIMEOUT" envDefault:"10s"`
	// MaxRequests caps the requests of one audit, MaxResponseBytes what is read of one answer.
	MaxRequests      int   `env:"AUDIT_MAX_REQUESTS" envDefault:"64"`
	MaxResponseBytes int64 `env:"AUDIT_MAX_RESPONSE_BYTES" envDefault:"1048576"`
	// MaxInFlight caps the audits one replica runs at once; more wait for a slot.
	MaxInFlight int `env:"AUDIT_MAX_IN_FLIGHT" envDefault:"64"`

	ports        []int
	allowPrivate []netip.Prefix
	key          crypto.Signer
	generatedKey bool
}

// Validate checks the settings and parses the ports, networks and key; prefix names the variables.
func (s *AuditSettings) Validate(prefix string) error {
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, config.Invalid(prefix+name, format, args...))
	}
	s.ports = append([]int(nil), safehttp.DefaultTargetPorts...)
	for p := range strings.SplitSeq(s.AllowedPorts, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			bad("AUDIT_ALLOWED_PORTS", "want comma-separated ports 1..65535 (got %q)", p)
			continue
		}
		s.ports = append(s.ports, n)
	}
	cidrs, err := safehttp.ParseCIDRs(s.AllowPrivateCIDRs)
	if err != nil {
		bad("ALLOW_PRIVATE_CIDRS", "%v", err)
	}
	s.allowPrivate = cidrs
	if s.SigningKey != "" {
		if s.key, err = audittoken.ParseSigningKey([]byte(s.SigningKey)); err != nil {
			bad("AUDIT_SIGNING_KEY", "%v", err)
		}
	} else if s.key == nil {
		if s.key, err = audittoken.GenerateKey(); err != nil {
			errs = append(errs, err)
		}
		s.generatedKey = true
	}
	if s.Issuer == "" || s.Audience == "" {
		bad("AUDIT_ISSUER", "AUDIT_ISSUER and AUDIT_AUDIENCE must not be empty")
	}
	set := 0
	for _, v := range []string{s.JWKSURL, s.JWKSIssuer, s.JWKSAudience} {
		if v != "" {
			set++
		}
	}
	if set != 0 && set != 3 {
		bad("AUDIT_JWKS_URL", "set AUDIT_JWKS_URL, AUDIT_JWKS_ISSUER and AUDIT_JWKS_AUDIENCE together, or none")
	}
	if s.JWKSURL != "" {
		if err := config.CheckURL(prefix+"AUDIT_JWKS_URL", s.JWKSURL, "https", "http"); err != nil {
			errs = append(errs, err)
		}
	}
	if s.Timeout < time.Second || s.Timeout > 5*time.Minute {
		bad("AUDIT_TIMEOUT", "must be between 1s and 5m")
	}
	if s.RequestTimeout <= 0 || s.RequestTimeout > s.Timeout {
		bad("AUDIT_REQUEST_TIMEOUT", "must be positive and at most AUDIT_TIMEOUT")
	}
	if s.MaxRequests < 16 || s.MaxRequests > 1000 {
		bad("AUDIT_MAX_REQUESTS", "must be between 16 and 1000")
	}
	if s.MaxResponseBytes < 64<<10 || s.MaxResponseBytes > 64<<20 {
		bad("AUDIT_MAX_RESPONSE_BYTES", "must be between 65536 and 67108864")
	}
	if s.MaxInFlight < 1 || s.MaxInFlight > 10000 {
		bad("AUDIT_MAX_IN_FLIGHT", "must be between 1 and 10000")
	}
	return errors.Join(errs...)
}

// auditParts are made by LoadConfig, since the authentication interceptor needs the token
// verifier before Register runs.
type auditParts struct {
	issuer   *audittoken.Issuer
	verifier *audittoken.Verifier
	// stop ends the verifier's refresh of an external JWKS; the platform calls it at close.
	stop context.CancelFunc
	// audits is the replica's one audit engine and bound of audits in flight
	// (VERIFICATION_AUDIT_MAX_IN_FLIGHT), without a store: each path that audits takes it with its
	// own (WithStore).
	audits *audits.Service
}

func newAuditParts(s *AuditSettings) (*auditParts, error) {
	issuer, err := audittoken.NewIssuer(s.key, s.Issuer, s.Audience)
	if err != nil {
		return nil, fmt.Errorf("audit tokens: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	verifier, err := audittoken.NewVerifier(ctx, issuer, audittoken.External{JWKSURL: s.JWKSURL, Issuer: s.JWKSIssuer, Audience: s.JWKSAudience})
	if err != nil {
		stop()
		return nil, fmt.Errorf("audit tokens: %w", err)
	}
	engine, err := s.engine()
	if err != nil {
		stop()
		return nil, err
	}
	return &auditParts{issuer: issuer, verifier: verifier, stop: stop, audits: audits.New(engine, nil, issuer, s.MaxInFlight, nil)}, nil
}

// registerAudits adds the audit routes and the JWKS.
func registerAudits(cfg Config, p *platform.Platform) error {
	s := cfg.Audits
	p.OnClose(cfg.audit.stop)
	if s.generatedKey {
		p.Log.Warn("VERIFICATION_AUDIT_SIGNING_KEY is not set: audit tokens are signed with a key made at start, which dies with this process")
	}
	jwks, err := cfg.audit.issuer.JWKS()
	if err != nil {
		return err
	}
	p.Server.Handle("GET "+JWKSPath, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(jwks)
	}))
	return p.Server.Register(&verificationv1.AuditService_ServiceDesc, api.NewAudits(cfg.audit.audits.WithStore(store.NewAudits(p.Pool))),
		serve.Gateway(verificationv1.RegisterAuditServiceHandlerClient, verificationv1.NewAuditServiceClient))
}

// targets is the policy every audit target passes (ports, private networks), at creation of a
// watch, target or scan and at connect time.
func (s *AuditSettings) targets() safehttp.TargetPolicy {
	return safehttp.TargetPolicy{AllowedPorts: s.ports, AllowPrivate: s.allowPrivate}
}

// checkTarget refuses a target URL the audits would refuse (its resolved addresses included).
func (s *AuditSettings) checkTarget(ctx context.Context, raw string) error {
	_, err := safehttp.CheckTarget(ctx, raw, s.targets())
	return err
}

// engine is the audit engine under these settings, which the routes, watch runs, reliability scans
// and the remote sweep share.
func (s *AuditSettings) engine() (*audit.Engine, error) {
	return audit.New(audit.Config{
		Targets:  s.targets(),
		Limits:   probe.Limits{MaxRequests: s.MaxRequests, MaxResponseBytes: s.MaxResponseBytes, RequestTimeout: s.RequestTimeout},
		Deadline: s.Timeout,
	})
}

// auditRoutes gives the audit routes a write timeout above VERIFICATION_AUDIT_TIMEOUT, which may be set
// above VERIFICATION_HTTP_WRITE_TIMEOUT (up to 5 minutes).
func auditRoutes(write time.Duration, s *AuditSettings) []serve.RouteLimits {
	return []serve.RouteLimits{{Path: "/v1/audits/", WriteTimeout: max(write, s.Timeout+15*time.Second)}}
}
