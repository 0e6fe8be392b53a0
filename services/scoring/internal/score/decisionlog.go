package score

import (
	"context"
	"log/slog"

	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
)

// logDecision counts the decision in the scoring.decisions metric and writes the structured decision
// log (README "Decision log"): routing, support level, drift flags, model and calibration versions.
// It never carries the claim: no identifiers, codes or amounts of the payload, only what the models
// decided and why (the key is named by its prefix).
func (s *Service) logDecision(ctx context.Context, requestID, route, keyPrefix string, d decision.Decision) {
	s.metrics.add(ctx, route, d.Workflow, d.RiskLevel)
	if !s.log.Enabled(ctx, slog.LevelInfo) {
		return // the attributes below are built for the log alone
	}
	attrs := []slog.Attr{
		slog.String("request_id", requestID), slog.String("route_id", route), slog.String("key_prefix", keyPrefix),
		slog.String("workflow", string(d.Workflow)), slog.String("model_version", d.ModelVersion),
		slog.Float64("score", d.Score), slog.String("risk_level", d.RiskLevel), slog.Float64("confidence", d.Confidence),
		slog.Any("drift_flags", nonNil(d.Drift)),
	}
	if d.PinnedVersion != "" {
		attrs = append(attrs, slog.String("pinned_version_unavailable", d.PinnedVersion))
	}
	switch {
	case d.Denial != nil:
		x := d.Denial
		attrs = append(attrs, slog.Group("denial",
			slog.String("distribution_profile", string(x.Profile)), slog.String("routing_source", x.RoutingSource),
			slog.String("operating_point", x.OperatingPoint), slog.Float64("threshold", x.Threshold),
			slog.String("threshold_source", x.ThresholdSource), slog.String("risk_tier", x.RiskTier),
			slog.String("calibration_method", x.CalibrationMethod), slog.String("calibration_version", x.CalibrationVersion)))
	case d.PriorAuth != nil:
		x := d.PriorAuth
		ids := make([]string, len(x.Signals))
		for i, m := range x.Signals {
			ids[i] = m.ChangeEventID
		}
		attrs = append(attrs, slog.Group("prior_auth",
			slog.String("support_level", x.SupportLevel), slog.Any("policy_signal_ids", ids),
			slog.String("calibration_method", x.CalibrationMethod), slog.String("calibration_version", x.CalibrationVersion)))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "scoring decision", attrs...)
}

func nonNil(v []string) []string {
	if v == nil {
		return []string{}
	}
	return v
}
