// Package decision turns a validated claim into a scoring decision: it picks the model version (pins
// and fallback), routes denial claims to a distribution profile, applies the operating threshold,
// the risk tier and the confidence downgrades, and adds prior-authorization payer support and policy
// signals. Its output is transport-free; package api renders it.
package decision

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/policysignal"
)

// ErrPinUnavailable is a pinned model version that is not served while allow_fallback is false
// (409); its text names the version. An option outside its enumeration is fault.ErrInvalid (422).
var ErrPinUnavailable = errors.New("pinned model version unavailable")

// Operating points of the denial model.
const (
	HighRecall    = "high_recall"
	Balanced      = "balanced"
	HighPrecision = "high_precision"
)

// OperatingPoints lists the operating points in threshold order.
var OperatingPoints = []string{HighRecall, Balanced, HighPrecision}

// Thresholds is the README's operating-threshold table, fixed by profile.
var Thresholds = map[model.Profile][3]float64{
	model.SyntheticV1:    {0.21, 0.25, 0.31},
	model.CMSV1:          {0.24, 0.28, 0.34},
	model.CommercialBeta: {0.22, 0.26, 0.32},
}

// Profiles lists the denial distribution profiles.
var Profiles = []model.Profile{model.SyntheticV1, model.CMSV1, model.CommercialBeta}

// DefaultProfile is the runtime default of the routing rule.
const DefaultProfile = model.CommercialBeta

// Routing sources of a denial decision.
const (
	RoutedExplicit   = "explicit"
	RoutedDataSource = "data_source_hint"
	RoutedDetected   = "auto_detected"
	RoutedDefault    = "default"
)

// Options are the caller's choices (README "Routes").
type Options struct {
	ModelVersion        string
	AllowFallback       bool
	OperatingPoint      string
	DistributionProfile string
}

// Config is the deployment's part of the decision.
type Config struct {
	// DenialThresholdOverride replaces the table's threshold for every profile and operating point
	// when set (0 < value < 1): the deployment-level explicit override of the README.
	DenialThresholdOverride float64
	// DefaultVersions are the versions that answer when a call pins none; an empty field keeps the
	// version the README names (model.DenialVersion and its siblings). Operators move them with
	// SCORING_DENIAL_MODEL_VERSION, SCORING_PRIOR_AUTH_MODEL_VERSION and
	// SCORING_REIMBURSEMENT_MODEL_VERSION.
	DefaultVersions Versions
}

// Versions names one model version per workflow.
type Versions struct {
	Denial, PriorAuth, Reimbursement string
}

// CheckVersions reports the first version of v that models does not serve (a denial version must
// have all three profiles); empty fields are not checked.
func CheckVersions(models *model.Set, v Versions) error {
	if v.Denial != "" {
		for _, p := range model.Profiles {
			if _, ok := models.Denial(v.Denial, p); !ok {
				return fmt.Errorf("denial model version %q is not served for profile %s", v.Denial, p)
			}
		}
	}
	if _, ok := models.PriorAuth(v.PriorAuth); v.PriorAuth != "" && !ok {
		return fmt.Errorf("prior-auth model version %q is not served", v.PriorAuth)
	}
	if _, ok := models.Reimbursement(v.Reimbursement); v.Reimbursement != "" && !ok {
		return fmt.Errorf("reimbursement model version %q is not served", v.Reimbursement)
	}
	return nil
}

// Current returns the version of w that answers when a call pins none.
func (e *Engine) Current(w claim.Workflow) string {
	v := e.cfg.DefaultVersions
	switch w {
	case claim.Denial:
		return cmp.Or(v.Denial, model.DenialVersion)
	case claim.PriorAuth:
		return cmp.Or(v.PriorAuth, model.PriorAuthVersion)
	case claim.Reimbursement:
		return cmp.Or(v.Reimbursement, model.ReimbursementVersion)
	}
	return ""
}

// Signals finds the published policy changes that match a claim.
type Signals interface {
	Match(c *claim.Claim) ([]policysignal.Match, model.Signals)
}

// Engine makes decisions. It is safe for concurrent use.
type Engine struct {
	models  *model.Set
	signals Signals
	cfg     Config
}

// New returns an Engine.
func New(models *model.Set, signals Signals, cfg Config) *Engine {
	return &Engine{models: models, signals: signals, cfg: cfg}
}

// Decision is the outcome of scoring one claim.
type Decision struct {
	Workflow     claim.Workflow
	Score        float64
	RiskLevel    string
	Confidence   float64
	ModelVersion string
	// PinnedVersion is the version the caller asked for when it was unavailable and the current
	// version answered instead (allow_fallback); empty otherwise.
	PinnedVersion string
	Factors       []Factor
	Drift         []string

	Denial        *Denial
	PriorAuth     *PriorAuth
	Reimbursement *Reimbursement
}

// Denial is details.denial.
type Denial struct {
	Probability        float64
	OperatingPoint     string
	Profile            model.Profile
	RoutingSource      string
	RiskTier           string
	CalibrationMethod  string
	CalibrationVersion string
	Threshold          float64
	ThresholdSource    string
	PredictedDenial    bool
}

// PriorAuth is details.prior_auth.
type PriorAuth struct {
	Probability        float64
	CalibrationMethod  string
	CalibrationVersion string
	SupportLevel       string
	Signals            []policysignal.Match
}

// Reimbursement is details.reimbursement.
type Reimbursement struct {
	ExpectedAllowed float64
	Billed          float64
	Ratio           float64
	Units           float64
}

// Confidence rules (documented in the README): a base, then multiplicative downgrades.
const (
	baseConfidence       = 0.9
	moderateSupportScale = 0.85
	lowSupportScale      = 0.6
	driftScale           = 0.8
	defaultRouteScale    = 0.9
	minConfidence        = 0.05
)

// Decide scores c for workflow w.
func (e *Engine) Decide(w claim.Workflow, c *claim.Claim, o Options) (Decision, error) {
	profile, err := o.check()
	if err != nil {
		return Decision{}, err
	}
	switch w {
	case claim.Denial:
		return e.denial(c, o, profile)
	case claim.PriorAuth:
		return e.priorAuth(c, o)
	case claim.Reimbursement:
		return e.reimbursement(c, o)
	}
	return Decision{}, fmt.Errorf("%w: unknown workflow %q", fault.ErrInvalid, w)
}

// check refuses option values outside their sets whatever the workflow, and returns the explicit
// distribution profile, parsed (empty when the caller named none): operating_point and
// distribution_profile steer only the denial model, and the other workflows ignore them, but a
// misspelt value is a caller's mistake to report, not to ignore.
func (o Options) check() (model.Profile, error) {
	if o.OperatingPoint != "" && !slices.Contains(OperatingPoints, o.OperatingPoint) {
		return "", fmt.Errorf("%w: options.operating_point must be one of %s (got %q)", fault.ErrInvalid, strings.Join(OperatingPoints, ", "), o.OperatingPoint)
	}
	if o.DistributionProfile == "" {
		return "", nil
	}
	p, ok := model.ParseProfile(o.DistributionProfile)
	if !ok {
		return "", unknownProfile(o.DistributionProfile)
	}
	return p, nil
}

func unknownProfile(got string) error {
	names := make([]string, len(model.Profiles))
	for i, p := range model.Profiles {
		names[i] = string(p)
	}
	return fmt.Errorf("%w: options.distribution_profile must be one of %s (got %q)", fault.ErrInvalid, strings.Join(names, ", "), got)
}

// pick resolves options.model_version against the current version: a served pin is used, an
// unavailable pin falls back unless allow_fallback is false.
func pick(w claim.Workflow, current string, o Options, served func(string) bool) (version, unavailable string, err error) {
	if o.ModelVersion == "" || o.ModelVersion == current {
		return current, "", nil
	}
	if served(o.ModelVersion) {
		return o.ModelVersion, "", nil
	}
	if !o.AllowFallback {
		return "", "", fmt.Errorf("%w: model_version %s is not available for %s (available: %s)", ErrPinUnavailable, o.ModelVersion, w, current)
	}
	return current, o.ModelVersion, nil
}

// denial scores a denial claim; explicit is the caller's distribution profile, if any (check).
func (e *Engine) denial(c *claim.Claim, o Options, explicit model.Profile) (Decision, error) {
	op := o.OperatingPoint
	if op == "" {
		op = Balanced
	}
	opIndex := slices.Index(OperatingPoints, op) // a known one: Decide checked it
	profile, source := Route(c, explicit)
	version, unavailable, err := pick(claim.Denial, e.Current(claim.Denial), o, func(v string) bool { _, ok := e.models.Denial(v, profile); return ok })
	if err != nil {
		return Decision{}, err
	}
	m, _ := e.models.Denial(version, profile)
	if source == RoutedDetected || source == RoutedDefault {
		// A model detects with the rule it was published with (the second generation's is
		// model.DetectProfileNext), so a published version routes as it always did.
		if p, ok := m.Detect(c); ok {
			if pm, ok := e.models.Denial(version, p); ok {
				profile, source, m = p, RoutedDetected, pm
			}
		}
	}
	var r model.Result
	m.Score(c, model.Signals{}, &r)

	threshold, thresholdSource := Thresholds[profile][opIndex], "profile_table"
	if t := e.cfg.DenialThresholdOverride; t > 0 && t < 1 {
		threshold, thresholdSource = t, "deployment_override"
	}
	p := round(r.Probability)
	conf := baseConfidence
	drift := r.Drift.Names()
	conf *= math.Pow(driftScale, float64(len(drift)))
	if source == RoutedDefault {
		conf *= defaultRouteScale
	}
	return Decision{
		Workflow: claim.Denial, Score: p, RiskLevel: classifierRisk(p, threshold), Confidence: confidence(conf),
		ModelVersion: version, PinnedVersion: unavailable, Factors: factors(r.Factors[:r.NFactors], raisesRisk), Drift: drift,
		Denial: &Denial{
			Probability: p, OperatingPoint: op, Profile: profile, RoutingSource: source, RiskTier: m.Tier(r.Probability),
			CalibrationMethod: m.CalibrationMethod, CalibrationVersion: m.CalibrationVersion,
			Threshold: threshold, ThresholdSource: thresholdSource, PredictedDenial: r.Probability >= threshold,
		},
	}, nil
}

// Route applies the profile precedence of README "Denial routing": an explicit profile (a parsed
// one, or empty), then the payload's data_source hint, then auto-detection, then the default.
func Route(c *claim.Claim, explicit model.Profile) (model.Profile, string) {
	if explicit != "" {
		return explicit, RoutedExplicit
	}
	if p, ok := profileFromHint(c.DataSource); ok {
		return p, RoutedDataSource
	}
	if p, ok := model.DetectProfile(c); ok {
		return p, RoutedDetected
	}
	return DefaultProfile, RoutedDefault
}

// profileFromHint maps a data_source hint to a profile: a profile name itself, or a word that names the
// population (government programmes route to cms_v1). Other hints are ignored, not errors: the field
// is a hint.
func profileFromHint(hint string) (model.Profile, bool) {
	h := strings.ToLower(strings.TrimSpace(hint))
	if p, ok := model.ParseProfile(h); ok {
		return p, true
	}
	switch {
	case h == "":
		return "", false
	case strings.Contains(h, "cms"), strings.Contains(h, "medicare"), strings.Contains(h, "medicaid"):
		return model.CMSV1, true
	case strings.Contains(h, "synthetic"):
		return model.SyntheticV1, true
	case strings.Contains(h, "commercial"):
		return model.CommercialBeta, true
	}
	return "", false
}

func (e *Engine) priorAuth(c *claim.Claim, o Options) (Decision, error) {
	version, unavailable, err := pick(claim.PriorAuth, e.Current(claim.PriorAuth), o, func(v string) bool { _, ok := e.models.PriorAuth(v); return ok })
	if err != nil {
		return Decision{}, err
	}
	m, _ := e.models.PriorAuth(version)
	var matches []policysignal.Match
	var features model.Signals
	if e.signals != nil {
		matches, features = e.signals.Match(c)
	}
	var r model.Result
	m.Score(c, features, &r)
	p := round(r.Probability)
	support := m.SupportLevel(c.PayerID)
	conf := baseConfidence
	switch support {
	case "low":
		conf *= lowSupportScale
	case "moderate":
		conf *= moderateSupportScale
	}
	drift := r.Drift.Names()
	conf *= math.Pow(driftScale, float64(len(drift)))
	return Decision{
		Workflow: claim.PriorAuth, Score: p, RiskLevel: levels(p, 0.5, 0.2), Confidence: confidence(conf),
		ModelVersion: version, PinnedVersion: unavailable, Factors: factors(r.Factors[:r.NFactors], raisesRisk), Drift: drift,
		PriorAuth: &PriorAuth{
			Probability: p, CalibrationMethod: m.CalibrationMethod, CalibrationVersion: m.CalibrationVersion,
			SupportLevel: support, Signals: matches,
		},
	}, nil
}

func (e *Engine) reimbursement(c *claim.Claim, o Options) (Decision, error) {
	version, unavailable, err := pick(claim.Reimbursement, e.Current(claim.Reimbursement), o, func(v string) bool { _, ok := e.models.Reimbursement(v); return ok })
	if err != nil {
		return Decision{}, err
	}
	m, _ := e.models.Reimbursement(version)
	var est model.Estimate
	m.Estimate(c, &est)
	score := round(1 - est.Ratio)
	drift := est.Drift.Names()
	conf := baseConfidence * math.Pow(driftScale, float64(len(drift)))
	return Decision{
		Workflow: claim.Reimbursement, Score: score, RiskLevel: levels(score, 0.5, 0.2), Confidence: confidence(conf),
		ModelVersion: version, PinnedVersion: unavailable, Factors: factors(est.Factors[:est.NFactors], lowersRisk), Drift: drift,
		Reimbursement: &Reimbursement{
			ExpectedAllowed: math.Round(est.ExpectedAllowed*100) / 100, Billed: c.BilledAmount,
			Ratio: round(est.Ratio), Units: c.Units,
		},
	}, nil
}

// classifierRisk is the denial risk_level: high at or above the operating threshold, medium from
// half of it, low below.
func classifierRisk(p, threshold float64) string { return levels(p, threshold, threshold/2) }

func levels(v, high, medium float64) string {
	switch {
	case v >= high:
		return "high"
	case v >= medium:
		return "medium"
	}
	return "low"
}

// round keeps six decimals: enough for a probability, and stable text in JSON.
func round(v float64) float64 { return math.Round(v*1e6) / 1e6 }

func confidence(v float64) float64 { return math.Round(math.Max(v, minConfidence)*1e4) / 1e4 }

// Factor is one of explanation.top_factors. Contribution is in the model's own units: log-odds of a
// denial or of a prior-auth requirement, log allowed/billed ratio for reimbursement.
type Factor struct {
	Name         string
	Contribution float64
	Direction    string // increases_risk or decreases_risk
}

// A model's output either is the risk (the probability of a denial, of prior auth being required)
// or moves against it: the reimbursement score is 1 - ratio, so a factor that raises the expected
// ratio lowers the risk.
const (
	raisesRisk = 1.0
	lowersRisk = -1.0
)

func factors(in []model.Factor, sense float64) []Factor {
	out := make([]Factor, len(in))
	for i, f := range in {
		dir := "increases_risk"
		if f.Contribution*sense < 0 {
			dir = "decreases_risk"
		}
		out[i] = Factor{Name: f.Name, Contribution: round(f.Contribution), Direction: dir}
	}
	return out
}
