package policysignal

import "testing"

func TestSameICD(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"M54.5", "M54.5", true}, {"M545", "M54.5", true}, {"M54.5", "M545", true},
		{"M54.50", "M54.5", false}, {"M54", "M54.5", false}, {"", "", false}, {".", "", false}, {"E11.9", "E11.8", false},
	} {
		if got := sameICD(tc.a, tc.b); got != tc.want {
			t.Errorf("sameICD(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
