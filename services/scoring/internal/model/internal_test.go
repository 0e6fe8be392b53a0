package model

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

func TestPushFactorKeepsTheTopFactorsInRankOrder(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := r.IntN(12)
		all := make([]Factor, n)
		for i := range all {
			// Few distinct magnitudes and both signs, so ties by absolute value are common.
			all[i] = Factor{Name: "f" + strconv.Itoa(r.IntN(50)), Contribution: float64(r.IntN(5)-2) / 2}
		}
		var fs [MaxFactors]Factor
		var got int
		for _, f := range all {
			pushFactor(&fs, &got, f)
		}
		want := slices.SortedFunc(slices.Values(all), func(a, b Factor) int {
			if ranksBefore(a, b) {
				return -1
			}
			if ranksBefore(b, a) {
				return 1
			}
			return cmp.Compare(a.Contribution, b.Contribution)
		})
		want = want[:min(len(want), MaxFactors)]
		if got != len(want) {
			t.Fatalf("trial %d: got %d factors, want %d", trial, got, len(want))
		}
		for i := range want {
			if fs[i].Name != want[i].Name || abs(fs[i].Contribution) != abs(want[i].Contribution) {
				t.Fatalf("trial %d: got %+v, want %+v", trial, fs[:got], want)
			}
		}
	}
}

func abs(x float64) float64 { return max(x, -x) }

func TestFamilyOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code string
		want Family
	}{
		{"99202", FamilyEM}, {"99499", FamilyEM}, {"99201", FamilyOther}, {"99500", FamilyOther},
		{"70010", FamilyImaging}, {"79999", FamilyImaging},
		{"10004", FamilySurgery}, {"69990", FamilySurgery}, {"10003", FamilyOther}, {"69991", FamilyOther},
		{"97010", FamilyPT}, {"97799", FamilyPT}, {"96999", FamilyOther},
		{"80047", FamilyLab}, {"89398", FamilyLab}, {"89399", FamilyOther},
		{"E0601", FamilyDME}, {"K0001", FamilyDME}, {"L1832", FamilyDME},
		{"J9035", FamilyDrug},
		{"A4253", FamilyOther}, {"00100", FamilyOther}, {"0042T", FamilyOther}, {"3074F", FamilyOther},
		{"9921", FamilyOther}, {"", FamilyOther}, {"992131", FamilyOther},
	} {
		if got := FamilyOf(tc.code); got != tc.want {
			t.Errorf("FamilyOf(%q): got %v, want %v", tc.code, got, tc.want)
		}
	}
}

func TestBucketOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		id   int64
		want Bucket
	}{
		{999, BucketUnknown}, {1000, BucketMedicare}, {1499, BucketMedicare}, {1500, BucketMedicaid},
		{1999, BucketMedicaid}, {2000, BucketLargeCommercial}, {3999, BucketSmallCommercial},
		{4000, BucketUnknown}, {9000, BucketSandbox}, {10000, BucketUnknown}, {-1, BucketUnknown},
	} {
		if got := BucketOf(tc.id); got != tc.want {
			t.Errorf("BucketOf(%d): got %v, want %v", tc.id, got, tc.want)
		}
	}
	for _, id := range KnownPayers {
		if BucketOf(id) == BucketUnknown {
			t.Errorf("known payer %d has no bucket", id)
		}
	}
}

func TestFeatureNamesAreUniqueAndComplete(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := range NumFeatures {
		name := FeatureName(i)
		if name == "" || featureLabels[i] == "" || seen[name] {
			t.Errorf("feature %d: name %q label %q (duplicate %v)", i, name, featureLabels[i], seen[name])
		}
		seen[name] = true
		if featureIndex(name) != i {
			t.Errorf("featureIndex(%q): got %d, want %d", name, featureIndex(name), i)
		}
	}
}
