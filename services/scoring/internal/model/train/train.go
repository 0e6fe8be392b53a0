// Package train fits the scoring models on the synthetic populations of package synth and renders
// their artifacts: one model file per version, a model card (JSON and markdown) per model, a
// reliability diagram per classifier and an index. cmd/scoring-train writes them; the runtime
// (package model) embeds them. Training is deterministic, so the same Config gives the same bytes.
package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model/synth"
)

// DefaultSeed and DefaultRows are the defaults of cmd/scoring-train, which produced the committed
// artifacts. 50,000 claims per population train every model in about two seconds on two cores.
const (
	DefaultSeed uint64 = 20261101
	DefaultRows int    = 50_000
)

// minRows keeps every split large enough to hold each code family and payer bucket.
const minRows = 2_000

// supportRule maps a payer's training rows to a support level. At a 30 % prior-auth rate the
// standard error of a payer's own rate is about 0.009 with 2,500 rows and 0.015 with 1,000; below
// that the payer's weight is mostly its bucket's.
var supportRule = model.SupportRule{HighMinRows: 2_500, ModerateMinRows: 1_000}

// Config selects the synthetic data.
type Config struct {
	Seed              uint64
	RowsPerPopulation int
}

// File is one artifact.
type File struct {
	Name string
	Data []byte
}

// Output is everything a run produces.
type Output struct {
	// Files are sorted by name.
	Files []File
	Cards []model.Card
}

// splits are a population's train (60 %), calibration (20 %) and held-out test (20 %) claims, in
// generation order, which is random.
type splits struct {
	train, calibration, test []synth.Record
}

func split(recs []synth.Record) splits {
	a, b := len(recs)*6/10, len(recs)*8/10
	return splits{train: recs[:a], calibration: recs[a:b], test: recs[b:]}
}

// Run trains every model and renders the artifacts.
func Run(cfg Config) (*Output, error) {
	if cfg.RowsPerPopulation < minRows {
		return nil, fmt.Errorf("train: %d rows per population, want at least %d", cfg.RowsPerPopulation, minRows)
	}
	run := model.TrainingRun{Seed: cfg.Seed, RowsPerPopulation: cfg.RowsPerPopulation}
	var pooled splits
	populations := make(map[model.Profile]splits, len(model.Profiles))
	for _, p := range model.Profiles {
		recs, err := synth.Generate(p, cfg.RowsPerPopulation, cfg.Seed)
		if err != nil {
			return nil, err
		}
		s := split(recs)
		populations[p] = s
		pooled.train = append(pooled.train, s.train...)
		pooled.calibration = append(pooled.calibration, s.calibration...)
		pooled.test = append(pooled.test, s.test...)
	}

	out := &Output{}
	for _, g := range generations {
		if err := out.addGeneration(g, populations, pooled, run); err != nil {
			return nil, err
		}
	}
	out.addIndex(run)
	slices.SortFunc(out.Files, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// generation is one set of model versions trained together. A published generation is frozen: its
// features, fits and cards never change, so its artifacts stay byte for byte what was published
// (TestPublishedVersionsAreFrozen); an improvement is a new generation with new versions.
type generation struct {
	denial, priorAuth, reimbursement string
	// next marks the second generation: over-limit and code-referenced price features, explanations
	// against the reference population, tiers cut on the calibration split and oracle metrics.
	next bool
}

// generations are trained in order; the first is the versions the README names as current.
var generations = []generation{
	{denial: model.DenialVersion, priorAuth: model.PriorAuthVersion, reimbursement: model.ReimbursementVersion},
	{denial: model.DenialVersionNext, priorAuth: model.PriorAuthVersionNext, reimbursement: model.ReimbursementVersionNext, next: true},
}

// exclude returns the feature prefixes a generation's model does not use, besides the workflow's own.
func (g generation) exclude(own ...string) []string {
	if g.next {
		return append(own, model.PrefixFamilyAmount)
	}
	return append(own, model.PrefixLimit, model.PrefixPrice)
}

func (o *Output) addGeneration(g generation, populations map[model.Profile]splits, pooled splits, run model.TrainingRun) error {
	denial := model.ModelFile{Workflow: claim.Denial, Version: g.denial, Training: run}
	for _, p := range model.Profiles {
		spec := classifierSpec{
			workflow: claim.Denial, version: g.denial, profile: p, next: g.next,
			label:       func(r *synth.Record) bool { return r.Denied },
			exclude:     g.exclude(model.PrefixPolicy),
			calibration: model.CalibrationPlatt,
			data: "Synthetic claims from package synth: the " + synth.Description(p) +
				". Label: denied. Split 60/20/20 into train, Platt calibration and held-out test.",
		}
		if g.next {
			spec.oracle = func(r *synth.Record) (float64, float64) { return r.DenialProbability, r.DenialPayloadProbability }
			spec.data += nextData
			spec.freshSeed = run.Seed + 1
			spec.routing = model.RoutingNext
			var err error
			spec.freshRows = freshScale * run.RowsPerPopulation
			if spec.fresh, err = freshOverLimit(p, spec.freshSeed, spec.freshRows); err != nil {
				return err
			}
		}
		if err := o.addClassifier(&denial, spec, populations[p], run); err != nil {
			return err
		}
	}
	if err := o.addJSON(modelName(claim.Denial, g.denial)+".json", denial); err != nil {
		return err
	}

	priorAuth := model.ModelFile{Workflow: claim.PriorAuth, Version: g.priorAuth, Training: run}
	spec := classifierSpec{
		workflow: claim.PriorAuth, version: g.priorAuth, next: g.next,
		label:       func(r *synth.Record) bool { return r.PriorAuthRequired },
		exclude:     g.exclude(),
		calibration: model.CalibrationIsotonic,
		data: "Synthetic claims from package synth, the three populations pooled (synthetic_v1, cms_v1, commercial_beta; " +
			"all 30 payers). Label: prior_auth_required; features include matching published policy changes " +
			"(prior_auth_added, prior_auth_removed). Split 60/20/20 into train, isotonic calibration and held-out test.",
	}
	if g.next {
		spec.oracle = func(r *synth.Record) (float64, float64) { return r.PriorAuthProbability, r.PriorAuthProbability }
		spec.data += nextData
	}
	if err := o.addClassifier(&priorAuth, spec, pooled, run); err != nil {
		return err
	}
	if err := o.addJSON(modelName(claim.PriorAuth, g.priorAuth)+".json", priorAuth); err != nil {
		return err
	}
	return o.addRegressor(g, pooled, run)
}

// nextData ends the data statement of a second-generation card.
const nextData = " Second generation: units above the medically-unlikely-edit limit as a feature, per-unit price against the " +
	"code's own reference with hinges at each population's median price, top factors against the mean claim of the " +
	"training split, risk tiers cut on the calibration split."

// classifierSpec says what one classifier learns from which features and how it is calibrated.
type classifierSpec struct {
	workflow    claim.Workflow
	version     string
	profile     model.Profile
	label       func(*synth.Record) bool
	exclude     []string // feature name prefixes the model does not use
	calibration string
	data        string
	// next is the second generation (see generation); oracle returns a record's true and payload-only
	// probabilities of the label.
	next   bool
	oracle func(*synth.Record) (truth, payload float64)
	// routing is the denial model's auto-detection rule (ClassifierArtifact.Routing).
	routing string
	// fresh are the over-limit claims of a fresh population drawn with freshSeed (denial only).
	fresh     []synth.Record
	freshSeed uint64
	freshRows int
}

// addClassifier fits, calibrates and evaluates one classifier, appends it to mf and adds its card
// and reliability diagram. Calibration and evaluation score claims with model.Classifier itself, so
// the metrics are those of the artifact as the runtime loads it.
func (o *Output) addClassifier(mf *model.ModelFile, spec classifierSpec, s splits, run model.TrainingRun) error {
	d, ref := newDesign(s.train, spec.exclude, spec.next, func(r *synth.Record) float64 { return indicator(spec.label(r)) })
	if spec.next {
		d.freeColumns()
	}
	intercept, w, err := fitLogistic(&d)
	if err != nil {
		return fmt.Errorf("%s: %w", modelTitle(spec.workflow, spec.version, spec.profile), err)
	}
	art := model.ClassifierArtifact{
		Profile: spec.profile,
		Routing: spec.routing,
		Linear:  linearArtifact(&d, intercept, w),
		// The identity, until the calibration split has been scored.
		Calibration: model.Calibration{Method: model.CalibrationPlatt, Platt: &model.Platt{Slope: 1}},
		SupportRule: supportRule,
		Reference:   ref,
		Samples:     model.Samples{Train: len(s.train), Calibration: len(s.calibration), Test: len(s.test)},
	}
	c, err := model.NewClassifier(spec.version, &art)
	if err != nil {
		return err
	}
	cal := scoreClassifier(c, s.calibration, spec.label)
	switch spec.calibration {
	case model.CalibrationPlatt:
		platt, err := fitPlatt(cal.logit, cal.y)
		if err != nil {
			return fmt.Errorf("%s: %w", modelTitle(spec.workflow, spec.version, spec.profile), err)
		}
		art.Calibration = model.Calibration{Method: model.CalibrationPlatt, Version: model.CalibrationPlattVersion, Platt: &platt}
	case model.CalibrationIsotonic:
		iso := fitIsotonic(cal.raw, cal.y)
		art.Calibration = model.Calibration{Method: model.CalibrationIsotonic, Version: model.CalibrationIsotonicVersion, Isotonic: &iso}
	default:
		return fmt.Errorf("unknown calibration %q", spec.calibration)
	}
	if c, err = model.NewClassifier(spec.version, &art); err != nil {
		return err
	}
	test := scoreClassifier(c, s.test, spec.label)
	bins, ece := reliability(test.prob, test.y)
	rawBins, eceRaw := reliability(test.raw, test.y)
	art.Metrics = model.ClassificationMetrics{
		AUC:          round(auc(test.prob, test.y)),
		Brier:        round(brier(test.prob, test.y)),
		ECE:          round(ece),
		ECERaw:       round(eceRaw),
		PositiveRate: round(mean(test.y)),
		Reliability:  bins,
	}
	art.Tiers = tiers(test.prob)
	if spec.next {
		// The calibration split scored again, now calibrated: tiers cut what Tier is given.
		art.Tiers = nearestTiers(scoreClassifier(c, s.calibration, spec.label).prob)
		art.Tiers.Split = "calibration"
		tierShares(&art.Tiers, test.prob)
		if art.FactorReference, err = factorReference(art.Linear, s.train); err != nil {
			return err
		}
		nextMetrics(&art.Metrics, test, s.test, spec.oracle)
		if spec.fresh != nil {
			art.Metrics.OverLimitFreshSeed = freshMetrics(c, spec.freshSeed, spec.freshRows, spec.fresh)
		}
	}
	mf.Classifiers = append(mf.Classifiers, art)

	base := cardName(spec.workflow, spec.version, spec.profile)
	png, err := reliabilityPNG(modelTitle(spec.workflow, spec.version, spec.profile), bins, rawBins)
	if err != nil {
		return err
	}
	o.Files = append(o.Files, File{Name: base + model.ReliabilitySuffix, Data: png})
	card := model.Card{
		Workflow:           spec.workflow,
		Version:            spec.version,
		Profile:            spec.profile,
		CalibrationMethod:  art.Calibration.Method,
		CalibrationVersion: art.Calibration.Version,
		IntendedUse:        model.IntendedUse,
		Training:           run,
		Data:               spec.data,
		Samples:            art.Samples,
		Classification:     &art.Metrics,
		Tiers:              &art.Tiers,
		Limitations:        limitations(spec.workflow),
		ReliabilityPNG:     base + model.ReliabilitySuffix,
	}
	if spec.workflow == claim.Denial {
		card.Routing = routing(c, spec.profile, s.test)
	}
	return o.addCard(base, card)
}

// scored holds one split's scores and labels.
type scored struct {
	logit, raw, prob, y []float64
}

func scoreClassifier(c *model.Classifier, recs []synth.Record, label func(*synth.Record) bool) scored {
	s := scored{make([]float64, len(recs)), make([]float64, len(recs)), make([]float64, len(recs)), make([]float64, len(recs))}
	var res model.Result
	for i := range recs {
		c.Score(&recs[i].Claim, recs[i].Signals, &res)
		s.logit[i], s.raw[i], s.prob[i], s.y[i] = res.Logit, res.Raw, res.Probability, indicator(label(&recs[i]))
	}
	return s
}

// routing measures the auto-detection rule of c (model.Classifier.Detect) on a population's held-out
// claims.
func routing(c *model.Classifier, own model.Profile, recs []synth.Record) *model.RoutingMetrics {
	var nOwn, nOther, nNone int
	for i := range recs {
		switch p, ok := c.Detect(&recs[i].Claim); {
		case !ok:
			nNone++
		case p == own:
			nOwn++
		default:
			nOther++
		}
	}
	n := float64(len(recs))
	return &model.RoutingMetrics{Rule: c.Routing, Rows: len(recs), Own: round(float64(nOwn) / n), Other: round(float64(nOther) / n), NotDecisive: round(float64(nNone) / n)}
}

// addRegressor fits and evaluates the reimbursement model. It has no calibration step, so the
// calibration split joins training.
func (o *Output) addRegressor(g generation, s splits, run model.TrainingRun) error {
	train := slices.Concat(s.train, s.calibration)
	d, ref := newDesign(train, g.exclude(model.PrefixPolicy, model.PrefixDiagnosis, model.PrefixLimit), g.next, func(r *synth.Record) float64 {
		return math.Log(r.AllowedAmount / r.Claim.BilledAmount)
	})
	intercept, w, err := fitRidge(&d)
	if err != nil {
		return err
	}
	art := model.RegressorArtifact{
		Linear:    linearArtifact(&d, intercept, w),
		Reference: ref,
		Samples:   model.Samples{Train: len(train), Test: len(s.test)},
	}
	reg, err := model.NewRegressor(g.reimbursement, &art)
	if err != nil {
		return err
	}
	var est model.Estimate
	var absErr, pctErr float64
	allowed := make([]float64, len(s.test))
	for i := range s.test {
		r := &s.test[i]
		reg.Estimate(&r.Claim, &est)
		e := math.Abs(est.ExpectedAllowed - r.AllowedAmount)
		absErr += e
		pctErr += e / r.AllowedAmount
		allowed[i] = r.AllowedAmount
	}
	slices.Sort(allowed)
	n := float64(len(s.test))
	art.Metrics = model.RegressionMetrics{MAE: round(absErr / n), MAPE: round(pctErr / n), MedianAllowed: round(percentile(allowed, 0.5))}
	data := "Synthetic claims from package synth, the three populations pooled (all 30 payers). Target: log of " +
		"allowed_amount / billed_amount, fitted by ridge least squares; the estimate is billed × exp(prediction), " +
		"at most billed. Split 80/20 into train and held-out test."
	if g.next {
		if art.FactorReference, err = factorReference(art.Linear, train); err != nil {
			return err
		}
		nextRegressionMetrics(&art.Metrics, reg, s.test, absErr/n)
		data += " Second generation: per-unit price against the code's own reference (36415 is a $10 venipuncture, " +
			"not a $900 surgery), with hinges at each population's median price overall and per payer group, so " +
			"overcharged claims are estimated on their own slope; top factors against the mean claim of the training split."
	}

	mf := model.ModelFile{Workflow: claim.Reimbursement, Version: g.reimbursement, Training: run, Regressor: &art}
	if err := o.addJSON(modelName(claim.Reimbursement, g.reimbursement)+".json", mf); err != nil {
		return err
	}
	return o.addCard(cardName(claim.Reimbursement, g.reimbursement, ""), model.Card{
		Workflow:    claim.Reimbursement,
		Version:     g.reimbursement,
		IntendedUse: model.IntendedUse,
		Training:    run,
		Data:        data,
		Samples:     art.Samples,
		Regression:  &art.Metrics,
		Limitations: limitations(claim.Reimbursement),
	})
}

func (o *Output) addCard(base string, card model.Card) error {
	if err := o.addJSON(base+model.CardSuffix, card); err != nil {
		return err
	}
	o.Files = append(o.Files, File{Name: base + model.CardMarkdownSuffix, Data: renderCard(card)})
	o.Cards = append(o.Cards, card)
	return nil
}

// addJSON encodes v indented, with struct fields in declaration order and lists pre-sorted, so the
// bytes depend on the values alone.
func (o *Output) addJSON(name string, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	o.Files = append(o.Files, File{Name: name, Data: buf.Bytes()})
	return nil
}

// addIndex writes the artifacts' README: how they were made and what each file is.
func (o *Output) addIndex(run model.TrainingRun) {
	var b strings.Builder
	b.WriteString("# Scoring model artifacts\n\n")
	b.WriteString("Generated by `cmd/scoring-train`; do not edit. Regenerate from the repository root with\n\n")
	fmt.Fprintf(&b, "```sh\ngo run ./services/scoring/cmd/scoring-train -out services/scoring/internal/model/artifacts -seed %d -rows %d\n```\n\n",
		run.Seed, run.RowsPerPopulation)
	b.WriteString("The output is byte-for-byte reproducible; `go test ./services/scoring/internal/model/train` fails when these files\n")
	b.WriteString("differ from a fresh run. `../MODELS.md` documents the data, the models and the file formats.\n\n")
	b.WriteString("| file | content |\n|---|---|\n")
	names := make([]string, 0, len(o.Files)+1)
	for _, f := range o.Files {
		names = append(names, f.Name)
	}
	names = append(names, IndexName)
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "| %s | %s |\n", name, describeFile(name))
	}
	o.Files = append(o.Files, File{Name: IndexName, Data: []byte(b.String())})
}

// IndexName is the artifacts' README, which a run always writes: it keeps the embedded directory
// non-empty, so the runtime still builds while the models are being regenerated.
const IndexName = "README.md"

func describeFile(name string) string {
	switch {
	case name == IndexName:
		return "this index"
	case strings.HasSuffix(name, model.CardSuffix):
		return "model card (JSON, read by model.Set.Cards)"
	case strings.HasSuffix(name, model.CardMarkdownSuffix):
		return "model card (markdown)"
	case strings.HasSuffix(name, model.ReliabilitySuffix):
		return "reliability diagram of the held-out test split"
	case strings.HasPrefix(name, modelName(claim.Reimbursement, "")):
		return "model file: weights, drift reference, metrics"
	}
	return "model file: weights, calibration, tiers, payer support, drift reference, metrics"
}

// modelName is the stem of a model version's files: the workflow without its "healthcare." prefix,
// then the version.
func modelName(w claim.Workflow, version string) string {
	return strings.TrimPrefix(string(w), "healthcare.") + "-" + version
}

// cardName is the stem of one model's card and diagram.
func cardName(w claim.Workflow, version string, p model.Profile) string {
	if p == "" {
		return modelName(w, version)
	}
	return modelName(w, version) + "-" + string(p)
}

func modelTitle(w claim.Workflow, version string, p model.Profile) string {
	if p == "" {
		return string(w) + " " + version
	}
	return string(w) + " " + version + " (" + string(p) + ")"
}

func indicator(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// limitations are the caveats every card of a workflow carries.
func limitations(w claim.Workflow) []string {
	common := []string{
		"Trained and evaluated on synthetic claims only: the metrics measure how well the model recovers the generative rules of package synth, not its performance on real claims.",
		"Payer ids outside the 30-payer table are scored through their id-range bucket alone and flagged unseen_payer.",
	}
	switch w {
	case claim.Denial:
		return append(common,
			"A hidden per-provider effect and the randomness of the labels bound the attainable AUC.",
			"A claim routed to another profile's model still gets a valid score; amounts outside that population's range are flagged as drift.")
	case claim.PriorAuth:
		return append(common,
			fmt.Sprintf("Payer support: high with at least %d training rows, moderate with at least %d, low otherwise (and for unseen payers); low support keeps manual payer-policy verification in the loop.",
				supportRule.HighMinRows, supportRule.ModerateMinRows),
			"Policy signals are only as current as the published policy changes matched to the claim.")
	case claim.Reimbursement:
		return append(common,
			"Estimates the contractual allowed amount of a paid claim; denial, patient cost share and secondary payers are out of scope.",
			"The fit is linear in the log per-unit charge, so strongly overcharged claims are estimated less precisely.")
	}
	panic("train: no limitations for workflow " + string(w))
}
