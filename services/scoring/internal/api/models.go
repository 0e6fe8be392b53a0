package api

import (
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

func cardToProto(c model.Card) *scoringv1.ModelCard {
	out := &scoringv1.ModelCard{
		Workflow: string(c.Workflow), ModelVersion: c.Version, DistributionProfile: string(c.Profile),
		CalibrationMethod: c.CalibrationMethod, CalibrationVersion: c.CalibrationVersion, IntendedUse: c.IntendedUse,
		Data: c.Data, Limitations: c.Limitations, Metrics: map[string]float64{},
		Samples: map[string]int32{"train": int32(c.Samples.Train), "calibration": int32(c.Samples.Calibration), "test": int32(c.Samples.Test)},
	}
	if m := c.Classification; m != nil {
		out.Metrics["auc"], out.Metrics["brier"], out.Metrics["ece"] = m.AUC, m.Brier, m.ECE
		out.Metrics["ece_uncalibrated"], out.Metrics["positive_rate"] = m.ECERaw, m.PositiveRate
		nextClassificationMetrics(out.Metrics, m)
	}
	if m := c.Regression; m != nil {
		out.Metrics["mae"], out.Metrics["mape"], out.Metrics["median_allowed"] = m.MAE, m.MAPE, m.MedianAllowed
		if m.OracleMAE != 0 {
			out.Metrics["oracle_mae"], out.Metrics["mae_ratio_to_oracle"] = m.OracleMAE, m.MAERatioToOracle
			out.Metrics["overcharged_mae"], out.Metrics["overcharged_mean_relative_error"] = m.OverchargedMAE, m.OverchargedBias
		}
	}
	if r := c.Routing; r != nil {
		out.Metrics["routing_own"], out.Metrics["routing_other"], out.Metrics["routing_not_decisive"] = r.Own, r.Other, r.NotDecisive
	}
	if t := c.Tiers; t != nil {
		out.Metrics["tier_high"], out.Metrics["tier_medium"] = t.High, t.Medium
	}
	if len(c.ReliabilityPNGData) > 0 {
		out.ReliabilityDiagramUrl = "/v1/models/reliability/" + c.ReliabilityPNG
	}
	if out.Limitations == nil {
		out.Limitations = []string{}
	}
	return out
}

// nextClassificationMetrics adds the figures only second-generation cards carry (model.Oracle and
// the over-limit checks); a first-generation card has none of these keys.
func nextClassificationMetrics(out map[string]float64, m *model.ClassificationMetrics) {
	if m.Oracle == nil {
		return
	}
	out["pr_auc"], out["ece_15"] = m.PRAUC, m.ECE15
	out["auc_oracle_true"], out["auc_oracle_payload_only"] = m.Oracle.AUCTrue, m.Oracle.AUCPayload
	out["auc_ratio_to_true"], out["auc_ratio_to_payload_only"] = m.Oracle.RatioToTrue, m.Oracle.RatioToPayload
	if s := m.OverLimit; s != nil {
		out["over_limit_mean_predicted"], out["over_limit_observed_rate"] = s.MeanPredicted, s.ObservedRate
	}
	if s := m.OverLimitFreshSeed; s != nil {
		out["over_limit_fresh_seed_mean_predicted"], out["over_limit_fresh_seed_observed_rate"] = s.MeanPredicted, s.ObservedRate
	}
}
