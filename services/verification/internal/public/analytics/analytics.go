// Package analytics is the event sink of the public pages (POST /api/analytics/events): it accepts
// events of a documented list of names with a few flat properties, refuses anything that looks like
// personal data, and stores no address or other identifier of the visitor. Retention deletes old
// events and trims the table to a cap, so that the sink can never fill the database.
package analytics

import (
	"context"
	"log/slog"
	"time"
)

// Names are the accepted event names (docs/public.md lists what each means).
var Names = []string{
	"page_viewed",
	"claim_page_viewed",
	"claim_started",
	"claim_intent_submitted",
	"claim_method_selected",
	"claim_verify_clicked",
	"claim_verified",
	"coverage_viewed",
	"cta_clicked",
	"outbound_link_clicked",
}

// Limits of an event.
const (
	MaxPage          = 200
	MaxProperties    = 20
	MaxKey           = 40
	MaxString        = 200
	MaxPropertyBytes = 4096
)

// Event is one accepted event: Properties hold strings, float64 and bools only.
type Event struct {
	Name       string
	Page       string
	Properties map[string]any
}

// Store keeps events.
type Store interface {
	InsertAnalyticsEvent(ctx context.Context, e Event, at time.Time) error
	// PruneAnalytics deletes events received before cutoff, then the oldest beyond keep rows; it
	// returns how many it deleted.
	PruneAnalytics(ctx context.Context, cutoff time.Time, keep int) (int64, error)
}

// Service records and prunes events.
type Service struct {
	store     Store
	retention time.Duration
	maxEvents int
	now       func() time.Time
	log       *slog.Logger
}

// New returns the service: events live for retention and at most maxEvents are kept.
func New(store Store, retention time.Duration, maxEvents int, log *slog.Logger) *Service {
	return &Service{store: store, retention: retention, maxEvents: maxEvents, now: time.Now, log: log}
}

// Record validates e (a *fault.ValidationError lists what is wrong) and stores it.
func (s *Service) Record(ctx context.Context, e Event) error {
	if err := Validate(e); err != nil {
		return err
	}
	if e.Properties == nil {
		e.Properties = map[string]any{}
	}
	return s.store.InsertAnalyticsEvent(ctx, e, s.now())
}

// Prune applies the retention once; the retention loop calls it. Failures are logged.
func (s *Service) Prune(ctx context.Context) {
	n, err := s.store.PruneAnalytics(ctx, s.now().Add(-s.retention), s.maxEvents)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("analytics retention failed", "error", err)
		}
		return
	}
	if n > 0 {
		s.log.Info("analytics retention", "deleted", n)
	}
}
