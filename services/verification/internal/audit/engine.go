// Package audit is the MCP audit engine: it probes a remote MCP server and reports its protocol
// conformance (Engine.Conformance) or its production readiness (Engine.Readiness). The audit
// routes, watch runs, agent-reliability scans and enforcement's tool pins all run through an
// Engine, so this interface stays small:
//
//	e, err := audit.New(audit.Config{...})
//	report, err := e.Conformance(ctx, audit.Target{URL: "https://mcp.example.com/mcp"})
//
// Every probe is safe against a production server: the engine sends initialize and server/discover,
// notifications, list methods, ping, a tools/call of a tool name that cannot exist, and deliberately
// malformed messages (bad JSON, a batch, a foreign Origin, wrong session ids, a contradicting
// header); it never calls a real tool, reads a resource or gets a prompt. Checks of a capability the
// server does not declare are SKIPPED, never FAILURE. Traffic is bounded by probe.Limits and by
// Config.Deadline; what the target does (refuse, stall, stream forever, answer 10 MB) becomes
// findings in the report, never an error of the engine.
package audit

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"time"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/mcpschema"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/probe"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// DefaultDeadline caps one audit. A full conformance audit of a healthy server takes well under a
// second; the deadline is for servers that stall, and stays below common proxy timeouts (60 s) so
// that the caller gets the report.
const DefaultDeadline = 45 * time.Second

// Config configures an Engine.
type Config struct {
	// Targets says which URLs may be audited (ports, private ranges opened by the operator).
	Targets safehttp.TargetPolicy
	// RootCAs are the roots trusted for targets; nil trusts the system's (SSL_CERT_FILE included).
	RootCAs *x509.CertPool
	// Limits bound each audit's traffic; zero fields take probe.DefaultLimits'.
	Limits probe.Limits
	// Deadline caps each audit; zero means DefaultDeadline.
	Deadline time.Duration
	// Schemas validate every message; nil loads the published schemas.
	Schemas *mcpschema.Set
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Engine runs audits. It is safe for concurrent use.
type Engine struct {
	cfg       Config
	transport http.RoundTripper
	schemas   *mcpschema.Set
	now       func() time.Time
}

// Target is what to audit: the endpoint URL and the caller's headers for it (its own Authorization,
// say), which are sent to the target only, and never stored, logged or echoed.
type Target struct {
	URL     string
	Headers map[string]string
}

// ErrAuditFailed means the engine itself could not finish (a bug it recovered from): the service's
// failure, never a finding about the target.
var ErrAuditFailed = errors.New("the audit could not be completed")

// New returns an Engine for cfg.
func New(cfg Config) (*Engine, error) {
	l := cfg.Limits.WithDefaults()
	cfg.Limits = l
	if cfg.Deadline <= 0 {
		cfg.Deadline = DefaultDeadline
	}
	schemas := cfg.Schemas
	if schemas == nil {
		var err error
		if schemas, err = mcpschema.Load(); err != nil {
			return nil, fmt.Errorf("audit: load the MCP schemas: %w", err)
		}
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	opts := []safehttp.Option{}
	if cfg.Targets.Lookup != nil {
		opts = append(opts, safehttp.WithLookup(cfg.Targets.Lookup))
	}
	if cfg.RootCAs != nil {
		opts = append(opts, safehttp.WithTLSConfig(&tls.Config{RootCAs: cfg.RootCAs}))
	}
	guard := safehttp.New(safehttp.Policy{AllowPrivate: cfg.Targets.AllowPrivate, Timeout: l.RequestTimeout, MaxRedirects: -1}, opts...)
	return &Engine{cfg: cfg, transport: guard.Transport(), schemas: schemas, now: now}, nil
}

// CheckTarget applies the target rules to raw without auditing it: a *safehttp.TargetError when
// refused. Watches call it when a target is registered.
func (e *Engine) CheckTarget(ctx context.Context, raw string) (safehttp.Target, error) {
	return safehttp.CheckTarget(ctx, raw, e.cfg.Targets)
}

// maxHeaders bounds the caller's headers for the target.
const (
	maxHeaders     = 20
	maxHeaderValue = 4096
)

// reservedHeaders are set by the audit itself; a caller's value would falsify a probe.
var reservedHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Accept": true, "Origin": true,
	"Connection": true, "Transfer-Encoding": true, "Upgrade": true, "Te": true, "Trailer": true,
	"Keep-Alive": true, "Proxy-Authorization": true, "Proxy-Connection": true,
	headerSession: true, headerProtocolVersion: true, headerMethod: true, headerName: true,
}

// HeaderError is a caller header the engine will not send; Field names it.
type HeaderError struct{ Field, Message string }

func (e *HeaderError) Error() string { return e.Field + ": " + e.Message }

// header turns the caller's headers into an http.Header, refusing what cannot be sent.
func header(in map[string]string) (http.Header, error) {
	if len(in) > maxHeaders {
		return nil, &HeaderError{Field: "headers", Message: fmt.Sprintf("at most %d headers", maxHeaders)}
	}
	h := http.Header{}
	for k, v := range in {
		name := textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(k))
		switch {
		case !validToken(name):
			return nil, &HeaderError{Field: "headers", Message: "a header name must be an HTTP token"}
		case reservedHeaders[name]:
			return nil, &HeaderError{Field: "headers." + k, Message: "this header is set by the audit itself"}
		case len(v) > maxHeaderValue || strings.ContainsAny(v, "\r\n\x00"):
			return nil, &HeaderError{Field: "headers." + k, Message: fmt.Sprintf("a value must be one line of at most %d bytes", maxHeaderValue)}
		}
		h.Set(name, v)
	}
	return h, nil
}

// validToken reports whether s is an RFC 9110 token.
func validToken(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// ValidateHeaders checks the caller's headers as an audit would, for routes that store a target.
func ValidateHeaders(in map[string]string) error {
	_, err := header(in)
	return err
}

// start checks the target and prepares a run; the returned context carries the audit's deadline.
func (e *Engine) start(ctx context.Context, t Target) (*run, context.Context, context.CancelFunc, error) {
	extra, err := header(t.Headers)
	if err != nil {
		return nil, nil, nil, err
	}
	checked, err := e.CheckTarget(ctx, t.URL)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, e.cfg.Deadline, errDeadline)
	client := probe.New(e.transport, extra, e.cfg.Limits)
	return newRun(e, client, checked.URL.String()), ctx, cancel, nil
}

// errDeadline is the cause of an audit stopped at its deadline.
var errDeadline = errors.New("the audit's deadline passed")

// guard turns a panic of the engine into ErrAuditFailed, so that one bad answer cannot take the
// service down.
func guard(err *error) {
	if v := recover(); v != nil {
		*err = fmt.Errorf("%w: %v", ErrAuditFailed, v)
	}
}

// Conformance audits the protocol conformance of t's endpoint in both eras.
func (e *Engine) Conformance(ctx context.Context, t Target) (report *Report, err error) {
	defer guard(&err)
	started := e.now()
	r, actx, cancel, err := e.start(ctx, t)
	if err != nil {
		return nil, err
	}
	defer cancel()

	var stateful, stateless eraOutcome
	var wg sync.WaitGroup
	wg.Go(func() { stateful = r.stateful(actx, fullAudit) })
	wg.Go(func() { stateless = r.stateless(actx) })
	wg.Go(func() { r.httpSurface(actx) })
	wg.Wait()
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}

	checks := r.checks(r.skipReason(actx))
	counts, verdict := count(checks)
	report = &Report{
		URL: r.endpoint, StartedAt: started.UTC(), DurationMS: e.now().Sub(started).Milliseconds(),
		Verdict: verdict, Counts: counts, Eras: []EraResult{stateful.result, stateless.result},
		Checks: checks, Traffic: traffic(r.client.Stats()),
	}
	var listing *surface.Listing
	report.Server, report.Surface, listing = pick(stateful, stateless)
	err = scrub(r.client, report)
	report.Listing = redactListing(r.client, listing)
	return report, err
}

// scrub removes the caller's header values from every string of a report: details are redacted as
// they are written, but a target may also copy a credential into what it describes (its name, a
// tool's title), and a report is stored and shown. The hashes of the surface stay those of what the
// target sent.
func scrub[T any](c *probe.Client, report *T) error {
	body, err := json.Marshal(report)
	if err != nil {
		return fmt.Errorf("%w: encode the report: %w", ErrAuditFailed, err)
	}
	clean := c.RedactJSON(body)
	if bytes.Equal(clean, body) {
		return nil
	}
	var out T
	if err := json.Unmarshal(clean, &out); err != nil {
		return fmt.Errorf("%w: redact the report: %w", ErrAuditFailed, err)
	}
	*report = out
	return nil
}

// redactListing is l with the caller's header values removed from every string, as scrub removes
// them from a report; l itself is left as it is.
func redactListing(c *probe.Client, l *surface.Listing) *surface.Listing {
	if l == nil {
		return nil
	}
	body, err := json.Marshal(l)
	if err != nil {
		return nil
	}
	clean := c.RedactJSON(body)
	if bytes.Equal(clean, body) {
		return l
	}
	var out surface.Listing
	if err := json.Unmarshal(clean, &out); err != nil {
		return nil
	}
	return &out
}

// skipReason says why a check that never ran was skipped.
func (r *run) skipReason(ctx context.Context) string {
	switch {
	case errors.Is(context.Cause(ctx), errDeadline):
		return "not run: " + errDeadline.Error()
	case r.client.Stats().Requests >= r.client.Stats().MaxRequests:
		return "not run: " + probe.ErrBudget.Error()
	}
	return "not run: no era of the protocol could be used"
}

// pick returns the server description, surface and listing of the first era that listed tools.
func pick(outcomes ...eraOutcome) (*ServerInfo, *surface.Surface, *surface.Listing) {
	for _, o := range outcomes {
		if o.listing != nil {
			return o.server, surface.Digest(*o.listing), o.listing
		}
	}
	for _, o := range outcomes {
		if o.server != nil {
			return o.server, nil, nil
		}
	}
	return nil, nil, nil
}

func traffic(s probe.Stats) Traffic {
	return Traffic{Requests: s.Requests, MaxRequests: s.MaxRequests, BytesReceived: s.BytesReceived, Truncated: s.Truncated}
}
