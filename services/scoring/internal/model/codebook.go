package model

// The code book: the fixed vocabularies both the synthetic population (package synth) and the runtime
// read. Keeping them here, beside the feature extraction, is what makes DetectProfile agree with how
// the populations were built and lets a claim be scored with exactly the encoding it was trained on.

// Bucket groups payer ids by the kind of plan behind them. It comes from the id range alone, so an
// id the models never saw still gets a bucket.
type Bucket uint8

// The payer buckets. BucketUnknown is an id outside every documented range.
const (
	BucketUnknown Bucket = iota
	BucketMedicare
	BucketMedicaid
	BucketLargeCommercial
	BucketSmallCommercial
	BucketSandbox
	numBuckets
)

var bucketNames = [numBuckets]string{"unknown", "medicare", "medicaid", "large_commercial", "small_commercial", "sandbox"}

// String returns the bucket's snake_case name.
func (b Bucket) String() string {
	if b >= numBuckets {
		return bucketNames[BucketUnknown]
	}
	return bucketNames[b]
}

// Government reports whether the bucket holds Medicare- or Medicaid-like payers.
func (b Bucket) Government() bool { return b == BucketMedicare || b == BucketMedicaid }

// Commercial reports whether the bucket holds commercial payers of either size.
func (b Bucket) Commercial() bool { return b == BucketLargeCommercial || b == BucketSmallCommercial }

// BucketOf maps a payer id to its bucket: 1000-1499 Medicare-like, 1500-1999 Medicaid-like,
// 2000-2999 large commercial, 3000-3999 small commercial, 9000-9999 sandbox (synthetic test payers).
func BucketOf(payerID int64) Bucket {
	switch {
	case payerID >= 1000 && payerID < 1500:
		return BucketMedicare
	case payerID >= 1500 && payerID < 2000:
		return BucketMedicaid
	case payerID >= 2000 && payerID < 3000:
		return BucketLargeCommercial
	case payerID >= 3000 && payerID < 4000:
		return BucketSmallCommercial
	case payerID >= 9000 && payerID < 10000:
		return BucketSandbox
	}
	return BucketUnknown
}

// NumPayers is the size of the payer table.
const NumPayers = 30

// KnownPayers is the fixed payer table of the synthetic populations; each id is also a feature of its
// own, so a payer's policy can differ from its bucket's.
var KnownPayers = [NumPayers]int64{
	1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, // Medicare-like (administrative contractors)
	1501, 1502, 1503, 1504, 1505, 1506, // Medicaid-like (state plans)
	2001, 2002, 2003, 2004, 2005, 2006, 2007, 2008, // large commercial
	3001, 3002, 3003, 3004, 3005, // small commercial
	9001, 9002, 9003, // sandbox
}

// payerIndex returns the position of id in KnownPayers, or -1. A scan of 30 ids keeps Extract free of
// package state that would need initialising; a whole Score takes about 190 ns (BenchmarkDenialScore).
func payerIndex(id int64) int {
	for i, p := range KnownPayers {
		if p == id {
			return i
		}
	}
	return -1
}

// Family is a CPT/HCPCS code family: the unit the models and the synthetic rules reason about.
type Family uint8

// The code families. FamilyOther is any code outside the ranges below (anesthesia, the medicine
// section other than physical therapy, Category II/III codes, HCPCS letters other than E/K/L/J); no
// synthetic claim has it, so a model flags it as unseen.
const (
	FamilyOther Family = iota
	FamilyEM
	FamilyImaging
	FamilySurgery
	FamilyPT
	FamilyLab
	FamilyDME
	FamilyDrug
	NumFamilies
)

var familyNames = [NumFamilies]string{"other", "em", "imaging", "surgery", "pt", "lab", "dme", "drug"}

// String returns the family's short name.
func (f Family) String() string {
	if f >= NumFamilies {
		return familyNames[FamilyOther]
	}
	return familyNames[f]
}

// ParseFamily is the inverse of Family.String.
func ParseFamily(s string) (Family, bool) {
	for f, name := range familyNames {
		if name == s {
			return Family(f), true
		}
	}
	return FamilyOther, false
}

// FamilyOf classifies a 5-character CPT or HCPCS Level II code: E/M 99202-99499, imaging 70010-79999,
// surgery 10004-69990, physical therapy 97010-97799, laboratory 80047-89398, DME and orthotics
// (HCPCS E, K, L), drugs (HCPCS J).
func FamilyOf(code string) Family {
	if len(code) != 5 {
		return FamilyOther
	}
	switch code[0] {
	case 'E', 'K', 'L':
		return FamilyDME
	case 'J':
		return FamilyDrug
	}
	n := 0
	for i := range 5 {
		c := code[i]
		if c < '0' || c > '9' {
			return FamilyOther
		}
		n = n*10 + int(c-'0')
	}
	switch {
	case n >= 10004 && n <= 69990:
		return FamilySurgery
	case n >= 70010 && n <= 79999:
		return FamilyImaging
	case n >= 80047 && n <= 89398:
		return FamilyLab
	case n >= 97010 && n <= 97799:
		return FamilyPT
	case n >= 99202 && n <= 99499:
		return FamilyEM
	}
	return FamilyOther
}

// FamilyReferenceAmount is the CMS-like billed amount per unit of each family: the median per-unit
// charge of the cms_v1 population. Amount features and the amount bands of DetectProfile are the log
// of a claim's per-unit charge over this reference, so one scale serves every family.
var FamilyReferenceAmount = [NumFamilies]float64{
	FamilyOther:   100,
	FamilyEM:      110,
	FamilyImaging: 240,
	FamilySurgery: 900,
	FamilyPT:      35,
	FamilyLab:     25,
	FamilyDME:     180,
	FamilyDrug:    45,
}

// The amount bands of DetectProfile, in log per-unit charge over FamilyReferenceAmount. cms_v1 charges
// centre on 0 and commercial_beta charges on ln 2.2 ≈ 0.79, both with spread 0.25 (see synth), so the
// gap between the two cut-offs is where neither population is decisive.
const (
	cmsBandUpper        = 0.30
	commercialBandLower = 0.50
)

// typicalDiagnoses lists, per family, the ICD-10 chapter letters that commonly justify it. A claim
// whose diagnosis falls outside is a medical-necessity mismatch, the commonest clinical denial reason.
// E/M visits are justified by any diagnosis.
var typicalDiagnoses = [NumFamilies]string{
	FamilyOther:   "ABCDEFGHIJKLMNOPQRSTVWXYZ",
	FamilyEM:      "ABCDEFGHIJKLMNOPQRSTVWXYZ",
	FamilyImaging: "CGIKMNRS",
	FamilySurgery: "CHKLMNS",
	FamilyPT:      "GMRSZ",
	FamilyLab:     "ABDEINRZ",
	FamilyDME:     "EGIJMSZ",
	FamilyDrug:    "CDEJKLM",
}

// TypicalDiagnosisLetters returns the ICD-10 chapter letters that justify family f.
func TypicalDiagnosisLetters(f Family) string { return typicalDiagnoses[f] }

// atypicalDiagnosis reports whether icd10 starts with a chapter letter that does not justify f. An
// absent diagnosis is not a mismatch: the validator, not the model, rejects it.
func atypicalDiagnosis(f Family, icd10 string) bool {
	if icd10 == "" {
		return false
	}
	letter := icd10[0]
	for i := 0; i < len(typicalDiagnoses[f]); i++ {
		if typicalDiagnoses[f][i] == letter {
			return false
		}
	}
	return true
}

// NumPlacesOfService is the size of the place-of-service vocabulary.
const NumPlacesOfService = 10

// PlacesOfService are the CMS place-of-service codes of the synthetic populations, with their CMS
// names; any other code is unseen.
var PlacesOfService = [NumPlacesOfService]struct{ Code, Label string }{
	{"02", "telehealth outside the home"},
	{"10", "telehealth in the home"},
	{"11", "office"},
	{"12", "home"},
	{"19", "off-campus outpatient hospital"},
	{"21", "inpatient hospital"},
	{"22", "on-campus outpatient hospital"},
	{"23", "emergency room"},
	{"31", "skilled nursing facility"},
	{"81", "independent laboratory"},
}

// placeOfServiceIndex returns the position of code in PlacesOfService, -1 for an unknown code and -2
// for an absent one, which is not drift.
func placeOfServiceIndex(code string) int {
	if code == "" {
		return -2
	}
	for i, p := range PlacesOfService {
		if p.Code == code {
			return i
		}
	}
	return -1
}

// The network statuses of claim.Claim; anything else reads as unknown.
const (
	InNetwork      = "in_network"
	OutOfNetwork   = "out_of_network"
	UnknownNetwork = "unknown"
)

var networkStatuses = [3]string{InNetwork, OutOfNetwork, UnknownNetwork}

func networkIndex(status string) int {
	switch status {
	case InNetwork:
		return 0
	case OutOfNetwork:
		return 1
	}
	return 2
}
