package model

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

// Result is one classifier score.
type Result struct {
	// Probability is the calibrated probability: the score the README returns.
	Probability float64
	// Raw is the uncalibrated probability σ(Logit).
	Raw float64
	// Logit is the raw log-odds: the intercept plus every feature contribution.
	Logit    float64
	Factors  [MaxFactors]Factor
	NFactors int
	Drift    Drift
}

// The risk tiers of the README.
const (
	TierHigh   = "high"
	TierMedium = "medium"
	TierLow    = "low"
)

// The payer support levels of the README.
const (
	SupportHigh     = "high"
	SupportModerate = "moderate"
	SupportLow      = "low"
)

// Classifier is a calibrated logistic-regression model: a denial model of one profile or the
// prior-auth model. It is immutable and safe for concurrent use.
type Classifier struct {
	Version            string
	CalibrationMethod  string
	CalibrationVersion string
	// Profile is the denial distribution profile; empty for prior auth.
	Profile Profile
	// TierHigh and TierMedium are the calibrated-score cut-offs of the high and medium risk tiers.
	TierHigh, TierMedium float64
	// Routing is the auto-detection rule of a denial model: RoutingNext or empty (DetectProfile).
	Routing string

	lin      linear
	rel      *relativeFactors
	platt    Platt
	isotonic Isotonic
	support  SupportRule
	ref      reference
}

// NewClassifier builds a classifier from its artifact, checking it is complete and consistent.
func NewClassifier(version string, a *ClassifierArtifact) (*Classifier, error) {
	lin, err := newLinear(a.Linear)
	if err != nil {
		return nil, err
	}
	ref, err := newReference(a.Reference)
	if err != nil {
		return nil, err
	}
	rel, err := newRelativeFactors(&lin, a.FactorReference)
	if err != nil {
		return nil, err
	}
	c := &Classifier{
		rel:                rel,
		Version:            version,
		CalibrationMethod:  a.Calibration.Method,
		CalibrationVersion: a.Calibration.Version,
		Profile:            a.Profile,
		TierHigh:           a.Tiers.High,
		TierMedium:         a.Tiers.Medium,
		Routing:            a.Routing,
		lin:                lin,
		support:            a.SupportRule,
		ref:                ref,
	}
	switch a.Calibration.Method {
	case CalibrationPlatt:
		if a.Calibration.Platt == nil {
			return nil, errors.New("platt calibration without parameters")
		}
		c.platt = *a.Calibration.Platt
	case CalibrationIsotonic:
		iso := a.Calibration.Isotonic
		if iso == nil || len(iso.Thresholds) == 0 || len(iso.Thresholds) != len(iso.Values) ||
			!slices.IsSorted(iso.Thresholds) || !slices.IsSorted(iso.Values) {
			return nil, errors.New("isotonic calibration: thresholds and values must be non-empty, of equal length and non-decreasing")
		}
		c.isotonic = *iso
	default:
		return nil, fmt.Errorf("unknown calibration method %q", a.Calibration.Method)
	}
	if a.Routing != "" && a.Routing != RoutingNext {
		return nil, fmt.Errorf("unknown routing rule %q", a.Routing)
	}
	if a.Tiers.Medium > a.Tiers.High {
		return nil, fmt.Errorf("tier cut-offs: medium %v above high %v", a.Tiers.Medium, a.Tiers.High)
	}
	return c, nil
}

// Score scores cl into out. Signals only move the prior-auth model; the denial models have no
// weight on them. Score does not allocate, and equal inputs give identical results.
func (c *Classifier) Score(cl *claim.Claim, sig Signals, out *Result) {
	var v Vector
	t := Extract(cl, sig, &v)
	*out = Result{}
	if c.rel != nil {
		out.Logit = c.rel.predict(&c.lin, &v, &out.Factors, &out.NFactors)
	} else {
		out.Logit = c.lin.predict(&v, &out.Factors, &out.NFactors)
	}
	out.Raw = sigmoid(out.Logit)
	out.Probability = c.calibrate(out.Logit, out.Raw)
	out.Drift = c.ref.check(cl, t)
}

func (c *Classifier) calibrate(logit, raw float64) float64 {
	if c.CalibrationMethod == CalibrationPlatt {
		return sigmoid(c.platt.Slope*logit + c.platt.Intercept)
	}
	th := c.isotonic.Thresholds
	lo, hi := 0, len(th)
	for lo < hi { // first threshold ≥ raw
		mid := int(uint(lo+hi) >> 1)
		if th[mid] < raw {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return c.isotonic.Values[min(lo, len(th)-1)]
}

// Tier returns the risk tier of a calibrated probability.
func (c *Classifier) Tier(p float64) string {
	switch {
	case p >= c.TierHigh:
		return TierHigh
	case p >= c.TierMedium:
		return TierMedium
	}
	return TierLow
}

// SupportLevel says how much training evidence the model has for a payer. Low keeps the score valid
// but tells the caller manual payer-policy verification stays in the loop (README).
func (c *Classifier) SupportLevel(payerID int64) string {
	switch rows := c.ref.payerRows[payerID]; {
	case rows == 0:
		return SupportLow
	case rows >= c.support.HighMinRows:
		return SupportHigh
	case rows >= c.support.ModerateMinRows:
		return SupportModerate
	}
	return SupportLow
}

// PayerRows returns how many training rows the model had for a payer.
func (c *Classifier) PayerRows(payerID int64) int { return c.ref.payerRows[payerID] }

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// Detect is the auto-detection rule the model was published with: DetectProfileNext for RoutingNext,
// DetectProfile otherwise.
func (c *Classifier) Detect(cl *claim.Claim) (Profile, bool) {
	if c.Routing == RoutingNext {
		return DetectProfileNext(cl)
	}
	return DetectProfile(cl)
}
