package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/trustlayer/trustlayer/pkg/periodic"
)

// Schedule runs discovery for every due source (enabled, terms approved, cadence elapsed), through the
// same Discover as the manual trigger, until ctx ends. It is safe with several replicas: a source
// locked by another replica's run is skipped. With zero sources it only polls. The first look comes
// one interval after start, so that replicas started together by a rollout do not all poll at once.
func (s *Service) Schedule(ctx context.Context, every time.Duration) error {
	return periodic.Run(ctx, every, func(ctx context.Context) { s.RunDue(ctx) })
}

// dueBatch bounds how many sources one tick starts; the rest wait for the next tick.
const dueBatch = 10

// RunDue runs discovery for the sources due now and returns how many ran.
func (s *Service) RunDue(ctx context.Context) int {
	ids, err := s.store.DueSources(ctx, dueBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.log.WarnContext(ctx, "scheduler: listing due sources failed", "error", err)
		}
		return 0
	}
	ran := 0
	for _, id := range ids {
		_, err := s.Discover(ctx, id, TriggerScheduled)
		switch {
		case err == nil:
			ran++
		case errors.Is(err, ErrRunInProgress), errors.Is(err, ErrTermsNotApproved):
			// Another replica has it, or its review changed since it was listed.
		default:
			s.log.ErrorContext(ctx, "scheduler: discovery failed", "source_id", id, "error", err)
		}
	}
	return ran
}
