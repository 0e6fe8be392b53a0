// Package audits is the use case of the audit routes: it runs an audit through the engine, stores
// the report as evidence, reads it back for its holder, and issues the audit tokens.
package audits

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
	"github.com/trustlayer/trustlayer/services/verification/internal/audittoken"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Kinds of audit.
const (
	KindConformance = "mcp"
	KindReadiness   = "readiness"
)

// Token bounds.
const (
	DefaultTokenTTL = time.Hour
	MaxTokenTTL     = 24 * time.Hour
	maxSubject      = 200
)

// Store keeps reports (internal/store implements it).
type Store interface {
	Insert(ctx context.Context, a Audit) error
	Get(ctx context.Context, id uuid.UUID, issuer, subject string) (Audit, error)
}

// Audit is a stored audit report: the report's JSON and what the routes look it up by.
type Audit struct {
	ID      uuid.UUID
	Kind    string
	URL     string
	Issuer  string
	Subject string
	// Verdict (conformance) and Score (readiness) are nil for the other kind.
	Verdict   *string
	Score     *int
	Report    []byte
	CreatedAt time.Time
	// Listing is the target's tool listing, which the store records with the report as the URL's
	// live tool surface (registry intelligence's timeline); nil when the tools could not be listed or
	// the caller sent headers (an authenticated surface is the caller's, not the URL's).
	Listing *surface.Listing
}

// Holder is who runs or reads an audit: the verified token's issuer and subject.
type Holder struct{ Issuer, Subject string }

// Service runs and stores audits.
type Service struct {
	engine *audit.Engine
	store  Store
	issuer *audittoken.Issuer
	now    func() time.Time
	// slots bounds the audits in flight on this replica: each holds connections and buffers, and a
	// burst of callers must queue rather than exhaust the service.
	slots chan struct{}
}

// New returns the service; maxInFlight bounds concurrent audits.
func New(engine *audit.Engine, st Store, issuer *audittoken.Issuer, maxInFlight int, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{engine: engine, store: st, issuer: issuer, now: now, slots: make(chan struct{}, max(1, maxInFlight))}
}

// WithStore returns a service that keeps its reports in st and shares everything else with s: the
// engine, the issuer, the clock and the bound of audits in flight, which holds for the replica
// whichever path (routes, watch runs, scans, the sweep) an audit comes from.
func (s *Service) WithStore(st Store) *Service {
	c := *s
	c.store = st
	return &c
}

// Errors the routes map to 503.
var (
	// ErrAuditFailed: the service could not finish the audit (its own bug or deadline).
	ErrAuditFailed = errors.New("the service could not complete the audit")
	// ErrUnavailable: a dependency of the service (its database) failed.
	ErrUnavailable = errors.New("a dependency of the service is unavailable")
)

// Record is a stored report: JSON with id and kind beside the report's own fields.
type Record struct {
	ID     uuid.UUID
	Kind   string
	Report []byte
	// Listing is the target's tool listing (audit.Report.Listing), which the stored report only
	// hashes: set by Run, for a watch run to compare with the next; nil when tools could not be
	// listed, and for a report read back.
	Listing *surface.Listing
}

// Run audits target (kind KindConformance or KindReadiness) for h and stores the report. A refused
// target is a *safehttp.TargetError and a bad header an *fault.ValidationError; what the target does
// is in the report.
func (s *Service) Run(ctx context.Context, kind string, target audit.Target, h Holder) (Record, error) {
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return Record{}, fmt.Errorf("%w: waited for a free audit slot: %w", ErrAuditFailed, context.Cause(ctx))
	}
	defer func() { <-s.slots }()

	id := uuid.New()
	var report any
	var listing *surface.Listing
	var verdict *string
	var score *int
	var err error
	switch kind {
	case KindConformance:
		var r *audit.Report
		if r, err = s.engine.Conformance(ctx, target); err == nil {
			report, verdict = struct {
				ID   string `json:"id"`
				Kind string `json:"kind"`
				*audit.Report
			}{id.String(), kind, r}, &r.Verdict
			listing = r.Listing
		}
	case KindReadiness:
		var r *audit.ReadinessReport
		if r, err = s.engine.Readiness(ctx, target); err == nil {
			report, score = struct {
				ID   string `json:"id"`
				Kind string `json:"kind"`
				*audit.ReadinessReport
			}{id.String(), kind, r}, &r.Score
			listing = r.Listing
		}
	default:
		return Record{}, fmt.Errorf("%w: unknown kind %q", ErrAuditFailed, kind)
	}
	if err != nil {
		return Record{}, classify(err)
	}
	body, err := json.Marshal(report)
	if err != nil {
		return Record{}, fmt.Errorf("%w: encode the report: %w", ErrAuditFailed, err)
	}
	rec := Audit{
		ID: id, Kind: kind, URL: target.URL, Issuer: h.Issuer, Subject: h.Subject,
		Verdict: verdict, Score: score, Report: body, CreatedAt: s.now().UTC(),
	}
	if len(target.Headers) == 0 {
		rec.Listing = listing
	}
	if err := s.store.Insert(ctx, rec); err != nil {
		return Record{}, fmt.Errorf("%w: store the report: %w", ErrUnavailable, err)
	}
	return Record{ID: id, Kind: kind, Report: body, Listing: listing}, nil
}

// classify maps an engine error: the caller's mistakes pass through, the rest is the service's.
func classify(err error) error {
	var header *audit.HeaderError
	if errors.As(err, &header) {
		return fault.Invalid(header.Field, "value_error", header.Message)
	}
	if _, ok := safehttp.AsTargetError(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrAuditFailed, err)
}

// Get reads the report id of h.
func (s *Service) Get(ctx context.Context, id uuid.UUID, h Holder) (Record, error) {
	a, err := s.store.Get(ctx, id, h.Issuer, h.Subject)
	if errors.Is(err, fault.ErrNotFound) {
		return Record{}, err
	}
	if err != nil {
		return Record{}, fmt.Errorf("%w: read the report: %w", ErrUnavailable, err)
	}
	return Record{ID: a.ID, Kind: a.Kind, Report: a.Report}, nil
}

// Token is an issued audit token.
type Token struct {
	Token     string
	ExpiresAt time.Time
	Scopes    []string
}

// IssueToken signs a token for subject with scopes, valid ttl (0 means DefaultTokenTTL).
func (s *Service) IssueToken(subject string, scopes []string, ttl time.Duration) (Token, error) {
	var problems []fault.Problem
	subject = strings.TrimSpace(subject)
	if subject == "" || utf8.RuneCountInString(subject) > maxSubject {
		problems = append(problems, fault.Problem{Field: "subject", Type: "value_error", Message: fmt.Sprintf("subject must be 1..%d characters", maxSubject)})
	}
	if len(scopes) == 0 {
		problems = append(problems, fault.Problem{Field: "scopes", Type: "value_error", Message: "at least one scope: " + strings.Join(audittoken.Scopes, ", ")})
	}
	seen := map[string]bool{}
	var clean []string
	for i, sc := range scopes {
		known := false
		for _, k := range audittoken.Scopes {
			known = known || sc == k
		}
		if !known {
			problems = append(problems, fault.Problem{Field: fmt.Sprintf("scopes.%d", i), Type: "value_error", Message: "unknown scope: want one of " + strings.Join(audittoken.Scopes, ", ")})
			continue
		}
		if !seen[sc] {
			seen[sc] = true
			clean = append(clean, sc)
		}
	}
	if ttl == 0 {
		ttl = DefaultTokenTTL
	}
	if ttl < time.Second || ttl > MaxTokenTTL {
		problems = append(problems, fault.Problem{Field: "ttl_seconds", Type: "value_error", Message: fmt.Sprintf("ttl_seconds must be 1..%d", int(MaxTokenTTL/time.Second))})
	}
	if len(problems) > 0 {
		return Token{}, &fault.ValidationError{Problems: problems}
	}
	tok, exp, err := s.issuer.Issue(subject, clean, ttl, s.now())
	if err != nil {
		return Token{}, err
	}
	return Token{Token: tok, ExpiresAt: exp, Scopes: clean}, nil
}
