// Package synth generates the synthetic claims populations the scoring models are trained and
// evaluated on. Generation is deterministic: one PCG stream per profile, seeded by the caller, and the
// first n claims of a longer run equal a run of n.
//
// Each distribution profile is a population of its own, so that denial routing's auto-detection
// (model.DetectProfile) is meaningful:
//
//   - synthetic_v1: 60 % sandbox payers (ids 9001-9003), 40 % spread evenly over the other 27 payers;
//     a near-even code-family mix; per-unit charges 1.5 × the CMS-like reference with a wide spread
//     (log sd 0.55).
//   - cms_v1: Medicare-like (68 %) and Medicaid-like (32 %) payers; E/M and lab heavy; per-unit
//     charges at the CMS-like reference (log sd 0.25); few out-of-network claims.
//   - commercial_beta: large (85 %) and small (15 %) commercial payers; imaging, surgery and drug
//     heavy; per-unit charges 2.2 × the reference (log sd 0.25); 15 % out of network.
//
// Every claim draws, in order: payer (by the population's payer weights), code family and a code of
// it, place of service (a per-family mix of CMS codes 02, 10, 11, 12, 19, 21, 22, 23, 31, 81), network
// status, diagnosis (a chapter that justifies the family, or with the population's mismatch rate one
// that does not), units (1 for E/M; up to 8 fifteen-minute units for physical therapy; log-uniform
// doses up to 120 for J-code drugs; 0.3 % multiplied by 6), per-unit charge (log-normal around the
// family's reference amount; 1 % multiplied by 3-10) and matching policy changes (6 % prior auth
// added, 4 % removed).
//
// The labels follow from hidden logistic rules:
//
//   - prior_auth_required: family (drugs, surgery, DME and imaging need it, E/M and lab rarely), payer
//     strictness (Medicare-like lenient, commercial strict), inpatient and emergency settings, units,
//     overcharge, out of network, and a matching policy change (±2.5 log-odds).
//   - denied: the population's own base rate and effects of payer, family, place of service, network,
//     diagnosis mismatch, overcharge, units above a medically-unlikely-edit limit, prior auth required
//     but not on file, and a hidden per-provider effect the models cannot see.
//   - allowed_amount: billed × exp(log ratio), the ratio set by payer bucket (Medicare 0.45 … small
//     commercial 0.66), payer, family, network, place of service, minus 0.7 per log unit of
//     overcharge, with log-normal noise (sd 0.10), and never above billed. It is the contractual
//     allowed amount, whether or not the claim was denied.
//
// rules.go holds every number; MODELS.md tabulates them.
package synth

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

// Record is one synthetic claim with its labels.
type Record struct {
	Claim             claim.Claim
	Signals           model.Signals
	Denied            bool
	PriorAuthRequired bool
	AllowedAmount     float64

	// The generator's own view of the claim, for oracle metrics (none of it is a model input).

	// DenialProbability is the probability Denied was drawn with; DenialPayloadProbability averages
	// out what the claim payload does not show (the hidden provider effect, whether prior auth was
	// required and on file), so it is the best probability a model of the payload can reach.
	DenialProbability, DenialPayloadProbability float64
	// PriorAuthProbability is the probability PriorAuthRequired was drawn with (all of it payload).
	PriorAuthProbability float64
	// AllowedLogRatio is the mean of the log allowed/billed ratio before noise and the clamp at 0:
	// billed × exp(min(AllowedLogRatio, 0)) is the conditional median of the allowed amount.
	AllowedLogRatio float64
	// Overcharge is the log per-unit charge above the population's median, floored at 0.
	Overcharge float64
}

// firstServiceDate and serviceDays bound the service dates: January to October 2026.
var firstServiceDate = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

const serviceDays = 304

// Generate returns n claims of profile p's population. The same seed, profile and n give the same
// claims on every run and platform.
func Generate(p model.Profile, n int, seed uint64) ([]Record, error) {
	pop, ok := populations[p]
	if !ok {
		return nil, fmt.Errorf("synth: no population for profile %q", p)
	}
	// One stream per profile, so the populations are independent for one seed.
	r := rand.New(rand.NewPCG(seed, uint64(slices.Index(model.Profiles, p)+1)))
	g := generator{r: r, pop: &pop, payers: newPicker(pop.payers)}
	families := make([]weighted[model.Family], 0, model.NumFamilies)
	for f, w := range pop.families {
		if w > 0 {
			families = append(families, weighted[model.Family]{model.Family(f), w})
		}
	}
	g.families = newPicker(families)
	for f := range placeWeights {
		g.places[f] = newPicker(placeWeights[f])
	}
	g.providerEffect = make([]float64, pop.providers)
	for i := range g.providerEffect {
		g.providerEffect[i] = r.NormFloat64() * pop.denial.providerSpread
	}
	out := make([]Record, n)
	for i := range out {
		g.record(&out[i], p, i)
	}
	return out, nil
}

type generator struct {
	r              *rand.Rand
	pop            *population
	payers         picker[int64]
	families       picker[model.Family]
	places         [model.NumFamilies]picker[string]
	providerEffect []float64
}

func (g *generator) record(rec *Record, p model.Profile, i int) {
	r, pop := g.r, g.pop
	payerID := g.payers.pick(r)
	payer := payerRules[slices.IndexFunc(payerRules[:], func(pr payerRule) bool { return pr.id == payerID })]
	family := g.families.pick(r)
	codes := familyCodes[family]
	code := codes[r.IntN(len(codes))]
	place := g.places[family].pick(r)
	network := model.InNetwork
	switch u := r.Float64(); {
	case u < pop.outOfNetwork:
		network = model.OutOfNetwork
	case u < pop.outOfNetwork+pop.unknownNetwork:
		network = model.UnknownNetwork
	}
	// E/M has no atypical chapter, so it never carries the mismatch.
	atypical := r.Float64() < pop.atypicalDiagnosis && atypicalLetters[family] != ""
	icd := diagnosis(r, family, atypical)
	units := g.units(family)
	if r.Float64() < unitsOutlierRate {
		units *= 6
	}
	// overcharge is how far the per-unit charge sits above the population's median, in log units.
	logPrice := pop.priceSpread * r.NormFloat64()
	if r.Float64() < amountOutlierRate {
		logPrice += math.Log(3 + 7*r.Float64())
	}
	overcharge := max(logPrice, 0)
	perUnit := model.FamilyReferenceAmount[family] * pop.priceMult * math.Exp(logPrice)
	billed := max(cents(perUnit*units), 0.01)
	var sig model.Signals
	switch u := r.Float64(); {
	case u < policyAddedRate:
		sig.PriorAuthAdded = true
	case u < policyAddedRate+policyRemovedRate:
		sig.PriorAuthRemoved = true
	}
	provider := r.IntN(pop.providers)

	zPA := priorAuthBase + familyPriorAuth[family] + payer.priorAuth + placePriorAuth[place] +
		priorAuthPerLogUnit*math.Log(units) + priorAuthOvercharge*overcharge
	if network == model.OutOfNetwork {
		zPA += priorAuthOutOfNetwork
	}
	if sig.PriorAuthAdded {
		zPA += priorAuthPolicyAdded
	}
	if sig.PriorAuthRemoved {
		zPA += priorAuthPolicyRemoved
	}
	paRequired := r.Float64() < sigmoid(zPA)
	paOnFile := r.Float64() < pop.priorAuthOnFile

	d := &pop.denial
	z0 := d.base + payer.denial + d.family[family] + placeDenial[place] + d.overcharge*overcharge
	z := z0 + g.providerEffect[provider]
	switch network {
	case model.OutOfNetwork:
		z += d.outOfNetwork
		z0 += d.outOfNetwork
	case model.UnknownNetwork:
		z += d.unknownNetwork
		z0 += d.unknownNetwork
	}
	if atypical {
		z += d.atypicalDiagnosis
		z0 += d.atypicalDiagnosis
	}
	if units > unitLimit[family] {
		z += d.unitsOverLimit
		z0 += d.unitsOverLimit
	}
	if paRequired && !paOnFile {
		z += d.priorAuthMissing
	}
	pDenied := sigmoid(z)
	denied := r.Float64() < pDenied
	missing := sigmoid(zPA) * (1 - pop.priorAuthOnFile)
	pPayload := (1-missing)*meanOverProviders(z0, d.providerSpread) + missing*meanOverProviders(z0+d.priorAuthMissing, d.providerSpread)

	noise := r.NormFloat64()
	logRatio := bucketAllowedRatio[model.BucketOf(payerID)] + payer.allowed + familyAllowed[family] +
		placeAllowed[place] + allowedOvercharge*overcharge + allowedNoise*noise
	switch network {
	case model.OutOfNetwork:
		logRatio += allowedOutOfNetwork
	case model.UnknownNetwork:
		logRatio += allowedUnknownNetwork
	}
	allowed := max(cents(billed*math.Exp(min(logRatio, 0))), 0.01)
	meanLogRatio := logRatio - allowedNoise*noise

	*rec = Record{
		Claim: claim.Claim{
			ExternalClaimID: fmt.Sprintf("%s-%07d", p, i),
			ServiceDate:     firstServiceDate.AddDate(0, 0, r.IntN(serviceDays)),
			ProviderID:      pop.providerBase + int64(provider),
			PayerID:         payerID,
			CPTCode:         code,
			ICD10Code:       icd,
			BilledAmount:    billed,
			Units:           units,
			PlaceOfService:  place,
			NetworkStatus:   network,
			PatientID:       fmt.Sprintf("syn-%08d", r.IntN(100_000_000)),
		},
		Signals:           sig,
		Denied:            denied,
		PriorAuthRequired: paRequired,
		AllowedAmount:     allowed,

		DenialProbability:        pDenied,
		DenialPayloadProbability: pPayload,
		PriorAuthProbability:     sigmoid(zPA),
		AllowedLogRatio:          meanLogRatio,
		Overcharge:               overcharge,
	}
}

// units draws the units of one claim line of family f.
func (g *generator) units(f model.Family) float64 {
	r := g.r
	switch f {
	case model.FamilyImaging:
		if r.Float64() < .05 {
			return 2
		}
	case model.FamilySurgery:
		if r.Float64() < .08 {
			return 2
		}
	case model.FamilyPT:
		return 1 + math.Min(math.Floor(r.ExpFloat64()*1.5), 7)
	case model.FamilyLab:
		switch u := r.Float64(); {
		case u < .08:
			return 3
		case u < .20:
			return 2
		}
	case model.FamilyDME:
		if r.Float64() < .30 {
			return math.Round(math.Exp(math.Log(2) + r.Float64()*math.Log(15)))
		}
	case model.FamilyDrug:
		return math.Max(1, math.Round(math.Exp(r.Float64()*math.Log(120))))
	}
	return 1
}

// diagnosis draws an ICD-10-shaped code (letter, two digits, dot, one digit) whose chapter letter
// justifies family f, or does not when atypical is set.
func diagnosis(r *rand.Rand, f model.Family, atypical bool) string {
	letters := model.TypicalDiagnosisLetters(f)
	if atypical {
		letters = atypicalLetters[f]
	}
	return fmt.Sprintf("%c%02d.%d", letters[r.IntN(len(letters))], r.IntN(100), r.IntN(10))
}

// atypicalLetters are the chapters (U excluded, it is reserved) that do not justify each family.
var atypicalLetters = func() [model.NumFamilies]string {
	var out [model.NumFamilies]string
	for f := range out {
		typical := model.TypicalDiagnosisLetters(model.Family(f))
		for c := byte('A'); c <= 'Z'; c++ {
			if c != 'U' && strings.IndexByte(typical, c) < 0 {
				out[f] += string(c)
			}
		}
	}
	return out
}()

func cents(x float64) float64 { return math.Round(x*100) / 100 }

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// quadrature is a fixed rule for the mean over a standard normal: 41 points over ±4 sd, weights
// proportional to the density and summing to 1.
var quadrature = func() (q [41][2]float64) {
	total := 0.0
	for i := range q {
		x := -4 + 0.2*float64(i)
		q[i] = [2]float64{x, math.Exp(-x * x / 2)}
		total += q[i][1]
	}
	for i := range q {
		q[i][1] /= total
	}
	return q
}()

// meanOverProviders is the mean of σ(z + e) over the provider effect e ~ N(0, sd²).
func meanOverProviders(z, sd float64) float64 {
	s := 0.0
	for _, p := range quadrature {
		s += p[1] * sigmoid(z+sd*p[0])
	}
	return s
}

// weighted is one choice and its weight.
type weighted[T any] struct {
	value  T
	weight float64
}

// picker draws from weighted choices by inverse CDF over their cumulative weights.
type picker[T any] struct {
	values []T
	cum    []float64
}

func newPicker[T any](ws []weighted[T]) picker[T] {
	p := picker[T]{values: make([]T, len(ws)), cum: make([]float64, len(ws))}
	total := 0.0
	for i, w := range ws {
		total += w.weight
		p.values[i], p.cum[i] = w.value, total
	}
	for i := range p.cum {
		p.cum[i] /= total
	}
	return p
}

func (p picker[T]) pick(r *rand.Rand) T {
	u := r.Float64()
	for i, c := range p.cum {
		if u < c {
			return p.values[i]
		}
	}
	return p.values[len(p.values)-1]
}

// Description summarises profile p's population for model cards.
func Description(p model.Profile) string {
	return descriptions[p]
}

var descriptions = map[model.Profile]string{
	model.SyntheticV1: "synthetic_v1 population: 60 % sandbox payers (9001-9003) and 40 % the other 27 payers, a near-even " +
		"code-family mix, per-unit charges 1.5 × the CMS-like reference with a wide spread (log sd 0.55)",
	model.CMSV1: "cms_v1 population: Medicare-like (68 %) and Medicaid-like (32 %) payers, E/M and lab heavy, per-unit " +
		"charges at the CMS-like reference (log sd 0.25), 3 % out of network",
	model.CommercialBeta: "commercial_beta population: large (85 %) and small (15 %) commercial payers, imaging, surgery and " +
		"drug heavy, per-unit charges 2.2 × the CMS-like reference (log sd 0.25), 15 % out of network",
}
