package model

import "github.com/trustlayer/trustlayer/services/scoring/internal/claim"

// The artifact schema: what cmd/scoring-train writes and Load reads. One ModelFile per model version;
// a card file per model beside it. Field order is the JSON order, and every list is sorted, so the
// files are byte-for-byte reproducible.

// The model versions the README names as current: the default of each workflow until an operator
// moves it (SCORING_DENIAL_MODEL_VERSION and its siblings, see the README).
const (
	DenialVersion        = "0.3.3"
	PriorAuthVersion     = "0.2.3-prior-auth-on-file"
	ReimbursementVersion = "0.2.1"
)

// The second generation of models, served beside the versions above and callable with
// options.model_version: the over-limit feature, prices against the code's own reference with
// hinges, explanations against the reference population and tiers cut on the calibration split
// (MODELS.md). A published version never changes its answers; an improvement is a new version.
const (
	DenialVersionNext        = "0.3.4"
	PriorAuthVersionNext     = "0.2.4-prior-auth-on-file"
	ReimbursementVersionNext = "0.2.2"
)

const (
	// AppealsVersion is the deterministic appeals generator's version; it has no artifact.
	AppealsVersion = "0.1.2"
)

// The calibration methods and their versions. A version names the calibration procedure (method, fit
// split, clamps) by the month it was fixed; it changes when the procedure does, not on every retrain.
const (
	CalibrationPlatt           = "platt"
	CalibrationIsotonic        = "isotonic"
	CalibrationPlattVersion    = "platt-2026.11"
	CalibrationIsotonicVersion = "isotonic-2026.11"
)

// IntendedUse is stated on every model card; the README says output is decision support only.
const IntendedUse = "decision support only: a score informs a human reviewer and never approves, denies or pays a claim on its own"

// ModelFile is one artifact file: one version of one workflow's model.
type ModelFile struct {
	Workflow claim.Workflow `json:"workflow"`
	Version  string         `json:"version"`
	Training TrainingRun    `json:"training"`
	// Classifiers holds the denial models (one per profile, in Profiles order) or the single prior-auth model.
	Classifiers []ClassifierArtifact `json:"classifiers,omitempty"`
	Regressor   *RegressorArtifact   `json:"regressor,omitempty"`
}

// TrainingRun identifies the synthetic data a model was trained on; with the code it reproduces the
// artifact exactly.
type TrainingRun struct {
	Seed              uint64 `json:"seed"`
	RowsPerPopulation int    `json:"rows_per_population"`
}

// Samples counts the rows of each split a model saw.
type Samples struct {
	Train       int `json:"train"`
	Calibration int `json:"calibration"`
	Test        int `json:"test"`
}

// Weight is one learned coefficient.
type Weight struct {
	Feature string  `json:"feature"`
	Weight  float64 `json:"weight"`
}

// Linear is a linear predictor: log-odds for a classifier, log allowed/billed ratio for the regressor.
// Features absent from Weights have weight zero.
type Linear struct {
	Intercept float64  `json:"intercept"`
	Weights   []Weight `json:"weights"`
}

// ClassifierArtifact is one classifier: the predictor, its calibration and everything the runtime
// needs to explain and qualify a score.
type ClassifierArtifact struct {
	Profile     Profile               `json:"profile,omitempty"`
	Linear      Linear                `json:"linear"`
	Calibration Calibration           `json:"calibration"`
	Tiers       Tiers                 `json:"tiers"`
	SupportRule SupportRule           `json:"support_rule"`
	Reference   Reference             `json:"reference"`
	Samples     Samples               `json:"samples"`
	Metrics     ClassificationMetrics `json:"metrics"`
	// Routing, when present (second-generation denial models), names the auto-detection rule that
	// routes claims among the profiles' models (RoutingNext); empty is DetectProfile's.
	Routing string `json:"routing,omitempty"`
	// FactorReference, when present (second generation), holds the reference population's mean
	// contribution per factor group: top factors are then measured against it.
	FactorReference []GroupMean `json:"factor_reference,omitempty"`
}

// GroupMean is the mean contribution of one factor group over a model's training split.
type GroupMean struct {
	Group string  `json:"group"`
	Mean  float64 `json:"mean"`
}

// Calibration maps the raw probability to a calibrated one. Exactly one of Platt and Isotonic is set,
// as Method says.
type Calibration struct {
	Method   string    `json:"method"`
	Version  string    `json:"version"`
	Platt    *Platt    `json:"platt,omitempty"`
	Isotonic *Isotonic `json:"isotonic,omitempty"`
}

// Platt is Platt scaling: calibrated = σ(Slope·logit + Intercept), logit being the raw log-odds.
type Platt struct {
	Slope     float64 `json:"slope"`
	Intercept float64 `json:"intercept"`
}

// Isotonic is a non-decreasing step function fitted by pool adjacent violators: a raw probability r
// maps to Values[i] for the first i with r ≤ Thresholds[i], and to the last value above them all.
type Isotonic struct {
	Thresholds []float64 `json:"thresholds"`
	Values     []float64 `json:"values"`
}

// Tiers are the calibrated-score cut-offs of the risk tiers, so high is the top 10 % and medium the next
// 10 % (README, risk_tier): the 90th and 80th percentiles over the held-out population (first
// generation), or the scores nearest those shares on the calibration split (Split, second generation).
type Tiers struct {
	High   float64 `json:"high"`
	Medium float64 `json:"medium"`
	// Split names the split the percentiles were taken on when it is not the held-out test split
	// (the first generation's): "calibration" for the second generation.
	Split string `json:"split,omitempty"`
	// HighShareTest and MediumShareTest (second generation) are the shares of the held-out test split
	// that fall in the high and medium tiers: out of sample, they differ from 10 % by the sampling
	// noise and, for an isotonic calibration, by the width of the step a cut-off falls on.
	HighShareTest   float64 `json:"high_share_test,omitempty"`
	MediumShareTest float64 `json:"medium_share_test,omitempty"`
}

// SupportRule maps a payer's training rows to a support level: at least HighMinRows is high, at least
// ModerateMinRows moderate, anything less (or a payer never seen) low.
type SupportRule struct {
	HighMinRows     int `json:"high_min_rows"`
	ModerateMinRows int `json:"moderate_min_rows"`
}

// Reference describes the training population so the runtime can flag inputs outside it.
type Reference struct {
	Payers          []PayerRows   `json:"payers"`
	Families        []FamilyRange `json:"families"`
	PlacesOfService []string      `json:"places_of_service"`
	// AmountBasis is "code" when the family amount ranges are of the code-referenced amount (second
	// generation, Traits.CodeAmount); empty for the family-referenced one (Traits.Amount).
	AmountBasis string `json:"amount_basis,omitempty"`
}

// AmountBasisCode is Reference.AmountBasis of the second generation.
const AmountBasisCode = "code"

// PayerRows is how many training rows a payer id had.
type PayerRows struct {
	PayerID int64 `json:"payer_id"`
	Rows    int   `json:"rows"`
}

// FamilyRange is the central range of the numeric features of one code family in training, between
// the 0.5th and 99.5th percentiles (see MODELS.md, drift).
type FamilyRange struct {
	Family     string  `json:"family"`
	Rows       int     `json:"rows"`
	AmountLow  float64 `json:"amount_low"`
	AmountHigh float64 `json:"amount_high"`
	UnitsLow   float64 `json:"units_low"`
	UnitsHigh  float64 `json:"units_high"`
}

// ClassificationMetrics are measured on the held-out test split, after calibration unless named raw.
type ClassificationMetrics struct {
	AUC          float64 `json:"auc"`
	Brier        float64 `json:"brier"`
	ECE          float64 `json:"ece"`
	ECERaw       float64 `json:"ece_raw"`
	PositiveRate float64 `json:"positive_rate"`
	// Reliability is the 10-bin reliability table behind ECE and the reliability diagram.
	Reliability []ReliabilityBin `json:"reliability"`

	// The second generation's cards add the following.

	// PRAUC is the area under the precision-recall curve (average precision).
	PRAUC float64 `json:"pr_auc,omitempty"`
	// ECE15 is the expected calibration error over 15 equal-width bins.
	ECE15 float64 `json:"ece_15,omitempty"`
	// Oracle compares the model with the generator's own probabilities.
	Oracle *Oracle `json:"oracle,omitempty"`
	// ReliabilityDeciles is the reliability table by decile of the calibrated score (equal counts).
	ReliabilityDeciles []ReliabilityBin `json:"reliability_deciles,omitempty"`
	// OverLimit is calibration on the claims with units above the medically-unlikely-edit limit;
	// OverLimitFreshSeed the same on a larger population drawn with another seed (denial only), where
	// the observed rate rests on hundreds of claims instead of a few dozen.
	OverLimit          *Subgroup `json:"over_limit,omitempty"`
	OverLimitFreshSeed *Subgroup `json:"over_limit_fresh_seed,omitempty"`
}

// Oracle is the AUC the generator's probabilities reach on the same test claims, and the model's AUC
// as a ratio to it. True is the probability the label was drawn with (it includes the hidden provider
// effect and whether prior auth was on file); payload-only averages those out, so it is the best any
// model reading the claim payload can do.
type Oracle struct {
	AUCTrue          float64 `json:"auc_true"`
	AUCPayload       float64 `json:"auc_payload_only"`
	RatioToTrue      float64 `json:"auc_ratio_to_true"`
	RatioToPayload   float64 `json:"auc_ratio_to_payload_only"`
	ECEPayloadOracle float64 `json:"ece_payload_only_oracle"`
}

// Subgroup is the calibration of a model on part of the test split.
type Subgroup struct {
	// Seed and Rows name the fresh population the subgroup was drawn from; zero for the test split.
	Seed          uint64  `json:"seed,omitempty"`
	Rows          int     `json:"rows_per_population,omitempty"`
	Count         int     `json:"count"`
	MeanPredicted float64 `json:"mean_predicted"`
	ObservedRate  float64 `json:"observed_rate"`
	// MeanTrue is the mean of the generator's payload-only probability on the same claims: the rate the
	// observed one estimates, without its sampling noise.
	MeanTrue float64 `json:"mean_payload_only_probability"`
}

// ReliabilityBin is one equal-width bin of calibrated probability.
type ReliabilityBin struct {
	Lower         float64 `json:"lower"`
	Upper         float64 `json:"upper"`
	Count         int     `json:"count"`
	MeanPredicted float64 `json:"mean_predicted"`
	ObservedRate  float64 `json:"observed_rate"`
}

// RegressorArtifact is the reimbursement model: a linear predictor of the log allowed/billed ratio.
type RegressorArtifact struct {
	Linear    Linear            `json:"linear"`
	Reference Reference         `json:"reference"`
	Samples   Samples           `json:"samples"`
	Metrics   RegressionMetrics `json:"metrics"`
	// FactorReference: as for ClassifierArtifact (second generation).
	FactorReference []GroupMean `json:"factor_reference,omitempty"`
}

// RegressionMetrics are measured on the held-out test split, in currency units of allowed amount.
type RegressionMetrics struct {
	MAE           float64 `json:"mae"`
	MAPE          float64 `json:"mape"`
	MedianAllowed float64 `json:"median_allowed"`
	// OracleMAE (second generation) is the MAE of the generator's conditional median (billed ×
	// exp(min(mean log ratio, 0))) on the same claims, and MAERatioToOracle the model's MAE over it.
	OracleMAE        float64 `json:"oracle_mae,omitempty"`
	MAERatioToOracle float64 `json:"mae_ratio_to_oracle,omitempty"`
	// Overcharged is the MAE on the claims at least one log unit above the population's median price.
	OverchargedCount int     `json:"overcharged_count,omitempty"`
	OverchargedMAE   float64 `json:"overcharged_mae,omitempty"`
	OverchargedBias  float64 `json:"overcharged_mean_relative_error,omitempty"`
}

// RoutingMetrics measure DetectProfile on one population's held-out claims.
type RoutingMetrics struct {
	// Rule is the detection rule measured when it is not DetectProfile (RoutingNext).
	Rule string `json:"rule,omitempty"`
	Rows int    `json:"rows"`
	// Own, Other and NotDecisive are the shares detected as the population's own profile, as another
	// profile, and not decided (the runtime then falls back to its default profile).
	Own         float64 `json:"own"`
	Other       float64 `json:"other"`
	NotDecisive float64 `json:"not_decisive"`
}

// Card is a model card: what a model is for, what it was trained on and how well it does.
type Card struct {
	Workflow           claim.Workflow         `json:"workflow"`
	Version            string                 `json:"version"`
	Profile            Profile                `json:"profile,omitempty"`
	CalibrationMethod  string                 `json:"calibration_method,omitempty"`
	CalibrationVersion string                 `json:"calibration_version,omitempty"`
	IntendedUse        string                 `json:"intended_use"`
	Training           TrainingRun            `json:"training"`
	Data               string                 `json:"data"`
	Samples            Samples                `json:"samples"`
	Classification     *ClassificationMetrics `json:"classification,omitempty"`
	Regression         *RegressionMetrics     `json:"regression,omitempty"`
	Tiers              *Tiers                 `json:"tiers,omitempty"`
	Routing            *RoutingMetrics        `json:"routing,omitempty"`
	Limitations        []string               `json:"limitations"`
	// ReliabilityPNG names the reliability diagram in the artifacts; ReliabilityPNGData is its content,
	// filled in by Load.
	ReliabilityPNG     string `json:"reliability_png,omitempty"`
	ReliabilityPNGData []byte `json:"-"`
}
