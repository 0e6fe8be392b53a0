package model

import (
	"math"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

// Estimate is one reimbursement estimate.
type Estimate struct {
	// ExpectedAllowed is the billed amount times Ratio, rounded to cents.
	ExpectedAllowed float64
	// Ratio is the expected allowed/billed ratio, clamped to [0, 1] because a payer never allows more
	// than was billed.
	Ratio    float64
	Factors  [MaxFactors]Factor
	NFactors int
	Drift    Drift
}

// Regressor is the reimbursement model: a least-squares fit of the log allowed/billed ratio, so
// exp of the prediction is the conditional median ratio under log-normal noise. It is immutable and
// safe for concurrent use.
type Regressor struct {
	Version string

	lin linear
	rel *relativeFactors
	ref reference
}

// NewRegressor builds a regressor from its artifact, checking it is consistent.
func NewRegressor(version string, a *RegressorArtifact) (*Regressor, error) {
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
	return &Regressor{Version: version, lin: lin, rel: rel, ref: ref}, nil
}

// Estimate estimates cl's allowed amount into out. It does not allocate, and equal inputs give
// identical results.
func (r *Regressor) Estimate(cl *claim.Claim, out *Estimate) {
	var v Vector
	t := Extract(cl, Signals{}, &v)
	*out = Estimate{}
	var logRatio float64
	if r.rel != nil {
		logRatio = r.rel.predict(&r.lin, &v, &out.Factors, &out.NFactors)
	} else {
		logRatio = r.lin.predict(&v, &out.Factors, &out.NFactors)
	}
	out.Ratio = min(max(math.Exp(logRatio), 0), 1)
	out.ExpectedAllowed = math.Round(cl.BilledAmount*out.Ratio*100) / 100
	out.Drift = r.ref.check(cl, t)
}
