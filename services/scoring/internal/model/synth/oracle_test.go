package synth

import (
	"math"
	"testing"

	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

// TestOracleProbabilities: the probabilities the generator records are the ones its labels follow.
// Their means match the label rates within sampling error, and averaging out the hidden parts keeps
// the mean (the payload-only probability is a conditional expectation of the true one).
func TestOracleProbabilities(t *testing.T) {
	t.Parallel()
	for _, p := range model.Profiles {
		recs, err := Generate(p, 20_000, 5)
		if err != nil {
			t.Fatal(err)
		}
		var denied, pTrue, pPayload, pa, paTrue, allowedMedianErr float64
		for i := range recs {
			r := &recs[i]
			for _, v := range []float64{r.DenialProbability, r.DenialPayloadProbability, r.PriorAuthProbability} {
				if !(v > 0 && v < 1) {
					t.Fatalf("%s claim %d: probability %v outside (0, 1)", p, i, v)
				}
			}
			if r.Claim.Units > unitLimit[model.FamilyOf(r.Claim.CPTCode)] != (r.Claim.Units > model.UnitLimit[model.FamilyOf(r.Claim.CPTCode)]) {
				t.Fatalf("%s claim %d: synth and the code book disagree on the unit limit", p, i)
			}
			denied += indicator(r.Denied)
			pTrue += r.DenialProbability
			pPayload += r.DenialPayloadProbability
			pa += indicator(r.PriorAuthRequired)
			paTrue += r.PriorAuthProbability
			// Noise is log-normal with sd 0.10: the median allowed is within a few percent of the draw.
			median := r.Claim.BilledAmount * math.Exp(min(r.AllowedLogRatio, 0))
			allowedMedianErr += math.Abs(median-r.AllowedAmount) / r.AllowedAmount
		}
		n := float64(len(recs))
		for _, c := range []struct {
			name      string
			got, want float64
			tol       float64
		}{
			{"mean true denial probability vs denial rate", pTrue / n, denied / n, 0.01},
			{"mean payload-only vs true denial probability", pPayload / n, pTrue / n, 0.005},
			{"mean prior-auth probability vs rate", paTrue / n, pa / n, 0.012},
			{"relative gap of the conditional median", allowedMedianErr / n, 0.08, 0.03},
		} {
			if math.Abs(c.got-c.want) > c.tol {
				t.Errorf("%s: %s: got %.4f, want %.4f ± %.3f", p, c.name, c.got, c.want, c.tol)
			}
		}
	}
}

func indicator(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
