package extract

import (
	"context"
	"slices"
	"testing"
)

func TestChangedLineCodes(t *testing.T) {
	prev := "Covered services\nCPT 70553 requires prior authorization.\nHCPCS E0260 is covered.\nUnchanged line with CPT 99214.\n"
	cur := "Covered services\nCPT 70553 and CPT 72148 require prior authorization.\nUnchanged line with CPT 99214.\nICD-10-CM R51.9 is excluded.\n"
	ins, del, err := ChangedLineCodes(context.Background(), prev, cur)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"70553", "72148", "R51.9"}; !slices.Equal(ins, want) {
		t.Errorf("inserted: got %v, want %v", ins, want)
	}
	if want := []string{"70553", "E0260"}; !slices.Equal(del, want) {
		t.Errorf("deleted: got %v, want %v", del, want)
	}
}
