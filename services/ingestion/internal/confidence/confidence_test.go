package confidence

import (
	"math"
	"testing"
)

func TestWeightsSumToOne(t *testing.T) {
	sum := 0.0
	for _, w := range Weights {
		sum += w
	}
	if len(Weights) != 7 || math.Abs(sum-1) > 1e-9 {
		t.Fatalf("got %d components summing to %v, want 7 summing to 1", len(Weights), sum)
	}
}

func TestDecide(t *testing.T) {
	critical := Thresholds{AutoPublish: 0.95, Review: 0.75, Scope: "type"}
	tests := []struct {
		name       string
		confidence float64
		verified   bool
		t          Thresholds
		want       string
	}{
		// The README's own example ("Confidence").
		{"0.725 coverage_removed is rejected under its 0.75 review level", 0.725, true, critical, Rejected},
		{"at the auto-publish level publishes", 0.95, true, critical, AutoPublished},
		{"just below auto-publish waits for review", 0.9499, true, critical, PendingReview},
		{"at the review level waits for review", 0.75, true, critical, PendingReview},
		{"global levels", 0.85, true, GlobalDefault, AutoPublished},
		{"global review band", 0.6, true, GlobalDefault, PendingReview},
		{"below global review", 0.5999, true, GlobalDefault, Rejected},
		{"unverified never publishes", 1, false, GlobalDefault, NoVerifiableEvidence},
	}
	for _, tt := range tests {
		if got := Decide(tt.confidence, tt.verified, tt.t); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestScore(t *testing.T) {
	strong := Input{
		ChangeType: "code_added", EvidenceVerified: true, ClaimedSide: "current", VerifiedSide: "current",
		AffectedCodes: []string{"70553"}, CodesAdded: []string{"70553"}, CodesOnInserted: []string{"70553", "99214"},
		Section: "Covered services", SourceHealth: "HEALTHY", Quote: "CPT 70553 requires prior authorization.",
	}
	tests := []struct {
		name   string
		mutate func(*Input)
		want   float64
	}{
		{"every component full", func(*Input) {}, 1},
		{"a mismatched code zeroes the cross-check", func(in *Input) { in.AffectedCodes = []string{"70553", "99999"} }, 0.8},
		{"quote found on the other side than claimed", func(in *Input) { in.VerifiedSide = "previous" }, 0.9},
		{"code_added checks the set difference, not the changed lines", func(in *Input) { in.AffectedCodes = []string{"99214"} }, 0.8},
		{"prior_auth_added checks the inserted lines", func(in *Input) {
			in.ChangeType = "prior_auth_added"
			in.AffectedCodes = []string{"70553", "99214"}
		}, 0.985},
		{"a previous-side fact checks the deleted lines", func(in *Input) {
			in.ChangeType = "coverage_removed"
			in.ClaimedSide, in.VerifiedSide = "previous", "previous"
		}, 0.77},
		{"unverified evidence", func(in *Input) { in.EvidenceVerified = false }, 0.65},
		{"no section, degraded source, short quote", func(in *Input) { in.Section = ""; in.SourceHealth = "DEGRADED"; in.Quote = "CPT 70553" }, 0.85},
		{"criteria change without codes", func(in *Input) {
			in.ChangeType = "criteria_changed"
			in.AffectedCodes = nil
		}, 0.94},
	}
	for _, tt := range tests {
		in := strong
		in.AffectedCodes = append([]string(nil), strong.AffectedCodes...)
		tt.mutate(&in)
		got, components := Score(in)
		if math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: got %v (%v), want %v", tt.name, got, components, tt.want)
		}
		// Deterministic: the same input scores the same.
		if again, _ := Score(in); again != got {
			t.Errorf("%s: not deterministic: %v then %v", tt.name, got, again)
		}
	}
}

func TestSelectMostSpecific(t *testing.T) {
	rules := []Rule{
		{ChangeType: "", AutoPublish: 0.85, Review: 0.6},
		{ChangeType: "coverage_removed", AutoPublish: 0.95, Review: 0.75},
		{ForSource: true, ChangeType: "coverage_removed", AutoPublish: 0.99, Review: 0.9},
		{ForSource: true, ChangeType: "code_added", AutoPublish: 0.7, Review: 0.5},
	}
	tests := []struct {
		rules      []Rule
		changeType string
		want       Thresholds
	}{
		{rules, "coverage_removed", Thresholds{0.99, 0.9, "source_type"}},
		{rules[:3], "code_added", Thresholds{0.85, 0.6, "global"}},
		{rules[:2], "coverage_removed", Thresholds{0.95, 0.75, "type"}},
		{rules[1:2], "criteria_changed", GlobalDefault},
		{nil, "coverage_removed", GlobalDefault},
	}
	for _, tt := range tests {
		if got := Select(tt.rules, tt.changeType); got != tt.want {
			t.Errorf("Select(%d rules, %s): got %+v, want %+v", len(tt.rules), tt.changeType, got, tt.want)
		}
	}
}
