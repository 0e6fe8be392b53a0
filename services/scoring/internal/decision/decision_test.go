package decision

import (
	"errors"
	"testing"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

func TestRoutePrecedence(t *testing.T) {
	officeVisit := claim.Claim{PayerID: 60054, CPTCode: "99214", BilledAmount: 245, Units: 1}
	for _, tc := range []struct {
		name       string
		explicit   string
		hint       string
		wantSource string
		want       model.Profile
	}{
		{"explicit wins over a hint", "synthetic_v1", "medicare", RoutedExplicit, model.SyntheticV1},
		{"hint naming a profile", "", "cms_v1", RoutedDataSource, model.CMSV1},
		{"medicare hint", "", "Medicare FFS", RoutedDataSource, model.CMSV1},
		{"medicaid hint", "", "state medicaid", RoutedDataSource, model.CMSV1},
		{"commercial hint", "", "commercial_ppo", RoutedDataSource, model.CommercialBeta},
		{"synthetic hint", "", "synthetic", RoutedDataSource, model.SyntheticV1},
	} {
		c := officeVisit
		c.DataSource = tc.hint
		explicit, err := Options{DistributionProfile: tc.explicit}.check()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, source := Route(&c, explicit)
		if got != tc.want || source != tc.wantSource {
			t.Errorf("%s: got %s/%s, want %s/%s", tc.name, got, source, tc.want, tc.wantSource)
		}
	}
	// Without explicit profile or usable hint, detection decides, or the default applies.
	c := officeVisit
	c.DataSource = "clearinghouse-7"
	got, source := Route(&c, "")
	detected, ok := model.DetectProfile(&c)
	switch {
	case ok && (source != RoutedDetected || got != detected):
		t.Errorf("detected %s, routed %s/%s", detected, got, source)
	case !ok && (source != RoutedDefault || got != DefaultProfile):
		t.Errorf("undetected claim routed %s/%s, want the default", got, source)
	}
	if _, err := (Options{DistributionProfile: "medicare"}).check(); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("unknown explicit profile: %v", err)
	}
}

func TestPick(t *testing.T) {
	served := func(v string) bool { return v == "0.3.3" || v == "0.3.2" }
	for _, tc := range []struct {
		name            string
		o               Options
		want, fellFrom  string
		wantUnavailable bool
	}{
		{"no pin", Options{AllowFallback: true}, "0.3.3", "", false},
		{"served pin", Options{ModelVersion: "0.3.2"}, "0.3.2", "", false},
		{"unavailable pin falls back", Options{ModelVersion: "9.9.9", AllowFallback: true}, "0.3.3", "9.9.9", false},
		{"strict unavailable pin", Options{ModelVersion: "9.9.9"}, "", "", true},
	} {
		got, fell, err := pick(claim.Denial, "0.3.3", tc.o, served)
		if got != tc.want || fell != tc.fellFrom || errors.Is(err, ErrPinUnavailable) != tc.wantUnavailable {
			t.Errorf("%s: got %q %q %v", tc.name, got, fell, err)
		}
	}
}

func TestRiskLevels(t *testing.T) {
	for _, tc := range []struct {
		p, threshold float64
		want         string
	}{
		{0.26, 0.26, "high"}, {0.30, 0.26, "high"}, {0.13, 0.26, "medium"}, {0.2599, 0.26, "medium"}, {0.1299, 0.26, "low"}, {0, 0.26, "low"},
	} {
		if got := classifierRisk(tc.p, tc.threshold); got != tc.want {
			t.Errorf("classifierRisk(%v, %v) = %s, want %s", tc.p, tc.threshold, got, tc.want)
		}
	}
}

func TestDecideDenialUsesTableAndOverride(t *testing.T) {
	models := loadModels(t)
	c := claim.Claim{ExternalClaimID: "c", PayerID: 60054, ProviderID: 1, CPTCode: "99214", ICD10Code: "E11.9", BilledAmount: 245, Units: 1, NetworkStatus: "in_network"}
	for profile, row := range Thresholds {
		for i, op := range OperatingPoints {
			d, err := New(models, nil, Config{}).Decide(claim.Denial, &c, Options{OperatingPoint: op, DistributionProfile: string(profile), AllowFallback: true})
			if err != nil || d.Denial.Threshold != row[i] || d.Denial.ThresholdSource != "profile_table" || d.Denial.PredictedDenial != (d.Denial.Probability >= row[i]) {
				t.Errorf("%s/%s: %+v %v", profile, op, d.Denial, err)
			}
		}
	}
	d, err := New(models, nil, Config{DenialThresholdOverride: 0.5}).Decide(claim.Denial, &c, Options{AllowFallback: true})
	if err != nil || d.Denial.Threshold != 0.5 || d.Denial.ThresholdSource != "deployment_override" {
		t.Errorf("override: %+v %v", d.Denial, err)
	}
	if _, err := New(models, nil, Config{}).Decide(claim.Denial, &c, Options{OperatingPoint: "max"}); !errors.Is(err, fault.ErrInvalid) {
		t.Errorf("unknown operating point: %v", err)
	}
}

// TestFactorDirections: a factor's direction is what it does to the score. Denial and prior auth
// score the modelled probability itself; reimbursement scores 1 - ratio, so a factor that raises the
// expected allowed/billed ratio lowers the risk.
func TestFactorDirections(t *testing.T) {
	models := loadModels(t)
	c := claim.Claim{ExternalClaimID: "c", PayerID: 60054, ProviderID: 1, CPTCode: "72148", ICD10Code: "M54.5", BilledAmount: 1840, Units: 1,
		NetworkStatus: "out_of_network", PlaceOfService: "22"}
	for _, tc := range []struct {
		workflow           claim.Workflow
		positiveRaisesRisk bool
	}{
		{claim.Denial, true},
		{claim.PriorAuth, true},
		{claim.Reimbursement, false},
	} {
		d, err := New(models, nil, Config{}).Decide(tc.workflow, &c, Options{AllowFallback: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.workflow, err)
		}
		if len(d.Factors) == 0 {
			t.Fatalf("%s: no factors", tc.workflow)
		}
		for _, f := range d.Factors {
			want := "increases_risk"
			if (f.Contribution >= 0) != tc.positiveRaisesRisk && f.Contribution != 0 {
				want = "decreases_risk"
			}
			if f.Direction != want {
				t.Errorf("%s: factor %s contributes %v: direction %s, want %s", tc.workflow, f.Name, f.Contribution, f.Direction, want)
			}
		}
	}
}

// TestOptionValuesCheckedForEveryWorkflow: operating_point and distribution_profile steer only the
// denial model, but a value outside their sets is refused whatever the workflow; a known value is
// accepted and ignored where it does not apply.
func TestOptionValuesCheckedForEveryWorkflow(t *testing.T) {
	models := loadModels(t)
	c := claim.Claim{ExternalClaimID: "c", PayerID: 60054, ProviderID: 1, CPTCode: "99214", ICD10Code: "E11.9", BilledAmount: 245, Units: 1, NetworkStatus: "in_network"}
	e := New(models, nil, Config{})
	for _, w := range []claim.Workflow{claim.Denial, claim.PriorAuth, claim.Reimbursement} {
		for _, tc := range []struct {
			name    string
			o       Options
			invalid bool
		}{
			{"none", Options{}, false},
			{"known operating point", Options{OperatingPoint: HighRecall}, false},
			{"known profile", Options{DistributionProfile: "cms_v1"}, false},
			{"unknown operating point", Options{OperatingPoint: "max"}, true},
			{"unknown profile", Options{DistributionProfile: "medicaid"}, true},
		} {
			_, err := e.Decide(w, &c, tc.o)
			if got := errors.Is(err, fault.ErrInvalid); got != tc.invalid || (!tc.invalid && err != nil) {
				t.Errorf("%s, %s: %v, want invalid=%v", w, tc.name, err, tc.invalid)
			}
		}
	}
}

// loadModels loads the embedded model set.
func loadModels(t *testing.T) *model.Set {
	t.Helper()
	models, err := model.Load()
	if err != nil {
		t.Fatal(err)
	}
	return models
}
