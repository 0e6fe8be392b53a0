package extract

import (
	"context"
	"slices"
)

// ChangedLineCodes returns the codes on the lines the diff inserted (current side) and deleted
// (previous side). Together with CodeDiff it is the independent reading of a difference that the
// confidence cross-check compares a fact's affected codes against: it looks only at the diff and the
// code formats, never at the extraction rules, so a rule that names a code the diff did not touch is
// caught.
func ChangedLineCodes(ctx context.Context, prev, cur string) (inserted, deleted []string, err error) {
	changes, err := Diff(ctx, prev, cur)
	if err != nil {
		return nil, nil, err
	}
	ins, del := map[string]bool{}, map[string]bool{}
	for _, c := range changes {
		var into map[string]bool
		switch c.Op {
		case OpInsert:
			into = ins
		case OpDelete:
			into = del
		default:
			continue
		}
		for _, code := range RecognizeCodes(c.Text) {
			into[code.Value] = true
		}
	}
	return sortedKeys(ins), sortedKeys(del), nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
