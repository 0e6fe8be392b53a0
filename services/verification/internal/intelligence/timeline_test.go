package intelligence

import "testing"

func TestPointDiffHighestRisk(t *testing.T) {
	var d PointDiff
	if got := d.HighestRisk(); got != "" {
		t.Fatalf("empty diff: %q", got)
	}
	d.Changes = []FieldChange{{Risk: RiskLow}, {Risk: RiskMedium}}
	if got := d.HighestRisk(); got != RiskMedium {
		t.Fatalf("version changes only: %q", got)
	}
	d.Surface = []SurfaceChange{{FieldChange: FieldChange{Risk: RiskHigh}}}
	if got := d.HighestRisk(); got != RiskHigh {
		t.Fatalf("surface change higher: %q", got)
	}
	d.Changes = nil
	d.Surface = []SurfaceChange{{FieldChange: FieldChange{Risk: RiskLow}}}
	if got := d.HighestRisk(); got != RiskLow {
		t.Fatalf("surface changes only: %q", got)
	}
}
