package main

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
)

// baseline is the in-repo yardstick of the performance targets (README "Performance"): a plain net/http + encoding/json handler doing the
// same model work as POST /v1/score (validation, routing, the model, the response fields) with no
// gateway, no gRPC, no authentication, no limits, no metering and no tracing.
type baseline struct{ engine *decision.Engine }

type baselineRequest struct {
	Workflow string         `json:"workflow"`
	Payload  map[string]any `json:"payload"`
	Options  struct {
		ModelVersion        string `json:"model_version"`
		OperatingPoint      string `json:"operating_point"`
		DistributionProfile string `json:"distribution_profile"`
	} `json:"options"`
}

type baselineFactor struct {
	Feature      string  `json:"feature"`
	Contribution float64 `json:"contribution"`
	Direction    string  `json:"direction"`
}

type baselineResponse struct {
	Workflow     string  `json:"workflow"`
	Score        float64 `json:"score"`
	RiskLevel    string  `json:"risk_level"`
	Confidence   float64 `json:"confidence"`
	ModelVersion string  `json:"model_version"`
	Explanation  struct {
		TopFactors []baselineFactor `json:"top_factors"`
	} `json:"explanation"`
	Details  map[string]any `json:"details"`
	ScoredAt time.Time      `json:"scored_at"`
}

func (b baseline) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req baselineRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"detail":"bad json"}`, http.StatusUnprocessableEntity)
		return
	}
	wf, ok := claim.ParseWorkflow(req.Workflow)
	if !ok {
		http.Error(w, `{"detail":"unknown workflow"}`, http.StatusUnprocessableEntity)
		return
	}
	c, errs := claim.Check(wf, claim.Map(req.Payload))
	if len(errs) > 0 {
		http.Error(w, `{"detail":"invalid"}`, http.StatusUnprocessableEntity)
		return
	}
	d, err := b.engine.Decide(wf, &c, decision.Options{ModelVersion: req.Options.ModelVersion, AllowFallback: true,
		OperatingPoint: req.Options.OperatingPoint, DistributionProfile: req.Options.DistributionProfile})
	if err != nil {
		http.Error(w, `{"detail":"decision"}`, http.StatusUnprocessableEntity)
		return
	}
	resp := baselineResponse{Workflow: string(d.Workflow), Score: d.Score, RiskLevel: d.RiskLevel, Confidence: d.Confidence,
		ModelVersion: d.ModelVersion, ScoredAt: time.Now().UTC()}
	for _, f := range d.Factors {
		resp.Explanation.TopFactors = append(resp.Explanation.TopFactors, baselineFactor{f.Name, f.Contribution, f.Direction})
	}
	if x := d.Denial; x != nil {
		resp.Details = map[string]any{"workflow": string(d.Workflow), "denial": map[string]any{
			"denial_probability": x.Probability, "operating_point": x.OperatingPoint, "distribution_profile": x.Profile,
			"routing_source": x.RoutingSource, "risk_tier": x.RiskTier, "calibration_method": x.CalibrationMethod,
			"calibration_version": x.CalibrationVersion, "threshold": x.Threshold, "threshold_source": x.ThresholdSource,
			"predicted_denial": x.PredictedDenial, "drift_flags": d.Drift,
		}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("x-request-id", "baseline")
	_ = json.NewEncoder(w).Encode(resp)
}
