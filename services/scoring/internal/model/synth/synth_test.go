package synth

import (
	"slices"
	"testing"

	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

func TestPayerRulesFollowTheCodeBook(t *testing.T) {
	t.Parallel()
	for i, pr := range payerRules {
		if pr.id != model.KnownPayers[i] {
			t.Errorf("payerRules[%d]: got id %d, want %d", i, pr.id, model.KnownPayers[i])
		}
	}
	for p, pop := range populations {
		for _, w := range pop.payers {
			if !slices.Contains(model.KnownPayers[:], w.value) {
				t.Errorf("%s: payer %d is not in the code book", p, w.value)
			}
		}
	}
	for f, codes := range familyCodes {
		for _, c := range codes {
			if got := model.FamilyOf(c); got != model.Family(f) {
				t.Errorf("code %s listed under %v: got family %v", c, model.Family(f), got)
			}
		}
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	t.Parallel()
	for _, p := range model.Profiles {
		a, err := Generate(p, 500, 42)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Generate(p, 500, 42)
		prefix, _ := Generate(p, 100, 42)
		other, _ := Generate(p, 500, 43)
		if !slices.Equal(a, b) {
			t.Errorf("%s: two runs with one seed differ", p)
		}
		if !slices.Equal(a[:100], prefix) {
			t.Errorf("%s: the first 100 claims of 500 differ from a run of 100", p)
		}
		if slices.Equal(a, other) {
			t.Errorf("%s: seeds 42 and 43 gave the same claims", p)
		}
	}
	if _, err := Generate("medicare_v9", 10, 1); err == nil {
		t.Error("Generate(medicare_v9): got no error")
	}
}

// TestPopulationsAreDistinct checks the properties routing and the models rely on: each profile's
// payer buckets, its amount band, and label rates in a plausible range.
func TestPopulationsAreDistinct(t *testing.T) {
	t.Parallel()
	const n = 20_000
	for _, tc := range []struct {
		profile       model.Profile
		buckets       []model.Bucket
		medianAmount  [2]float64 // bounds of the median log per-unit charge over the reference
		denial, prior [2]float64 // bounds of the label rates
	}{
		{model.SyntheticV1, []model.Bucket{model.BucketMedicare, model.BucketMedicaid, model.BucketLargeCommercial, model.BucketSmallCommercial, model.BucketSandbox},
			[2]float64{0.3, 0.5}, [2]float64{0.12, 0.28}, [2]float64{0.2, 0.5}},
		{model.CMSV1, []model.Bucket{model.BucketMedicare, model.BucketMedicaid},
			[2]float64{-0.05, 0.05}, [2]float64{0.1, 0.25}, [2]float64{0.1, 0.35}},
		{model.CommercialBeta, []model.Bucket{model.BucketLargeCommercial, model.BucketSmallCommercial},
			[2]float64{0.74, 0.84}, [2]float64{0.15, 0.3}, [2]float64{0.3, 0.6}},
	} {
		recs, err := Generate(tc.profile, n, 1)
		if err != nil {
			t.Fatal(err)
		}
		var denied, pa int
		amounts := make([]float64, 0, n)
		seen := map[model.Bucket]bool{}
		var v model.Vector
		for i := range recs {
			r := &recs[i]
			tr := model.Extract(&r.Claim, r.Signals, &v)
			seen[tr.Bucket] = true
			amounts = append(amounts, tr.Amount)
			if tr.Family == model.FamilyOther || tr.PlaceOfService < 0 {
				t.Fatalf("%s claim %s: family %v, place of service %q", tc.profile, r.Claim.ExternalClaimID, tr.Family, r.Claim.PlaceOfService)
			}
			if r.AllowedAmount <= 0 || r.AllowedAmount > r.Claim.BilledAmount || r.Claim.Units < 1 {
				t.Fatalf("%s claim %s: billed %v allowed %v units %v", tc.profile, r.Claim.ExternalClaimID, r.Claim.BilledAmount, r.AllowedAmount, r.Claim.Units)
			}
			if r.Signals.PriorAuthAdded && r.Signals.PriorAuthRemoved {
				t.Fatalf("%s claim %s: prior auth both added and removed", tc.profile, r.Claim.ExternalClaimID)
			}
			if r.Denied {
				denied++
			}
			if r.PriorAuthRequired {
				pa++
			}
		}
		var got []model.Bucket
		for b := range seen {
			got = append(got, b)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.buckets) {
			t.Errorf("%s: got payer buckets %v, want %v", tc.profile, got, tc.buckets)
		}
		slices.Sort(amounts)
		if m := amounts[n/2]; m < tc.medianAmount[0] || m > tc.medianAmount[1] {
			t.Errorf("%s: got median log per-unit charge %v, want within %v", tc.profile, m, tc.medianAmount)
		}
		if r := float64(denied) / n; r < tc.denial[0] || r > tc.denial[1] {
			t.Errorf("%s: got denial rate %v, want within %v", tc.profile, r, tc.denial)
		}
		if r := float64(pa) / n; r < tc.prior[0] || r > tc.prior[1] {
			t.Errorf("%s: got prior-auth rate %v, want within %v", tc.profile, r, tc.prior)
		}
	}
}
