package model_test

import (
	"bytes"
	"os"
	"slices"
	"testing"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

// Claims typical of each synthetic population.
var (
	cmsVisit = claim.Claim{
		ExternalClaimID: "c-1", PayerID: 1001, ProviderID: 2_000_001, CPTCode: "99213", ICD10Code: "I10.0",
		BilledAmount: 115, Units: 1, PlaceOfService: "11", NetworkStatus: model.InNetwork,
	}
	commercialMRI = claim.Claim{
		ExternalClaimID: "c-2", PayerID: 2001, ProviderID: 3_000_001, CPTCode: "73721", ICD10Code: "M17.1",
		BilledAmount: 528, Units: 1, PlaceOfService: "22", NetworkStatus: model.InNetwork,
	}
	sandboxTherapy = claim.Claim{
		ExternalClaimID: "c-3", PayerID: 9001, ProviderID: 1_000_001, CPTCode: "97110", ICD10Code: "M54.5",
		BilledAmount: 105, Units: 2, PlaceOfService: "11", NetworkStatus: model.InNetwork,
	}
)

func load(t testing.TB) *model.Set {
	t.Helper()
	s, err := model.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return s
}

func denial(t testing.TB, p model.Profile) *model.Classifier {
	t.Helper()
	c, ok := load(t).Denial(model.DenialVersion, p)
	if !ok {
		t.Fatalf("Denial(%s, %s) missing", model.DenialVersion, p)
	}
	return c
}

func priorAuth(t testing.TB) *model.Classifier {
	t.Helper()
	c, ok := load(t).PriorAuth(model.PriorAuthVersion)
	if !ok {
		t.Fatalf("PriorAuth(%s) missing", model.PriorAuthVersion)
	}
	return c
}

func reimbursement(t testing.TB) *model.Regressor {
	t.Helper()
	r, ok := load(t).Reimbursement(model.ReimbursementVersion)
	if !ok {
		t.Fatalf("Reimbursement(%s) missing", model.ReimbursementVersion)
	}
	return r
}

func TestLoadHasEveryCurrentModel(t *testing.T) {
	t.Parallel()
	s := load(t)
	for _, p := range model.Profiles {
		c, ok := s.Denial(model.DenialVersion, p)
		if !ok {
			t.Fatalf("denial %s missing", p)
		}
		if c.Version != model.DenialVersion || c.Profile != p || c.CalibrationMethod != model.CalibrationPlatt ||
			c.CalibrationVersion != model.CalibrationPlattVersion {
			t.Errorf("denial %s: got version %q profile %q calibration %q/%q", p, c.Version, c.Profile, c.CalibrationMethod, c.CalibrationVersion)
		}
		if !(0 < c.TierMedium && c.TierMedium < c.TierHigh && c.TierHigh < 1) {
			t.Errorf("denial %s: got tiers medium %v high %v, want 0 < medium < high < 1", p, c.TierMedium, c.TierHigh)
		}
	}
	pa := priorAuth(t)
	if pa.Version != model.PriorAuthVersion || pa.CalibrationMethod != model.CalibrationIsotonic || pa.CalibrationVersion != model.CalibrationIsotonicVersion {
		t.Errorf("prior auth: got version %q calibration %q/%q", pa.Version, pa.CalibrationMethod, pa.CalibrationVersion)
	}
	if r := reimbursement(t); r.Version != model.ReimbursementVersion {
		t.Errorf("reimbursement: got version %q", r.Version)
	}
	if _, ok := s.Denial("0.0.0", model.CMSV1); ok {
		t.Error("Denial(0.0.0) found, want missing")
	}
	if _, ok := s.PriorAuth(model.DenialVersion); ok {
		t.Error("PriorAuth(denial version) found, want missing")
	}
	if _, ok := s.Reimbursement(model.PriorAuthVersion); ok {
		t.Error("Reimbursement(prior-auth version) found, want missing")
	}
}

func TestCards(t *testing.T) {
	t.Parallel()
	cards := load(t).Cards()
	type key struct {
		workflow claim.Workflow
		version  string
		profile  model.Profile
	}
	var got []key
	for _, c := range cards {
		got = append(got, key{c.Workflow, c.Version, c.Profile})
		if c.IntendedUse != model.IntendedUse {
			t.Errorf("%s %s: got intended use %q", c.Workflow, c.Profile, c.IntendedUse)
		}
		if c.Samples.Train == 0 || c.Samples.Test == 0 {
			t.Errorf("%s %s: got samples %+v, want train and test", c.Workflow, c.Profile, c.Samples)
		}
		if c.Workflow == claim.Reimbursement {
			if c.ReliabilityPNG != "" || c.Regression == nil {
				t.Errorf("reimbursement card: got png %q regression %v", c.ReliabilityPNG, c.Regression)
			}
			continue
		}
		if !bytes.HasPrefix(c.ReliabilityPNGData, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("%s %s: reliability diagram %q is not a PNG", c.Workflow, c.Profile, c.ReliabilityPNG)
		}
	}
	want := []key{
		{claim.Denial, model.DenialVersion, model.SyntheticV1}, {claim.Denial, model.DenialVersion, model.CMSV1},
		{claim.Denial, model.DenialVersion, model.CommercialBeta},
		{claim.Denial, model.DenialVersionNext, model.SyntheticV1}, {claim.Denial, model.DenialVersionNext, model.CMSV1},
		{claim.Denial, model.DenialVersionNext, model.CommercialBeta},
		{claim.PriorAuth, model.PriorAuthVersion, ""}, {claim.PriorAuth, model.PriorAuthVersionNext, ""},
		{claim.Reimbursement, model.ReimbursementVersion, ""}, {claim.Reimbursement, model.ReimbursementVersionNext, ""},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got cards %v, want %v", got, want)
	}
}

// TestMetrics holds the committed models to the quality the product relies on; train's
// reproducibility test makes sure these numbers are what the code produces.
func TestMetrics(t *testing.T) {
	t.Parallel()
	for _, c := range load(t).Cards() {
		if m := c.Classification; m != nil {
			if m.AUC <= 0.7 {
				t.Errorf("%s %s: got AUC %v, want > 0.7", c.Workflow, c.Profile, m.AUC)
			}
			if m.ECE >= 0.05 {
				t.Errorf("%s %s: got ECE %v, want < 0.05", c.Workflow, c.Profile, m.ECE)
			}
			if m.Brier >= m.PositiveRate*(1-m.PositiveRate) {
				t.Errorf("%s %s: got Brier %v, want below the base-rate forecast's %v", c.Workflow, c.Profile, m.Brier, m.PositiveRate*(1-m.PositiveRate))
			}
		}
		if m := c.Regression; m != nil && (m.MAPE >= 0.25 || m.MAE >= m.MedianAllowed) {
			t.Errorf("%s: got MAE %v MAPE %v (median allowed %v), want MAPE < 0.25 and MAE below the median", c.Workflow, m.MAE, m.MAPE, m.MedianAllowed)
		}
		if r := c.Routing; r != nil && r.Own < 0.5 {
			t.Errorf("%s %s: got %v of its own claims routed to it, want at least half", c.Workflow, c.Profile, r.Own)
		}
	}
}

func TestScoreIsDeterministic(t *testing.T) {
	t.Parallel()
	// A second, independent load of the same files must score identically to the embedded one.
	other, err := model.LoadFS(os.DirFS("artifacts"))
	if err != nil {
		t.Fatalf("LoadFS: %v", err)
	}
	sig := model.Signals{PriorAuthAdded: true}
	for _, p := range model.Profiles {
		a := denial(t, p)
		b, _ := other.Denial(model.DenialVersion, p)
		for _, cl := range []claim.Claim{cmsVisit, commercialMRI, sandboxTherapy} {
			var first, again, independent model.Result
			a.Score(&cl, sig, &first)
			a.Score(&commercialMRI, model.Signals{}, &again) // leave other values behind in out
			a.Score(&cl, sig, &again)
			b.Score(&cl, sig, &independent)
			if first != again || first != independent {
				t.Errorf("%s %s: got %+v, then %+v, then %+v from a second load", p, cl.ExternalClaimID, first, again, independent)
			}
		}
	}
	var first, again model.Estimate
	r := reimbursement(t)
	r.Estimate(&commercialMRI, &first)
	r.Estimate(&cmsVisit, &again)
	r.Estimate(&commercialMRI, &again)
	if first != again {
		t.Errorf("Estimate: got %+v then %+v", first, again)
	}
}

func TestScoreResult(t *testing.T) {
	t.Parallel()
	for _, p := range model.Profiles {
		var res model.Result
		denial(t, p).Score(&commercialMRI, model.Signals{}, &res)
		if !(0 < res.Probability && res.Probability < 1 && 0 < res.Raw && res.Raw < 1) {
			t.Errorf("%s: got probability %v raw %v, want both in (0, 1)", p, res.Probability, res.Raw)
		}
		if res.NFactors < 1 || res.NFactors > model.MaxFactors {
			t.Fatalf("%s: got %d factors, want 1-%d", p, res.NFactors, model.MaxFactors)
		}
		for i := 1; i < res.NFactors; i++ {
			a, b := res.Factors[i-1], res.Factors[i]
			if abs(a.Contribution) < abs(b.Contribution) {
				t.Errorf("%s: factor %d %+v ranks above %+v", p, i, a, b)
			}
		}
		for _, f := range res.Factors[res.NFactors:] {
			if f != (model.Factor{}) {
				t.Errorf("%s: got factor %+v beyond NFactors", p, f)
			}
		}
	}
}

func abs(x float64) float64 { return max(x, -x) }

func TestDenialReadsDiagnosisMismatch(t *testing.T) {
	t.Parallel()
	mismatch := cmsVisit
	mismatch.CPTCode, mismatch.ICD10Code, mismatch.BilledAmount = "73721", "O80.0", 240 // knee MRI for a delivery
	typical := mismatch
	typical.ICD10Code = "M17.1"
	var a, b model.Result
	c := denial(t, model.CMSV1)
	c.Score(&mismatch, model.Signals{}, &a)
	c.Score(&typical, model.Signals{}, &b)
	if a.Probability <= b.Probability {
		t.Errorf("got %v with an atypical diagnosis and %v with a typical one, want the first higher", a.Probability, b.Probability)
	}
	if a.Factors[0].Name != "icd10 atypical for cpt family" {
		t.Errorf("got top factor %+v, want the diagnosis mismatch", a.Factors[0])
	}
}

func TestPriorAuthFollowsPolicySignals(t *testing.T) {
	t.Parallel()
	c := priorAuth(t)
	var none, added, removed model.Result
	c.Score(&commercialMRI, model.Signals{}, &none)
	c.Score(&commercialMRI, model.Signals{PriorAuthAdded: true}, &added)
	c.Score(&commercialMRI, model.Signals{PriorAuthRemoved: true}, &removed)
	if !(removed.Probability < none.Probability && none.Probability < added.Probability) {
		t.Errorf("got removed %v, none %v, added %v, want increasing", removed.Probability, none.Probability, added.Probability)
	}
	if added.Factors[0].Name != "policy change: prior_auth_added" {
		t.Errorf("got top factor %+v, want the policy change", added.Factors[0])
	}
	// Denial models ignore the signals.
	var d1, d2 model.Result
	dc := denial(t, model.CommercialBeta)
	dc.Score(&commercialMRI, model.Signals{}, &d1)
	dc.Score(&commercialMRI, model.Signals{PriorAuthAdded: true}, &d2)
	if d1 != d2 {
		t.Errorf("denial: got %+v without signals and %+v with, want equal", d1, d2)
	}
}

func TestTier(t *testing.T) {
	t.Parallel()
	c := denial(t, model.CMSV1)
	for _, tc := range []struct {
		p    float64
		want string
	}{
		{1, model.TierHigh},
		{c.TierHigh, model.TierHigh},
		{c.TierHigh - 1e-9, model.TierMedium},
		{c.TierMedium, model.TierMedium},
		{c.TierMedium - 1e-9, model.TierLow},
		{0, model.TierLow},
	} {
		if got := c.Tier(tc.p); got != tc.want {
			t.Errorf("Tier(%v) with cut-offs %v/%v: got %q, want %q", tc.p, c.TierHigh, c.TierMedium, got, tc.want)
		}
	}
}

func TestSupportLevel(t *testing.T) {
	t.Parallel()
	c := priorAuth(t)
	for _, tc := range []struct {
		payer int64
		want  string
	}{
		{9001, model.SupportHigh},     // sandbox, the most rows
		{2006, model.SupportHigh},     // just above 2,500 rows
		{1006, model.SupportModerate}, // just below 2,500
		{3003, model.SupportModerate}, // just above 1,000
		{1008, model.SupportLow},      // just below 1,000
		{3005, model.SupportLow},      // the fewest rows
		{4242, model.SupportLow},      // never seen
		{0, model.SupportLow},
	} {
		if got := c.SupportLevel(tc.payer); got != tc.want {
			t.Errorf("SupportLevel(%d) with %d rows: got %q, want %q", tc.payer, c.PayerRows(tc.payer), got, tc.want)
		}
	}
}

func TestDetectProfile(t *testing.T) {
	t.Parallel()
	with := func(c claim.Claim, payer int64, code string, billed, units float64) claim.Claim {
		c.PayerID, c.CPTCode, c.BilledAmount, c.Units = payer, code, billed, units
		return c
	}
	for _, tc := range []struct {
		name   string
		claim  claim.Claim
		want   model.Profile
		wantOK bool
	}{
		{"medicare at the CMS reference", with(cmsVisit, 1001, "99213", 110, 1), model.CMSV1, true},
		{"medicaid in the gap between bands", with(cmsVisit, 1503, "99213", 165, 1), model.CMSV1, true},
		{"medicare at a commercial amount", with(cmsVisit, 1001, "99213", 242, 1), "", false},
		{"commercial at a commercial amount", with(cmsVisit, 2001, "73721", 528, 1), model.CommercialBeta, true},
		{"small commercial in the gap", with(cmsVisit, 3004, "73721", 360, 1), model.CommercialBeta, true},
		{"commercial at the CMS reference", with(cmsVisit, 2001, "73721", 240, 1), "", false},
		{"sandbox payer at any amount", with(cmsVisit, 9002, "99213", 5000, 1), model.SyntheticV1, true},
		{"unknown payer, CMS band", with(cmsVisit, 5555, "J9035", 45, 1), model.CMSV1, true},
		{"unknown payer, commercial band", with(cmsVisit, 5555, "E0601", 396, 1), model.CommercialBeta, true},
		{"unknown payer in the gap", with(cmsVisit, 5555, "80053", 37.5, 1), "", false},
		{"unknown payer, per-unit amount", with(cmsVisit, 5555, "97110", 140, 4), model.CMSV1, true},
		{"anesthesia code matches no population", with(cmsVisit, 9001, "00100", 500, 1), "", false},
		{"category III code", with(cmsVisit, 1001, "0042T", 110, 1), "", false},
	} {
		got, ok := model.DetectProfile(&tc.claim)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("%s: got (%q, %v), want (%q, %v)", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestParseProfile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in     string
		want   model.Profile
		wantOK bool
	}{
		{"synthetic_v1", model.SyntheticV1, true},
		{"cms_v1", model.CMSV1, true},
		{"commercial_beta", model.CommercialBeta, true},
		{"CMS_V1", "", false},
		{"", "", false},
	} {
		if got, ok := model.ParseProfile(tc.in); got != tc.want || ok != tc.wantOK {
			t.Errorf("ParseProfile(%q): got (%q, %v), want (%q, %v)", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestDrift(t *testing.T) {
	t.Parallel()
	with := func(f func(*claim.Claim)) claim.Claim {
		c := cmsVisit
		f(&c)
		return c
	}
	pa, cms := priorAuth(t), denial(t, model.CMSV1)
	for _, tc := range []struct {
		name  string
		model *model.Classifier
		claim claim.Claim
		want  model.Drift
	}{
		{"typical claim", pa, cmsVisit, 0},
		{"absent place of service", pa, with(func(c *claim.Claim) { c.PlaceOfService = "" }), 0},
		{"billed amount outlier", pa, with(func(c *claim.Claim) { c.BilledAmount = 100_000 }), model.DriftBilledAmount},
		{"units outlier", pa, with(func(c *claim.Claim) { c.Units, c.BilledAmount = 3, 330 }), model.DriftUnits},
		{"unseen payer", pa, with(func(c *claim.Claim) { c.PayerID = 4242 }), model.DriftUnseenPayer},
		{"unseen code family", pa, with(func(c *claim.Claim) { c.CPTCode = "00100" }), model.DriftUnseenCPTFamily},
		{"unseen place of service", pa, with(func(c *claim.Claim) { c.PlaceOfService = "99" }), model.DriftUnseenPlaceOfService},
		{"commercial payer on the cms_v1 model", cms, with(func(c *claim.Claim) { c.PayerID = 2001 }), model.DriftUnseenPayer},
		{"zero units", pa, with(func(c *claim.Claim) { c.Units = 0 }), model.DriftUnits},
	} {
		var res model.Result
		tc.model.Score(&tc.claim, model.Signals{}, &res)
		if res.Drift != tc.want {
			t.Errorf("%s: got drift %v, want %v", tc.name, res.Drift.Names(), tc.want.Names())
		}
	}
	var est model.Estimate
	c := with(func(c *claim.Claim) { c.PayerID = 4242 })
	reimbursement(t).Estimate(&c, &est)
	if est.Drift != model.DriftUnseenPayer {
		t.Errorf("Estimate: got drift %v, want unseen_payer", est.Drift.Names())
	}
}

func TestDriftNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    model.Drift
		want []string
	}{
		{0, []string{}},
		{model.DriftUnits | model.DriftUnseenPayer, []string{"units_out_of_range", "unseen_payer"}},
		{model.DriftBilledAmount | model.DriftUnits | model.DriftUnseenCPTFamily | model.DriftUnseenPayer | model.DriftUnseenPlaceOfService,
			[]string{"billed_amount_out_of_range", "units_out_of_range", "unseen_cpt_family", "unseen_payer", "unseen_place_of_service"}},
	} {
		got := tc.d.Names()
		if got == nil || !slices.Equal(got, tc.want) {
			t.Errorf("Drift(%d).Names(): got %#v, want %#v", tc.d, got, tc.want)
		}
	}
}

func TestEstimate(t *testing.T) {
	t.Parallel()
	r := reimbursement(t)
	var inNet, outNet, medicare model.Estimate
	r.Estimate(&commercialMRI, &inNet)
	oon := commercialMRI
	oon.NetworkStatus = model.OutOfNetwork
	r.Estimate(&oon, &outNet)
	gov := commercialMRI
	gov.PayerID = 1001
	r.Estimate(&gov, &medicare)
	for _, e := range []model.Estimate{inNet, outNet, medicare} {
		if e.Ratio <= 0 || e.Ratio > 1 {
			t.Errorf("got ratio %v, want in (0, 1]", e.Ratio)
		}
		if want := float64(int64(commercialMRI.BilledAmount*e.Ratio*100+0.5)) / 100; e.ExpectedAllowed != want {
			t.Errorf("got expected allowed %v, want billed × ratio in cents %v", e.ExpectedAllowed, want)
		}
	}
	if outNet.Ratio >= inNet.Ratio || medicare.Ratio >= inNet.Ratio {
		t.Errorf("got ratios in network %v, out of network %v, Medicare %v; want in-network commercial highest", inNet.Ratio, outNet.Ratio, medicare.Ratio)
	}
}

func TestZeroAllocations(t *testing.T) {
	// Not parallel: AllocsPerRun counts every allocation in the process.
	d, pa, r := denial(t, model.CommercialBeta), priorAuth(t), reimbursement(t)
	var res model.Result
	var est model.Estimate
	cl := commercialMRI
	cl.PayerID, cl.PlaceOfService = 4242, "99" // drift paths too
	for name, f := range map[string]func(){
		"denial Score":          func() { d.Score(&commercialMRI, model.Signals{}, &res) },
		"denial Score, drift":   func() { d.Score(&cl, model.Signals{}, &res) },
		"prior-auth Score":      func() { pa.Score(&commercialMRI, model.Signals{PriorAuthAdded: true}, &res) },
		"reimbursement":         func() { r.Estimate(&commercialMRI, &est) },
		"DetectProfile":         func() { model.DetectProfile(&commercialMRI) },
		"Tier and SupportLevel": func() { _, _ = pa.Tier(0.5), pa.SupportLevel(2001) },
	} {
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s: got %v allocations per run, want 0", name, n)
		}
	}
}

func BenchmarkDenialScore(b *testing.B) {
	c := denial(b, model.CommercialBeta)
	var res model.Result
	b.ReportAllocs()
	for b.Loop() {
		c.Score(&commercialMRI, model.Signals{}, &res)
	}
}

func BenchmarkPriorAuthScore(b *testing.B) {
	c := priorAuth(b)
	var res model.Result
	b.ReportAllocs()
	for b.Loop() {
		c.Score(&commercialMRI, model.Signals{PriorAuthAdded: true}, &res)
	}
}

func BenchmarkReimbursementEstimate(b *testing.B) {
	r := reimbursement(b)
	var est model.Estimate
	b.ReportAllocs()
	for b.Loop() {
		r.Estimate(&commercialMRI, &est)
	}
}

func BenchmarkDetectProfile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		model.DetectProfile(&commercialMRI)
	}
}
