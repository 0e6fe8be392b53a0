package safehttp

import (
	"regexp"
	"testing"
)

func TestKindCodesAreStableIdentifiers(t *testing.T) {
	snake := regexp.MustCompile(`^[a-z]+(_[a-z]+)*$`)
	seen := map[string]bool{}
	for k := KindUnknown; k <= KindCanceled; k++ {
		c := k.Code()
		if !snake.MatchString(c) || seen[c] {
			t.Errorf("Kind %d: code %q is not a unique snake_case identifier", k, c)
		}
		seen[c] = true
	}
	if got := Kind(99).Code(); got != "unknown" {
		t.Errorf("out-of-range kind: got %q", got)
	}
}
