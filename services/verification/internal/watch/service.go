package watch

import (
	"context"
	"log/slog"
	"time"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
)

// Defaults of Deps.
const (
	// DefaultLimit is the plan's cap of watches that are not archived per organization.
	DefaultLimit = 10
	// DefaultMinInterval and DefaultInterval bound and default a watch's interval.
	DefaultMinInterval = time.Minute
	DefaultInterval    = time.Hour
	// MaxInterval is the longest interval a watch may have: 30 days.
	MaxInterval = 30 * 24 * time.Hour
)

// Deps are what the watch use cases need.
type Deps struct {
	// Store keeps keys, watches and policies; Runs keeps the runs.
	Store Store
	Runs  RunStore
	// Auditor runs and stores the audits of runs; Alerts delivers the alerts of runs.
	Auditor Auditor
	Alerts  Alerts
	// CheckTarget refuses a target URL the audit engine would refuse (a *safehttp.TargetError), with
	// the engine's policy; it resolves the host. nil checks with safehttp's default policy.
	CheckTarget func(ctx context.Context, rawURL string) error
	// Limit caps an organization's watches that are not archived (active and paused); 0 means
	// DefaultLimit.
	Limit int
	// MinInterval and DefaultInterval bound and default a watch's interval; 0 means
	// DefaultMinInterval and DefaultInterval.
	MinInterval, DefaultInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log receives what the runs cannot tell a caller; nil logs nothing.
	Log *slog.Logger
}

// Service runs the watch use cases: keys, watches and policies (keys.go, watches.go, policies.go),
// and the runs, their scheduling and alerts (runs.go, scheduler.go, alerts.go).
type Service struct {
	store           Store
	runs            RunStore
	auditor         Auditor
	alerts          Alerts
	checkTarget     func(ctx context.Context, rawURL string) error
	limit           int
	minInterval     time.Duration
	defaultInterval time.Duration
	now             func() time.Time
	log             *slog.Logger
}

// New returns the service over d, with defaults for its zero fields.
func New(d Deps) *Service {
	s := &Service{
		store: d.Store, runs: d.Runs, auditor: d.Auditor, alerts: d.Alerts, checkTarget: d.CheckTarget,
		limit: d.Limit, minInterval: d.MinInterval, defaultInterval: d.DefaultInterval, now: d.Now, log: d.Log,
	}
	if s.limit <= 0 {
		s.limit = DefaultLimit
	}
	if s.minInterval <= 0 {
		s.minInterval = DefaultMinInterval
	}
	if s.defaultInterval <= 0 {
		s.defaultInterval = max(DefaultInterval, s.minInterval)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.checkTarget == nil {
		s.checkTarget = func(ctx context.Context, raw string) error {
			_, err := safehttp.CheckTarget(ctx, raw, safehttp.TargetPolicy{})
			return err
		}
	}
	return s
}

// Limit is the cap of watches that are not archived per organization.
func (s *Service) Limit() int { return s.limit }

// clock returns the current time as the database keeps it (microseconds, UTC).
func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }
