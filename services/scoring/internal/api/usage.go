package api

import (
	"context"
	"math"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
)

// Usage implements scoring.v1.UsageService. Neither method is billable or rate limited.
type Usage struct {
	scoringv1.UnimplementedUsageServiceServer
	meter *meter.Meter
}

// NewUsage returns the service.
func NewUsage(m *meter.Meter) *Usage { return &Usage{meter: m} }

func (u *Usage) snapshot(ctx context.Context) (meter.Usage, meter.Plan, string, error) {
	key := callerFrom(ctx)
	plan, ok := meter.PlanFor(key.Plan)
	if !ok {
		plan, _ = meter.PlanFor("trial")
	}
	snap, err := u.meter.Snapshot(ctx, key.ID, plan)
	return snap, plan, key.Prefix, err
}

// GetLimits is GET /v1/limits.
func (u *Usage) GetLimits(ctx context.Context, _ *scoringv1.GetLimitsRequest) (*scoringv1.GetLimitsResponse, error) {
	snap, plan, prefix, err := u.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	out := &scoringv1.LimitsEnvelope{
		KeyPrefix: prefix, Plan: plan.Name, Scope: "per_key", RequestsPerSecond: plan.RatePerSecond,
		Burst: int32(plan.Burst), MaxInFlight: int32(plan.MaxInFlight), MonthlyIncludedCalls: count(plan.IncludedCalls),
		HardQuota: plan.HardQuota, Period: snap.Period, Used: count(snap.Used), Remaining: count(snap.Remaining),
		ResetsAt: timestamppb.New(snap.ResetsAt),
	}
	out.UpgradeUrl = snap.UpgradeURL
	return &scoringv1.GetLimitsResponse{Limits: out}, nil
}

// GetUsage is GET /v1/usage.
func (u *Usage) GetUsage(ctx context.Context, _ *scoringv1.GetUsageRequest) (*scoringv1.GetUsageResponse, error) {
	snap, plan, prefix, err := u.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	start := snap.ResetsAt.AddDate(0, -1, 0)
	return &scoringv1.GetUsageResponse{Usage: &scoringv1.UsageEnvelope{
		KeyPrefix: prefix, Plan: plan.Name, Meter: "scoring_calls", Period: snap.Period,
		PeriodStart: timestamppb.New(start), PeriodEnd: timestamppb.New(snap.ResetsAt),
		BillableCalls: count(snap.Used), IncludedCalls: count(snap.Included), OverageCalls: count(snap.Overage),
		RemainingIncludedCalls: count(snap.Remaining), Consistency: "eventual",
		FlushIntervalSeconds: snap.FlushInterval.Seconds(), AsOf: timestamppb.New(snap.AsOf.UTC().Truncate(time.Millisecond)),
	}}, nil
}

// count renders a call count as a JSON number (proto3 JSON would quote an int64); a key's monthly
// calls stay far below 2^31.
func count(v int64) int32 { return int32(min(v, math.MaxInt32)) }
