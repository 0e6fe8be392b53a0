package model

import (
	"math"
	"strconv"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

// The feature layout. Every categorical vocabulary is one-hot in full (no dropped baseline): with L2
// regularisation the intercept carries the average and each level its deviation, so a claim whose
// value is absent or unknown (all zeros) scores as an average claim instead of as the dropped level.
const (
	offBucket  = 0
	offPayer   = offBucket + int(numBuckets) - 1 // BucketUnknown has no feature
	offFamily  = offPayer + NumPayers
	offPOS     = offFamily + int(NumFamilies) - 1 // FamilyOther has no feature
	offNetwork = offPOS + NumPlacesOfService

	featAtypicalDiagnosis = offNetwork + len(networkStatuses)
	featAmount            = featAtypicalDiagnosis + 1
	featUnits             = featAmount + 1
	featPolicyAdded       = featUnits + 1
	featPolicyRemoved     = featPolicyAdded + 1

	// The features of the second generation of models (denial 0.3.4, prior auth
	// 0.2.4-prior-auth-on-file, reimbursement 0.2.2). They come after the first generation's, so a
	// first-generation artifact, which has no weight on them, scores exactly as it always did.
	featOverLimit  = featPolicyRemoved + 1 // units above the family's medically-unlikely-edit limit
	featCodeAmount = featOverLimit + 1     // log per-unit charge over the code's reference amount
	// offHinge starts the price hinges: max(code amount - knot, 0) for each knot, overall and then
	// within each payer group (government, commercial, sandbox), so a fit can bend the price effect
	// where each population's median charge lies.
	offHinge = featCodeAmount + 1

	// NumFeatures is the length of a Vector.
	NumFeatures = offHinge + numHinges
)

// HingeKnots are the knots of the price hinges, in code amount (log per-unit charge over the code's
// reference): the median charges of the cms_v1, synthetic_v1 and commercial_beta populations
// (1.0, 1.5 and 2.2 times the reference).
var HingeKnots = [...]float64{0, 0.405465, 0.788457}

// hingeGroups are the payer groups with price hinges of their own; group 0 is every claim.
const (
	hingeAll = iota
	hingeGovernment
	hingeCommercial
	hingeSandbox
	numHingeGroups
)

var hingeGroupNames = [numHingeGroups]string{"all", "government", "commercial", "sandbox"}

const numHinges = numHingeGroups * len(HingeKnots)

// Feature name prefixes of the second generation: a first-generation model is trained without them.
const (
	PrefixLimit = "limit:"
	PrefixPrice = "price:"
	// PrefixFamilyAmount is the first generation's amount feature, measured against the family's
	// reference; the second generation uses the code's reference (price:) instead.
	PrefixFamilyAmount = "amount:"
)

// Feature name prefixes that training uses to choose a workflow's features.
const (
	PrefixDiagnosis = "diagnosis:"
	PrefixPolicy    = "policy:"
)

// Vector is one claim's features in the fixed layout named by FeatureName.
type Vector [NumFeatures]float64

// Signals are the published policy changes that match a claim (same payer and CPT code, effective on
// the service date). Only the prior-auth model reads them.
type Signals struct {
	PriorAuthAdded   bool
	PriorAuthRemoved bool
}

// Traits are the parts of a claim that drift checks and training summaries need besides the Vector.
type Traits struct {
	Family Family
	Bucket Bucket
	// PlaceOfService is an index into PlacesOfService, -1 for an unknown code, -2 when absent.
	PlaceOfService int
	// Amount and Units are the numeric features, repeated here so callers need not know the layout.
	Amount, Units float64
	// CodeAmount is the log per-unit charge over the code's own reference amount (CodeReferenceAmount);
	// it equals Amount except for the codes whose price is far from their family's.
	CodeAmount float64
}

// featureNames are the stable keys artifacts store weights under; featureLabels are what a caller
// reads in top_factors.
var featureNames, featureLabels = buildFeatureNames()

func buildFeatureNames() (names, labels [NumFeatures]string) {
	for b := BucketMedicare; b < numBuckets; b++ {
		i := offBucket + int(b) - 1
		names[i], labels[i] = "bucket:"+b.String(), "payer_id bucket: "+b.String()
	}
	for i, id := range KnownPayers {
		s := strconv.FormatInt(id, 10)
		names[offPayer+i], labels[offPayer+i] = "payer:"+s, "payer_id: "+s
	}
	for f := FamilyEM; f < NumFamilies; f++ {
		i := offFamily + int(f) - 1
		names[i], labels[i] = "family:"+f.String(), "cpt family: "+f.String()
	}
	for i, p := range PlacesOfService {
		names[offPOS+i], labels[offPOS+i] = "pos:"+p.Code, "place_of_service: "+p.Code+" "+p.Label
	}
	for i, s := range networkStatuses {
		names[offNetwork+i], labels[offNetwork+i] = "network:"+s, "network_status: "+s
	}
	names[featAtypicalDiagnosis], labels[featAtypicalDiagnosis] = PrefixDiagnosis+"atypical_for_family", "icd10 atypical for cpt family"
	names[featAmount], labels[featAmount] = "amount:log_per_unit_vs_reference", "billed amount per unit"
	names[featUnits], labels[featUnits] = "units:log", "units"
	names[featPolicyAdded], labels[featPolicyAdded] = PrefixPolicy+"prior_auth_added", "policy change: prior_auth_added"
	names[featPolicyRemoved], labels[featPolicyRemoved] = PrefixPolicy+"prior_auth_removed", "policy change: prior_auth_removed"
	names[featOverLimit], labels[featOverLimit] = PrefixLimit+"units_over_limit", "units above the medically-unlikely-edit limit"
	names[featCodeAmount], labels[featCodeAmount] = PrefixPrice+"log_per_unit_vs_code_reference", "billed amount per unit"
	for g := range numHingeGroups {
		for k, knot := range HingeKnots {
			i := offHinge + g*len(HingeKnots) + k
			names[i] = PrefixPrice + "hinge_" + hingeGroupNames[g] + "_" + strconv.FormatFloat(knot, 'f', 3, 64)
			labels[i] = "billed amount per unit"
		}
	}
	return names, labels
}

// FeatureName returns the artifact key of feature i.
func FeatureName(i int) string { return featureNames[i] }

// featureIndex returns the position of the feature called name, or -1.
func featureIndex(name string) int {
	for i, n := range featureNames {
		if n == name {
			return i
		}
	}
	return -1
}

// Extract writes cl's features into v and returns its traits. It is the only feature code: training
// calls it on synthetic claims and scoring on live ones, so the two cannot drift apart. It does not
// allocate.
func Extract(cl *claim.Claim, sig Signals, v *Vector) Traits {
	*v = Vector{}
	t := Traits{Family: FamilyOf(cl.CPTCode), Bucket: BucketOf(cl.PayerID), PlaceOfService: placeOfServiceIndex(cl.PlaceOfService)}
	if t.Bucket != BucketUnknown {
		v[offBucket+int(t.Bucket)-1] = 1
	}
	if i := payerIndex(cl.PayerID); i >= 0 {
		v[offPayer+i] = 1
	}
	if t.Family != FamilyOther {
		v[offFamily+int(t.Family)-1] = 1
	}
	if t.PlaceOfService >= 0 {
		v[offPOS+t.PlaceOfService] = 1
	}
	v[offNetwork+networkIndex(cl.NetworkStatus)] = 1
	if atypicalDiagnosis(t.Family, cl.ICD10Code) {
		v[featAtypicalDiagnosis] = 1
	}
	t.Amount = amountFeature(cl, t.Family)
	t.Units = math.Log(max(cl.Units, minUnits))
	v[featAmount], v[featUnits] = t.Amount, t.Units
	if t.Family != FamilyOther && cl.Units > UnitLimit[t.Family] {
		v[featOverLimit] = 1
	}
	t.CodeAmount = t.Amount
	if ref := CodeReferenceAmount(cl.CPTCode, t.Family); ref != FamilyReferenceAmount[t.Family] {
		t.CodeAmount = codeAmountFeature(cl, t.Family)
	}
	v[featCodeAmount] = t.CodeAmount
	group := hingeGroupOf(t.Bucket)
	for k, knot := range HingeKnots {
		h := max(t.CodeAmount-knot, 0)
		v[offHinge+k] = h
		if group != hingeAll {
			v[offHinge+group*len(HingeKnots)+k] = h
		}
	}
	if sig.PriorAuthAdded {
		v[featPolicyAdded] = 1
	}
	if sig.PriorAuthRemoved {
		v[featPolicyRemoved] = 1
	}
	return t
}

// minUnits and minAmount keep the logarithms finite for a zero the validator let through; such a
// value lands far outside every training range and is flagged as drift.
const (
	minUnits  = 0.01
	minAmount = 0.01
)

// amountFeature is the log of the per-unit charge over the family's reference amount: 0 for a typical
// CMS-like charge, about 0.79 for a typical commercial one, whatever the family.
func amountFeature(cl *claim.Claim, f Family) float64 {
	perUnit := cl.BilledAmount
	if cl.Units > 0 {
		perUnit /= cl.Units
	}
	return math.Log(max(perUnit, minAmount) / FamilyReferenceAmount[f])
}

// codeAmountFeature is amountFeature against the code's own reference amount (CodeReferenceAmount).
func codeAmountFeature(cl *claim.Claim, f Family) float64 {
	perUnit := cl.BilledAmount
	if cl.Units > 0 {
		perUnit /= cl.Units
	}
	return math.Log(max(perUnit, minAmount) / CodeReferenceAmount(cl.CPTCode, f))
}

func hingeGroupOf(b Bucket) int {
	switch {
	case b.Government():
		return hingeGovernment
	case b.Commercial():
		return hingeCommercial
	case b == BucketSandbox:
		return hingeSandbox
	}
	return hingeAll
}

// UnitLimit is each family's medically-unlikely-edit style limit on the units of one claim line (the
// limits of package synth); FamilyOther has none.
var UnitLimit = [NumFamilies]float64{
	FamilyOther: math.Inf(1), FamilyEM: 1, FamilyImaging: 2, FamilySurgery: 2, FamilyPT: 8,
	FamilyLab: 3, FamilyDME: 30, FamilyDrug: 120,
}

// CodeReferenceAmount is the per-unit reference amount of a code: its own for the codes whose price is
// far from their family's (CMS-like median charges), otherwise its family's (FamilyReferenceAmount). A
// family reference is a median over expensive and cheap codes alike: 36415, a venipuncture, falls in
// the surgery range (10004-69990) but costs about $10, not $900. It does not allocate.
func CodeReferenceAmount(code string, f Family) float64 {
	switch code {
	case "36415": // collection of venous blood by venipuncture
		return 10
	case "36416": // collection of capillary blood specimen
		return 8
	case "36410": // venipuncture requiring a physician's skill
		return 30
	case "36000": // introduction of a needle or catheter into a vein
		return 25
	case "96372": // therapeutic injection (medicine section, family other)
		return 30
	case "99000": // specimen handling (outside the E/M range)
		return 10
	case "99001": // specimen handling from patient to laboratory
		return 15
	}
	return FamilyReferenceAmount[f]
}
