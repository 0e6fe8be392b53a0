package workspace

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/schedule"
)

// SchedulePut sets a target's schedule.
type SchedulePut struct {
	IntervalSeconds *int
	Cron, Timezone  string
	// Enabled defaults to true.
	Enabled *bool
}

// GetSchedule returns a target's schedule; a target without one has Configured and Enabled false.
func (s *Service) GetSchedule(ctx context.Context, org, repositoryID, targetID uuid.UUID) (Schedule, error) {
	return s.store.GetSchedule(ctx, org, repositoryID, targetID)
}

// PutSchedule validates and stores a target's schedule, with its first due time after now (none
// while disabled).
func (s *Service) PutSchedule(ctx context.Context, org, repositoryID, targetID uuid.UUID, p SchedulePut) (Schedule, error) {
	if _, err := s.store.GetTarget(ctx, org, repositoryID, targetID); err != nil {
		return Schedule{}, err // 404 before 422
	}
	sc := schedule.Schedule{Cron: strings.Join(strings.Fields(p.Cron), " "), Timezone: strings.TrimSpace(p.Timezone)}
	if len(p.Cron) > schedule.MaxCronLength {
		return Schedule{}, fault.Invalid("cron", "string_too_long", fmt.Sprintf("String should have at most %d characters", schedule.MaxCronLength))
	}
	if p.IntervalSeconds != nil {
		sc.IntervalSeconds = *p.IntervalSeconds
		if sc.IntervalSeconds == 0 {
			return Schedule{}, fault.Invalid("interval_seconds", "value_error",
				"want 60..2592000 seconds")
		}
	}
	if sc.Timezone == "" {
		sc.Timezone = "UTC"
	}
	at := s.clock()
	next, err := schedule.Next(sc, at)
	if err != nil {
		var fe *schedule.FieldError
		if errors.As(err, &fe) {
			return Schedule{}, fault.Invalid(fe.Field, "value_error", fe.Message)
		}
		return Schedule{}, err
	}
	enabled := p.Enabled == nil || *p.Enabled
	out := Schedule{TargetID: targetID, Configured: true, Enabled: enabled, Schedule: sc, UpdatedAt: at}
	if enabled {
		out.NextDueAt = &next
	}
	return s.store.PutSchedule(ctx, org, repositoryID, out)
}
