package model

import "github.com/trustlayer/trustlayer/services/scoring/internal/claim"

// Profile names a claims population (a distribution regime) with a denial model of its own.
type Profile string

// The distribution profiles of the README. Each is a synthetic population with its own payer mix, CPT
// mix and amount band; MODELS.md describes them.
const (
	SyntheticV1    Profile = "synthetic_v1"
	CMSV1          Profile = "cms_v1"
	CommercialBeta Profile = "commercial_beta"
)

// Profiles lists the profiles in the order artifacts and cards list them.
var Profiles = []Profile{SyntheticV1, CMSV1, CommercialBeta}

// ParseProfile accepts the exact profile names of the README.
func ParseProfile(s string) (Profile, bool) {
	switch p := Profile(s); p {
	case SyntheticV1, CMSV1, CommercialBeta:
		return p, true
	}
	return "", false
}

// DetectProfile is the auto-detection step of denial routing (README: CPT pattern, amount band,
// payer id bucket). The rules mirror how synth builds the populations:
//
//   - a code outside the known families matches no population: not decisive;
//   - a sandbox payer only occurs in synthetic_v1;
//   - a government payer means cms_v1 and a commercial payer commercial_beta, unless the per-unit
//     charge sits in the other population's amount band, a contradiction that is not decisive;
//   - an unknown payer is decided by the amount band alone, and the gap between the bands is not
//     decisive.
//
// The model cards report how often this recovers each population's own profile.
func DetectProfile(c *claim.Claim) (Profile, bool) {
	f := FamilyOf(c.CPTCode)
	if f == FamilyOther {
		return "", false
	}
	amount := amountFeature(c, f)
	cmsBand, commercialBand := amount < cmsBandUpper, amount > commercialBandLower
	switch b := BucketOf(c.PayerID); {
	case b == BucketSandbox:
		return SyntheticV1, true
	case b.Government() && !commercialBand:
		return CMSV1, true
	case b.Commercial() && !cmsBand:
		return CommercialBeta, true
	case b != BucketUnknown:
		return "", false
	case cmsBand:
		return CMSV1, true
	case commercialBand:
		return CommercialBeta, true
	}
	return "", false
}
