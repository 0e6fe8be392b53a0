package feedback

import (
	"regexp"
	"testing"
)

func TestPHIKind(t *testing.T) {
	for _, tc := range []struct {
		notes string
		phi   bool
	}{
		{"payer cited missing modifier", false},
		{"denied for CO-50, appeal planned with records", false},
		{"resubmitted with modifier 25 after 2 calls", false},
		{"patient SSN 123-45-6789", true},
		{"ssn on file", true},
		{"123 45 6789", true},
		{"reach me at jane.doe@example.com", true},
		{"call (555) 123-4567", true},
		{"phone 5551234567", true},
		{"DOB 04/12/1961", true},
		{"born 1961", true},
		{"seen 2026-10-01", true},
		{"member id W123456789", true},
		{"subscriber #AB12345", true},
		{"MBI 1EG4TE5MK73", true},
		{"account 123456789012", true},
	} {
		if _, got := PHIKind(tc.notes); got != tc.phi {
			t.Errorf("PHIKind(%q) = %v, want %v", tc.notes, got, tc.phi)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Input{RequestID: "r", Endpoint: "denial", ObservedOutcome: "denied", ExpectedOutcome: "paid", Notes: "missing modifier"}
	if err := validate(ok); err != nil {
		t.Fatalf("valid input: %v", err)
	}
	for name, in := range map[string]Input{
		"endpoint":  {Endpoint: "dental", ObservedOutcome: "paid", ExpectedOutcome: "paid"},
		"observed":  {Endpoint: "denial", ObservedOutcome: "maybe", ExpectedOutcome: "paid"},
		"expected":  {Endpoint: "denial", ObservedOutcome: "paid", ExpectedOutcome: ""},
		"too long":  {Endpoint: "denial", ObservedOutcome: "paid", ExpectedOutcome: "paid", Notes: string(make([]rune, MaxNotes+1))},
		"phi notes": {Endpoint: "denial", ObservedOutcome: "paid", ExpectedOutcome: "paid", Notes: "SSN 123-45-6789"},
	} {
		if err := validate(in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

var longDigits = regexp.MustCompile(`\d{9,}`)

// FuzzValidate feeds arbitrary notes to the validator: it never panics, and notes it accepts hold no
// run of nine digits (the shape of SSNs, member and account numbers).
func FuzzValidate(f *testing.F) {
	for _, s := range []string{"", "payer cited missing modifier", "SSN 123-45-6789", "call 555.123.4567", "\x00\xff", "member id 12345"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, notes string) {
		err := validate(Input{Endpoint: "denial", ObservedOutcome: "paid", ExpectedOutcome: "denied", Notes: notes})
		if err == nil && longDigits.MatchString(notes) {
			t.Fatalf("accepted notes with a long digit run: %q", notes)
		}
	})
}
