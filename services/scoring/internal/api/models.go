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
	}
	if m := c.Regression; m != nil {
		out.Metrics["mae"], out.Metrics["mape"], out.Metrics["median_allowed"] = m.MAE, m.MAPE, m.MedianAllowed
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
