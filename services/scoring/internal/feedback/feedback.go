// Package feedback accepts outcome feedback on earlier scoring calls (README "Feedback"):
// the request id must be a stored, unexpired scoring response of the caller's account, the endpoint
// must match the scored call, and the record carries no PHI.
package feedback

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
)

// Limits and enumerations.
const (
	// Retention is how long a scoring response accepts feedback: claims adjudicate within weeks, and
	// appeals within months.
	Retention = 90 * 24 * time.Hour
	// MaxNotes bounds the notes: short operator remarks, not documents.
	MaxNotes = 500
)

// Endpoints are the feedback endpoint names of the workflows.
var Endpoints = []string{"denial", "prior_auth", "reimbursement"}

// Outcomes are the accepted values of observed_outcome and expected_outcome.
var Outcomes = []string{
	"paid", "denied", "partially_paid", "pending", "approved", "underpaid", "overpaid",
	"prior_auth_required", "prior_auth_not_required", "unknown",
}

// Input is a caller's feedback record.
type Input struct {
	RequestID, Endpoint, ObservedOutcome, ExpectedOutcome string
	ConfidenceMismatch                                    bool
	Notes                                                 string
}

// Feedback is a stored feedback record.
type Feedback struct {
	ID, RequestID, KeyID, Endpoint   string
	ObservedOutcome, ExpectedOutcome string
	ConfidenceMismatch               bool
	Notes                            string
	ReceivedAt                       time.Time
}

// Store reads request records and stores feedback.
type Store interface {
	RequestRecord(ctx context.Context, requestID string) (meter.RequestRecord, error)
	CreateFeedback(ctx context.Context, f Feedback) (Feedback, error)
}

// Pending is the meter's buffer of request records not yet flushed on this replica.
type Pending interface {
	PendingRecord(requestID string) bool
	Flush(ctx context.Context) error
}

// Service validates and stores feedback.
type Service struct {
	store   Store
	pending Pending
	now     func() time.Time
}

// New returns a Service.
func New(store Store, pending Pending) *Service {
	return &Service{store: store, pending: pending, now: time.Now}
}

// Submit validates in for the caller (key and account) and stores it.
func (s *Service) Submit(ctx context.Context, keyID, accountID string, in Input) (Feedback, error) {
	in.Endpoint = strings.ToLower(strings.TrimSpace(in.Endpoint))
	in.ObservedOutcome = strings.ToLower(strings.TrimSpace(in.ObservedOutcome))
	in.ExpectedOutcome = strings.ToLower(strings.TrimSpace(in.ExpectedOutcome))
	in.Notes = strings.TrimSpace(in.Notes)
	if err := validate(in); err != nil {
		return Feedback{}, err
	}
	rec, err := s.record(ctx, strings.TrimSpace(in.RequestID))
	if err != nil {
		return Feedback{}, err
	}
	switch {
	case s.now().Sub(rec.ScoredAt) > Retention:
		return Feedback{}, fmt.Errorf("%w: request_id has expired: feedback is accepted for %d days after scoring", fault.ErrInvalid, int(Retention.Hours()/24))
	case rec.AccountID != accountID:
		return Feedback{}, fmt.Errorf("%w: request_id was not issued to the caller's account", fault.ErrInvalid)
	case rec.Endpoint != in.Endpoint:
		return Feedback{}, fmt.Errorf("%w: endpoint %q does not match the scored call (%s)", fault.ErrInvalid, in.Endpoint, rec.Endpoint)
	}
	return s.store.CreateFeedback(ctx, Feedback{
		ID: uuid.NewString(), RequestID: rec.RequestID, KeyID: keyID, Endpoint: in.Endpoint,
		ObservedOutcome: in.ObservedOutcome, ExpectedOutcome: in.ExpectedOutcome,
		ConfidenceMismatch: in.ConfidenceMismatch, Notes: in.Notes,
	})
}

// record finds the request record, flushing this replica's buffer first when the record is still in
// it (feedback can follow its scoring call within the flush interval).
func (s *Service) record(ctx context.Context, id string) (meter.RequestRecord, error) {
	if id == "" {
		return meter.RequestRecord{}, fmt.Errorf("%w: request_id is required", fault.ErrInvalid)
	}
	if s.pending != nil && s.pending.PendingRecord(id) {
		if err := s.pending.Flush(ctx); err != nil {
			return meter.RequestRecord{}, err
		}
	}
	rec, err := s.store.RequestRecord(ctx, id)
	if errors.Is(err, fault.ErrNotFound) {
		return meter.RequestRecord{}, fmt.Errorf("%w: request_id is unknown or has expired", fault.ErrInvalid)
	}
	return rec, err
}

func validate(in Input) error {
	if !slices.Contains(Endpoints, in.Endpoint) {
		return fmt.Errorf("%w: endpoint must be one of %s (got %q)", fault.ErrInvalid, strings.Join(Endpoints, ", "), in.Endpoint)
	}
	for _, f := range []struct{ name, v string }{{"observed_outcome", in.ObservedOutcome}, {"expected_outcome", in.ExpectedOutcome}} {
		if !slices.Contains(Outcomes, f.v) {
			return fmt.Errorf("%w: %s must be one of %s (got %q)", fault.ErrInvalid, f.name, strings.Join(Outcomes, ", "), f.v)
		}
	}
	if n := len([]rune(in.Notes)); n > MaxNotes {
		return fmt.Errorf("%w: notes must be at most %d characters (got %d)", fault.ErrInvalid, MaxNotes, n)
	}
	if kind, ok := PHIKind(in.Notes); ok {
		return fmt.Errorf("%w: notes must not contain PHI-like content (found what looks like %s)", fault.ErrInvalid, kind)
	}
	return nil
}

// phiPatterns are the PHI-like shapes notes may not hold. They err on the side of refusing: a
// refused note costs the caller a rephrase, an accepted SSN is a disclosure.
var phiPatterns = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"a social security number", regexp.MustCompile(`\b\d{3}[- ]\d{2}[- ]\d{4}\b|(?i)\b(ssn|social security)\b`)},
	{"an e-mail address", regexp.MustCompile(`(?i)[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}`)},
	{"a phone number", regexp.MustCompile(`(?:\+?1[-. ]?)?\(?\b\d{3}\)?[-. ]\d{3}[-. ]\d{4}\b|(?i)\b(phone|tel|cell)\b[^0-9]{0,5}\d`)},
	{"a date of birth", regexp.MustCompile(`(?i)\b(dob|d\.o\.b\.?|date of birth|born)\b|\b(0?[1-9]|1[0-2])[/-](0?[1-9]|[12]\d|3[01])[/-](19|20)?\d{2}\b|\b(19|20)\d{2}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b`)},
	{"a member or patient identifier", regexp.MustCompile(`(?i)\b(member|subscriber|patient|medicare|medicaid|mrn|mbi|insured)\s*(id|number|no\.?|#)?\s*[:#]?\s*[a-z0-9-]*\d[a-z0-9-]*\b|\b\d[a-z]{1}[a-z0-9]\d[a-z][a-z0-9]\d[a-z]{2}\d{2}\b|\b[a-z]{1,3}\d{8,12}\b`)},
	{"a long identifying number", regexp.MustCompile(`\b\d{9,}\b`)},
}

// PHIKind reports the first PHI-like pattern found in text.
func PHIKind(text string) (string, bool) {
	for _, p := range phiPatterns {
		if p.re.MatchString(text) {
			return p.kind, true
		}
	}
	return "", false
}
