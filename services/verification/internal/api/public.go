package api

import (
	"context"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/analytics"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/claim"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/coverage"
	"github.com/trustlayer/trustlayer/services/verification/internal/public/throttle"
)

// publicPrefix names PublicService's methods, which need no credential (Authenticate lets them pass).
const publicPrefix = "/verification.v1.PublicService/"

// The 429 codes of the public POST routes, chosen among those the interface names for its public
// routes: an analytics event and a claim intent are messages a visitor sends (contact), a claim
// check makes the service look up DNS or fetch the claimant's domain (scan).
const (
	CodeContactRateLimited = "contact_rate_limited"
	CodeScanRateLimited    = "scan_rate_limited"
)

// PublicRules are the bounds of the public POST routes.
type PublicRules struct {
	Analytics, ClaimIntent, ClaimStart throttle.Rule
	// ProxyHops is how many proxies in front of the service append to X-Forwarded-For: the client
	// address is the entry that many places before the connection's own.
	ProxyHops int
}

// Public implements verification.v1.PublicService.
type Public struct {
	verificationv1.UnimplementedPublicServiceServer
	coverage  *coverage.Service
	analytics *analytics.Service
	claims    *claim.Service
	limiter   *throttle.Limiter
	rules     PublicRules
}

// NewPublic returns the PublicService.
func NewPublic(cov *coverage.Service, events *analytics.Service, claims *claim.Service, limiter *throttle.Limiter, rules PublicRules) *Public {
	return &Public{coverage: cov, analytics: events, claims: claims, limiter: limiter, rules: rules}
}

// GetCoverageSummary is GET /v1/coverage-summary.
func (p *Public) GetCoverageSummary(ctx context.Context, _ *verificationv1.GetCoverageSummaryRequest) (*verificationv1.GetCoverageSummaryResponse, error) {
	s, err := p.coverage.Summary(ctx)
	if err != nil {
		return nil, PublicError(err)
	}
	out := &verificationv1.GetCoverageSummaryResponse{
		ServersTracked: s.ServersTracked, ServersWithRemotes: s.ServersWithRemotes,
		ServersAudited_7D: s.Audited7d, ServersAudited_30D: s.Audited30d,
		Changes_24H: &verificationv1.ChangeCounts{Total: s.Changes24h.Total, High: s.Changes24h.High, Medium: s.Changes24h.Medium, Low: s.Changes24h.Low},
		Registries:  make([]*verificationv1.RegistryCoverage, 0, len(s.Registries)),
		GeneratedAt: ts(s.GeneratedAt), CacheSeconds: int32(p.coverage.TTL() / time.Second),
	}
	for _, r := range s.Registries {
		out.Registries = append(out.Registries, &verificationv1.RegistryCoverage{
			Url: r.URL, LastSyncAt: optionalTS(r.LastSuccessAt), LastPollAt: optionalTS(r.LastPollAt), ConsecutiveFailures: int32(r.ConsecutiveFailures),
		})
	}
	return out, nil
}

// RecordAnalyticsEvent is POST /api/analytics/events.
func (p *Public) RecordAnalyticsEvent(ctx context.Context, req *verificationv1.RecordAnalyticsEventRequest) (*verificationv1.RecordAnalyticsEventResponse, error) {
	if err := p.allow(ctx, p.rules.Analytics, CodeContactRateLimited); err != nil {
		return nil, err
	}
	e := analytics.Event{Name: req.GetName(), Page: req.GetPage()}
	if req.GetProperties() != nil {
		e.Properties = req.GetProperties().AsMap()
	}
	if err := p.analytics.Record(ctx, e); err != nil {
		return nil, PublicError(err)
	}
	return &verificationv1.RecordAnalyticsEventResponse{Status: "accepted"}, nil
}

// RecordClaimIntent is POST /claim/intent.
func (p *Public) RecordClaimIntent(ctx context.Context, req *verificationv1.RecordClaimIntentRequest) (*verificationv1.RecordClaimIntentResponse, error) {
	if err := p.allow(ctx, p.rules.ClaimIntent, CodeContactRateLimited); err != nil {
		return nil, err
	}
	is, err := p.claims.RecordIntent(ctx, claim.NewIntent{Server: req.GetServer(), Source: req.GetSource(), Intent: req.GetIntent()})
	if err != nil {
		return nil, PublicError(err)
	}
	out := &verificationv1.RecordClaimIntentResponse{
		ClaimId: is.Intent.ID.String(), ClaimSecret: is.Secret, Server: is.Intent.Server(), Namespace: is.Intent.Namespace, Name: is.Intent.Name,
		Status: is.Intent.Status, Methods: is.Namespace.Methods(), Token: is.Token, ExpiresAt: ts(is.Intent.ExpiresAt),
	}
	if is.DNSName != "" {
		out.Dns = &verificationv1.ClaimDNSProof{RecordName: is.DNSName, RecordType: "TXT", RecordValue: is.DNSValue}
		out.Http = &verificationv1.ClaimHTTPProof{Url: is.HTTPURL, Content: is.Token}
	}
	return out, nil
}

// StartClaim is POST /claim/start.
func (p *Public) StartClaim(ctx context.Context, req *verificationv1.StartClaimRequest) (*verificationv1.StartClaimResponse, error) {
	if err := p.allow(ctx, p.rules.ClaimStart, CodeScanRateLimited); err != nil {
		return nil, err
	}
	r, err := p.claims.Start(ctx, req.GetClaimId(), req.GetClaimSecret(), req.GetMethod())
	if err != nil {
		return nil, PublicError(err)
	}
	return &verificationv1.StartClaimResponse{
		ClaimId: r.Intent.ID.String(), Server: r.Intent.Server(), Status: r.Status, Method: r.Method, Reason: r.Reason,
		AuthorizeUrl: r.AuthorizeURL, VerifiedAt: optionalTS(r.Intent.VerifiedAt),
	}, nil
}

// allow counts the request against rule: a 429 with code and Retry-After past the bound.
func (p *Public) allow(ctx context.Context, rule throttle.Rule, code string) error {
	wait, err := p.limiter.Allow(ctx, rule, ClientAddress(ctx, p.rules.ProxyHops))
	if err != nil {
		return err
	}
	if wait > 0 {
		return RateLimited(code, retrySeconds(wait))
	}
	return nil
}

// retrySeconds is wait in whole seconds, rounded up.
func retrySeconds(wait time.Duration) int { return int((wait + time.Second - 1) / time.Second) }

// RateLimited is the 429 of a public route: {"detail":{"error":code,"message":...,"retry_after_seconds":n}},
// whose Retry-After header (apierror.Error.RetryAfter, which the platform sets on the answer and a
// plain handler writes with Header) announces the same n.
func RateLimited(code string, secs int) *apierror.Error {
	e := apierror.Coded(http.StatusTooManyRequests, code, "Too many requests from this address; retry after the delay in Retry-After",
		map[string]any{"retry_after_seconds": secs})
	e.RetryAfter = time.Duration(secs) * time.Second
	return e
}

// claimTarget is what the claim routes address: an unknown claim, or a wrong secret, is its 404.
var claimTarget = target{code: "claim_not_found", message: "No claim with this id and secret"}

// PublicError maps the public routes' errors (for the claim pages too): the one place they become
// what a client sees. Unknown errors pass through (a logged 500 without their cause).
func PublicError(err error) error {
	switch {
	case errors.Is(err, fault.ErrServerNotFound):
		return apierror.Coded(http.StatusNotFound, "server_not_found", "No registry lists a server of this name", nil)
	case errors.Is(err, claim.ErrCodeHostDisabled):
		return apierror.Coded(http.StatusServiceUnavailable, "code_host_unavailable",
			"Signing in with the code host is not configured on this deployment", nil)
	case errors.Is(err, claim.ErrStateInvalid):
		return apierror.Coded(http.StatusBadRequest, "claim_state_invalid", "This sign-in link is unknown, used or expired: start again", nil)
	case errors.Is(err, claim.ErrCodeHostFailed):
		return apierror.Coded(http.StatusBadGateway, "code_host_failed", "The code host did not confirm the sign-in: start again", nil)
	}
	return toAPI(err, claimTarget)
}

// ClientAddress is the address the public routes count a request against: through the gateway, the
// X-Forwarded-For entry proxyHops places before the connection's own address (which the gateway
// appends); an IPv6 address counts as its /64. "" when none parses.
func ClientAddress(ctx context.Context, proxyHops int) string {
	md, _ := metadata.FromIncomingContext(ctx)
	return ForwardedClient(md.Get("x-forwarded-for"), "", proxyHops)
}

// ForwardedClient picks the client among X-Forwarded-For values and the connection's peer address
// (host or host:port; "" when the gateway already appended it): the entry proxyHops places before
// the last. Entries further left were written by the client itself and are never trusted.
func ForwardedClient(values []string, peer string, proxyHops int) string {
	var entries []string
	for _, v := range values {
		for e := range strings.SplitSeq(v, ",") {
			if e = strings.TrimSpace(e); e != "" {
				entries = append(entries, e)
			}
		}
	}
	if peer != "" {
		entries = append(entries, peer)
	}
	if len(entries) == 0 {
		return ""
	}
	raw := entries[max(len(entries)-1-proxyHops, 0)]
	addr, err := netip.ParseAddr(raw)
	if err != nil {
		ap, err2 := netip.ParseAddrPort(raw)
		if err2 != nil {
			return ""
		}
		addr = ap.Addr()
	}
	addr = addr.Unmap()
	if addr.Is6() {
		return netip.PrefixFrom(addr, 64).Masked().String()
	}
	return addr.String()
}
