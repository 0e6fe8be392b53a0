package synth

import "github.com/trustlayer/trustlayer/services/scoring/internal/model"

// The generative rules. Effects are in log-odds for denial and prior auth and in log allowed/billed
// ratio for reimbursement; MODELS.md tabulates the same numbers for readers of the model cards.

// payerRule is the hidden behaviour of one payer id.
type payerRule struct {
	id        int64
	denial    float64 // denial log-odds offset
	priorAuth float64 // prior-auth strictness, log-odds offset
	allowed   float64 // log allowed-ratio offset from the bucket's base
}

// payerRules follows model.KnownPayers order; a test holds the two together.
var payerRules = [model.NumPayers]payerRule{
	// Medicare-like: few prior-auth requirements, average denial.
	{1001, 0.00, -0.90, 0.00}, {1002, 0.10, -1.00, 0.03}, {1003, -0.15, -0.80, -0.02}, {1004, 0.20, -0.70, 0.02},
	{1005, -0.05, -1.10, -0.04}, {1006, 0.25, -0.60, 0.01}, {1007, 0.05, -0.90, -0.03}, {1008, 0.35, -0.50, 0.05},
	// Medicaid-like: managed-care plans with stricter prior auth and more denials.
	{1501, 0.30, 0.40, 0.00}, {1502, 0.50, 0.60, -0.05}, {1503, 0.20, 0.30, 0.04},
	{1504, 0.60, 0.80, -0.06}, {1505, 0.40, 0.50, 0.02}, {1506, 0.70, 0.90, -0.08},
	// Large commercial: the strictest prior auth.
	{2001, -0.20, 0.70, 0.00}, {2002, 0.00, 0.90, 0.05}, {2003, 0.10, 0.50, -0.04}, {2004, -0.10, 1.10, 0.03},
	{2005, 0.25, 0.80, -0.02}, {2006, 0.15, 0.60, 0.06}, {2007, 0.30, 1.00, -0.05}, {2008, 0.40, 1.20, 0.02},
	// Small commercial: more denials, looser prior auth.
	{3001, 0.50, 0.30, 0.04}, {3002, 0.70, 0.50, -0.03}, {3003, 0.40, 0.10, 0.08}, {3004, 0.80, 0.60, -0.06},
	{3005, 0.60, 0.40, 0.00},
	// Sandbox payers of synthetic_v1.
	{9001, 0.00, 0.00, 0.00}, {9002, 0.30, 0.30, 0.05}, {9003, -0.30, -0.30, -0.05},
}

// bucketAllowedRatio is the log of the typical allowed/billed ratio per payer bucket: Medicare 0.45,
// Medicaid 0.36, large commercial 0.58, small commercial 0.66, sandbox 0.52.
var bucketAllowedRatio = [...]float64{
	model.BucketMedicare:        -0.80,
	model.BucketMedicaid:        -1.02,
	model.BucketLargeCommercial: -0.545,
	model.BucketSmallCommercial: -0.416,
	model.BucketSandbox:         -0.654,
}

// familyCodes are the codes drawn, uniformly, within each family.
var familyCodes = [model.NumFamilies][]string{
	model.FamilyEM: {"99202", "99203", "99204", "99205", "99211", "99212", "99213", "99214", "99215", "99221", "99222",
		"99223", "99231", "99232", "99233", "99283", "99284", "99285", "99304", "99305", "99306", "99341", "99342", "99347", "99348"},
	model.FamilyImaging: {"70450", "70551", "70553", "71045", "71046", "71250", "71260", "72141", "72148", "72193", "73030",
		"73221", "73721", "74150", "74177", "76700", "76805", "77065", "77067", "78452"},
	model.FamilySurgery: {"10060", "11042", "12001", "17000", "20610", "27130", "27447", "29827", "29881", "43239", "45378",
		"47562", "49505", "55700", "63030", "64483", "66984", "69210"},
	model.FamilyPT:   {"97110", "97112", "97116", "97140", "97161", "97162", "97163", "97530", "97535", "97750"},
	model.FamilyLab:  {"80048", "80053", "80061", "82947", "83036", "84443", "85025", "85610", "86803", "87086", "87491", "88305"},
	model.FamilyDME:  {"E0114", "E0143", "E0260", "E0601", "E1390", "K0001", "K0823", "L1832", "L3000", "L4361"},
	model.FamilyDrug: {"J0129", "J0178", "J0585", "J0897", "J1100", "J1745", "J2505", "J3301", "J9035", "J9271"},
}

// placeWeights is each family's place-of-service mix, shared by every population.
var placeWeights = [model.NumFamilies][]weighted[string]{
	model.FamilyEM:      {{"11", .55}, {"02", .05}, {"10", .06}, {"21", .10}, {"23", .10}, {"31", .06}, {"12", .04}, {"22", .04}},
	model.FamilyImaging: {{"22", .35}, {"11", .25}, {"19", .15}, {"21", .12}, {"23", .13}},
	model.FamilySurgery: {{"22", .40}, {"21", .30}, {"11", .20}, {"19", .10}},
	model.FamilyPT:      {{"11", .50}, {"22", .20}, {"12", .15}, {"31", .10}, {"10", .05}},
	model.FamilyLab:     {{"81", .45}, {"11", .25}, {"22", .15}, {"21", .10}, {"23", .05}},
	model.FamilyDME:     {{"12", .70}, {"11", .20}, {"31", .10}},
	model.FamilyDrug:    {{"11", .40}, {"22", .30}, {"19", .15}, {"21", .10}, {"23", .05}},
}

// unitLimit is each family's medically-unlikely-edit style limit: more units on one line is denied
// far more often (strongest in cms_v1, where such edits come from).
var unitLimit = [model.NumFamilies]float64{
	model.FamilyEM: 1, model.FamilyImaging: 2, model.FamilySurgery: 2, model.FamilyPT: 8,
	model.FamilyLab: 3, model.FamilyDME: 30, model.FamilyDrug: 120,
}

// Outliers and policy signals, shared by every population.
const (
	amountOutlierRate = 0.01  // per-unit charge multiplied by 3-10
	unitsOutlierRate  = 0.003 // units multiplied by 6
	policyAddedRate   = 0.06  // a published change added prior auth for the payer and code
	policyRemovedRate = 0.04  // a published change removed it
)

// Denial effects shared by every population, by place of service.
var placeDenial = map[string]float64{"02": 0.50, "10": 0.50, "21": 0.30, "23": -0.40, "31": 0.30}

// Prior-auth rules, shared by every population (payer strictness comes from payerRules).
const (
	priorAuthBase          = -1.6
	priorAuthPerLogUnit    = 0.30 // per log unit
	priorAuthOvercharge    = 0.35 // per log unit of per-unit charge above the population's median
	priorAuthOutOfNetwork  = 0.40
	priorAuthPolicyAdded   = 2.5
	priorAuthPolicyRemoved = -2.5
)

var familyPriorAuth = [model.NumFamilies]float64{
	model.FamilyEM: -2.5, model.FamilyImaging: 1.0, model.FamilySurgery: 1.2, model.FamilyPT: 0,
	model.FamilyLab: -1.8, model.FamilyDME: 1.1, model.FamilyDrug: 1.4,
}

var placePriorAuth = map[string]float64{"21": 0.8, "23": -2.0, "22": 0.2, "19": 0.2, "31": 0.4, "12": 0.3}

// Reimbursement rules, shared by every population (the base comes from bucketAllowedRatio).
const (
	allowedOvercharge     = -0.70 // per log unit of per-unit charge above the population's median
	allowedOutOfNetwork   = -0.40
	allowedUnknownNetwork = -0.12
	allowedNoise          = 0.10 // standard deviation of the log ratio
)

var familyAllowed = [model.NumFamilies]float64{
	model.FamilyEM: 0.08, model.FamilyImaging: -0.10, model.FamilySurgery: -0.05, model.FamilyPT: 0,
	model.FamilyLab: -0.25, model.FamilyDME: 0.05, model.FamilyDrug: 0.12,
}

var placeAllowed = map[string]float64{"11": 0.04, "19": -0.08, "21": -0.08, "22": -0.08}

// population is what makes one profile's claims differ from another's.
type population struct {
	payers    []weighted[int64]
	families  [model.NumFamilies]float64 // mix of code families
	priceMult float64                    // median per-unit charge over model.FamilyReferenceAmount
	// priceSpread is the standard deviation of the log per-unit charge.
	priceSpread       float64
	outOfNetwork      float64 // share of out-of-network claims
	unknownNetwork    float64 // share with unknown network status
	atypicalDiagnosis float64 // share whose diagnosis does not justify the code
	priorAuthOnFile   float64 // share of prior-auth-required claims with an authorisation on file
	providers         int
	providerBase      int64
	denial            denialRules
}

// denialRules are one population's denial effects.
type denialRules struct {
	base              float64
	family            [model.NumFamilies]float64
	outOfNetwork      float64
	unknownNetwork    float64
	atypicalDiagnosis float64 // medical-necessity mismatch
	overcharge        float64 // per log unit of per-unit charge above the population's median
	unitsOverLimit    float64
	priorAuthMissing  float64 // prior auth required and none on file
	providerSpread    float64 // standard deviation of the hidden provider effect
}

var populations = map[model.Profile]population{
	model.SyntheticV1: {
		payers: append([]weighted[int64]{{9001, .25}, {9002, .20}, {9003, .15}},
			evenly(.40, model.KnownPayers[:model.NumPayers-3])...),
		families:  families(.18, .15, .12, .14, .15, .12, .14),
		priceMult: 1.5, priceSpread: 0.55,
		outOfNetwork: .08, unknownNetwork: .10, atypicalDiagnosis: .12, priorAuthOnFile: .85,
		providers: 600, providerBase: 1_000_000,
		denial: denialRules{
			base: -2.6, family: families(-0.6, 0.4, 0.5, 0.2, -0.7, 0.8, 0.5),
			outOfNetwork: 1.3, unknownNetwork: 0.5, atypicalDiagnosis: 2.0, overcharge: 0.6,
			unitsOverLimit: 1.2, priorAuthMissing: 1.8, providerSpread: 0.3,
		},
	},
	model.CMSV1: {
		payers: []weighted[int64]{
			{1001, .16}, {1002, .13}, {1003, .11}, {1004, .085}, {1005, .075}, {1006, .06}, {1007, .045}, {1008, .015},
			{1501, .10}, {1502, .08}, {1503, .06}, {1504, .04}, {1505, .03}, {1506, .01},
		},
		families:  families(.30, .10, .07, .13, .20, .12, .08),
		priceMult: 1.0, priceSpread: 0.25,
		outOfNetwork: .03, unknownNetwork: .02, atypicalDiagnosis: .14, priorAuthOnFile: .90,
		providers: 600, providerBase: 2_000_000,
		denial: denialRules{
			base: -2.7, family: families(-0.6, 0.5, 0.3, 0.6, -0.4, 1.1, 0.3),
			outOfNetwork: 1.6, unknownNetwork: 0.6, atypicalDiagnosis: 2.4, overcharge: 0.3,
			unitsOverLimit: 2.2, priorAuthMissing: 1.5, providerSpread: 0.3,
		},
	},
	model.CommercialBeta: {
		payers: []weighted[int64]{
			{2001, .20}, {2002, .16}, {2003, .13}, {2004, .11}, {2005, .09}, {2006, .075}, {2007, .045}, {2008, .04},
			{3001, .06}, {3002, .04}, {3003, .025}, {3004, .015}, {3005, .01},
		},
		families:  families(.22, .20, .16, .10, .10, .05, .17),
		priceMult: 2.2, priceSpread: 0.25,
		outOfNetwork: .15, unknownNetwork: .05, atypicalDiagnosis: .10, priorAuthOnFile: .80,
		providers: 600, providerBase: 3_000_000,
		denial: denialRules{
			base: -2.5, family: families(-0.8, 0.6, 0.5, 0.3, -0.6, 0.6, 0.7),
			outOfNetwork: 1.4, unknownNetwork: 0.5, atypicalDiagnosis: 1.8, overcharge: 0.8,
			unitsOverLimit: 0.8, priorAuthMissing: 2.2, providerSpread: 0.3,
		},
	},
}

// families fills a per-family table in FamilyEM..FamilyDrug order; FamilyOther stays zero because no
// synthetic claim has an unknown code.
func families(em, imaging, surgery, pt, lab, dme, drug float64) [model.NumFamilies]float64 {
	return [model.NumFamilies]float64{
		model.FamilyEM: em, model.FamilyImaging: imaging, model.FamilySurgery: surgery, model.FamilyPT: pt,
		model.FamilyLab: lab, model.FamilyDME: dme, model.FamilyDrug: drug,
	}
}

// evenly spreads total weight over ids.
func evenly(total float64, ids []int64) []weighted[int64] {
	out := make([]weighted[int64], len(ids))
	for i, id := range ids {
		out[i] = weighted[int64]{id, total / float64(len(ids))}
	}
	return out
}
