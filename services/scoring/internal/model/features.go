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

	// NumFeatures is the length of a Vector.
	NumFeatures = featPolicyRemoved + 1
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
