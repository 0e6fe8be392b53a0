package main

import (
	"context"

	"github.com/trustlayer/trustlayer/services/scoring/app"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
	"github.com/trustlayer/trustlayer/services/scoring/internal/score"
)

// The "off" sides of the bench's twins: the service with limits and metering off keeps the request
// records (they are feedback's), and the one with everything off stores no record either.
var (
	limitsOff     = app.WithLimiter(func(m *meter.Meter) score.Limiter { return unlimited{m} })
	everythingOff = app.WithLimiter(func(*meter.Meter) score.Limiter { return unmetered{} })
)

// unlimited admits every request and counts none, but stores each request's record through the
// meter (meter.Meter.Unlimited).
type unlimited struct{ m *meter.Meter }

func (u unlimited) Admit(_ context.Context, _ string, _ meter.Plan, n int) (meter.Ticket, error) {
	return u.m.Unlimited(n), nil
}

// unmetered admits every request and meters none: its ticket's Commit and Release do nothing.
type unmetered struct{}

func (unmetered) Admit(context.Context, string, meter.Plan, int) (meter.Ticket, error) {
	return meter.Ticket{}, nil
}
