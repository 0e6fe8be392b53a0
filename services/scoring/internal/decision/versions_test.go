package decision

import (
	"cmp"
	"slices"
	"testing"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model/synth"
	"github.com/trustlayer/trustlayer/services/scoring/internal/policysignal"
)

func TestDefaultVersionsAndPins(t *testing.T) {
	models := loadModels(t)
	c := claim.Claim{ExternalClaimID: "c", PayerID: 1001, ProviderID: 1, CPTCode: "99214", ICD10Code: "E11.9", BilledAmount: 245, Units: 1, NetworkStatus: "in_network"}
	next := Versions{Denial: model.DenialVersionNext, PriorAuth: model.PriorAuthVersionNext, Reimbursement: model.ReimbursementVersionNext}
	for _, tc := range []struct {
		name string
		cfg  Config
		pin  Versions
		want Versions
	}{
		{"spec defaults", Config{}, Versions{}, Versions{model.DenialVersion, model.PriorAuthVersion, model.ReimbursementVersion}},
		{"pinned second generation", Config{}, next, next},
		{"operator moved the default", Config{DefaultVersions: next}, Versions{}, next},
		{"pin of the published version after the move", Config{DefaultVersions: next},
			Versions{model.DenialVersion, model.PriorAuthVersion, model.ReimbursementVersion},
			Versions{model.DenialVersion, model.PriorAuthVersion, model.ReimbursementVersion}},
	} {
		e := New(models, policysignal.NewIndex(), tc.cfg)
		for _, w := range []struct {
			wf        claim.Workflow
			pin, want string
		}{{claim.Denial, tc.pin.Denial, tc.want.Denial}, {claim.PriorAuth, tc.pin.PriorAuth, tc.want.PriorAuth},
			{claim.Reimbursement, tc.pin.Reimbursement, tc.want.Reimbursement}} {
			d, err := e.Decide(w.wf, &c, Options{ModelVersion: w.pin})
			if err != nil || d.ModelVersion != w.want || d.PinnedVersion != "" {
				t.Errorf("%s, %s: got version %q (pinned %q), %v; want %q", tc.name, w.wf, d.ModelVersion, d.PinnedVersion, err, w.want)
			}
			if tc.pin == (Versions{}) && e.Current(w.wf) != w.want {
				t.Errorf("%s, %s: Current got %q, want %q", tc.name, w.wf, e.Current(w.wf), w.want)
			}
		}
	}
	if err := CheckVersions(models, next); err != nil {
		t.Errorf("CheckVersions(second generation): %v", err)
	}
	for _, v := range []Versions{{Denial: "9.9.9"}, {PriorAuth: model.DenialVersion}, {Reimbursement: "0.2.0"}} {
		if err := CheckVersions(models, v); err == nil {
			t.Errorf("CheckVersions(%+v): got nil, want an error", v)
		}
	}
}

// TestHigherScoreNeverGetsALowerLevelOrTier scores synthetic claims with every served version and
// checks, in score order, that risk_level and risk_tier never step down.
func TestHigherScoreNeverGetsALowerLevelOrTier(t *testing.T) {
	models := loadModels(t)
	rank := map[string]int{"low": 0, "medium": 1, "high": 2}
	type row struct {
		score       float64
		level, tier int
	}
	for _, p := range model.Profiles {
		recs, err := synth.Generate(p, 2_000, 11)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{model.DenialVersion, model.DenialVersionNext} {
			for _, op := range OperatingPoints {
				e := New(models, policysignal.NewIndex(), Config{})
				rows := make([]row, 0, len(recs))
				for i := range recs {
					d, err := e.Decide(claim.Denial, &recs[i].Claim, Options{ModelVersion: v, OperatingPoint: op, DistributionProfile: string(p)})
					if err != nil {
						t.Fatal(err)
					}
					rows = append(rows, row{d.Score, rank[d.RiskLevel], rank[d.Denial.RiskTier]})
				}
				slices.SortFunc(rows, func(a, b row) int { return cmp.Compare(a.score, b.score) })
				for i := 1; i < len(rows); i++ {
					a, b := rows[i-1], rows[i]
					if b.score > a.score && (b.level < a.level || b.tier < a.tier) {
						t.Fatalf("%s %s %s: score %v got level/tier %d/%d, lower score %v got %d/%d", v, p, op, b.score, b.level, b.tier, a.score, a.level, a.tier)
					}
				}
			}
		}
	}
}

// TestRoutingFollowsTheVersion: a second-generation denial model detects with
// model.DetectProfileNext; a published one keeps model.DetectProfile, so its answers do not move.
func TestRoutingFollowsTheVersion(t *testing.T) {
	models := loadModels(t)
	e := New(models, policysignal.NewIndex(), Config{})
	// A Medicare-like payer billing an office visit at twice the CMS-like charge: outside the cms_v1
	// window, which DetectProfile leaves undecided (default) and DetectProfileNext reads as synthetic_v1.
	c := claim.Claim{ExternalClaimID: "c", PayerID: 1001, ProviderID: 1, CPTCode: "99213", ICD10Code: "I10.0", BilledAmount: 220, Units: 1, NetworkStatus: "in_network"}
	for _, tc := range []struct {
		version, profile, source string
	}{
		{model.DenialVersion, string(DefaultProfile), RoutedDefault},
		{model.DenialVersionNext, string(model.SyntheticV1), RoutedDetected},
	} {
		d, err := e.Decide(claim.Denial, &c, Options{ModelVersion: tc.version})
		if err != nil || string(d.Denial.Profile) != tc.profile || d.Denial.RoutingSource != tc.source {
			t.Errorf("%s: got %s/%s, %v; want %s/%s", tc.version, d.Denial.Profile, d.Denial.RoutingSource, err, tc.profile, tc.source)
		}
	}
	// An explicit profile is never overridden.
	d, err := e.Decide(claim.Denial, &c, Options{ModelVersion: model.DenialVersionNext, DistributionProfile: string(model.CMSV1)})
	if err != nil || d.Denial.Profile != model.CMSV1 || d.Denial.RoutingSource != RoutedExplicit {
		t.Errorf("explicit: got %s/%s, %v", d.Denial.Profile, d.Denial.RoutingSource, err)
	}
}
