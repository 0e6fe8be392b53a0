package extract

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Op is the kind of a Change.
type Op int8

// Change kinds.
const (
	OpEqual Op = iota
	OpDelete
	OpInsert
)

func (o Op) String() string {
	switch o {
	case OpEqual:
		return "equal"
	case OpDelete:
		return "delete"
	case OpInsert:
		return "insert"
	}
	return "unknown"
}

// Change is a run of whole lines that both texts share (OpEqual), that only the previous text has
// (OpDelete) or that only the current text has (OpInsert). Applying the changes in order rebuilds
// either text: prev is the concatenation of the Equal and Delete texts, cur of the Equal and Insert
// texts.
type Change struct {
	Op Op
	// Text is a run of lines, each ending in "\n" except perhaps the last line of a text. It is a
	// substring of prev (OpEqual, OpDelete) or cur (OpInsert), not a copy.
	Text string
	// PrevStart and CurStart are the byte offsets in prev and cur where the change begins; for an
	// insertion PrevStart is where it goes in prev, for a deletion CurStart where it was in cur.
	PrevStart, CurStart int
}

// DiffTimeout bounds the search for a minimal diff. Past it the diff of the remaining middle part
// is coarser (one deletion and one insertion) but still exact, so extraction degrades to larger
// hunks instead of failing. A 1 MB document with 1 % of its lines changed diffs in a few
// milliseconds (BenchmarkDiff1MB1Percent); two unrelated 1 MB texts are the worst case.
const DiffTimeout = 2 * time.Second

// maxDistinctLines is the number of distinct lines Diff can encode: each line becomes one Unicode
// scalar value (surrogates excluded) for diffmatchpatch's rune-level Myers algorithm.
const maxDistinctLines = utf8.MaxRune + 1 - (0xE000 - 0xD800)

// ErrTooManyLines is returned when the two texts together hold more distinct lines than Diff can
// encode (over a million); the normaliser's input cap keeps real documents far below that.
var ErrTooManyLines = errors.New("extract: too many distinct lines to diff")

// Diff compares prev and cur line by line with the Myers algorithm of
// github.com/sergi/go-diff/diffmatchpatch, in its line mode (each distinct line is one symbol, so the
// cost is O(N·D) in lines, not characters) and without the character-level refinement pass:
// canonical text has one block per line, and facts are drawn from whole blocks.
//
// Time is bounded by the earlier of ctx's deadline and DiffTimeout. When ctx ends first Diff
// returns ctx.Err() at once; the abandoned computation stops at the same deadline on its own.
func Diff(ctx context.Context, prev, cur string) ([]Change, error) {
	return diff(ctx, prev, cur, DiffTimeout)
}

func diff(ctx context.Context, prev, cur string, budget time.Duration) ([]Change, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if prev == cur {
		if prev == "" {
			return nil, nil
		}
		return []Change{{Op: OpEqual, Text: prev}}, nil
	}
	pl, cl := lineStarts(prev), lineStarts(cur)
	ids := make(map[string]rune, len(pl)+len(cl))
	encode := func(text string, starts []int) ([]rune, error) {
		out := make([]rune, len(starts)-1)
		for i := range out {
			line := text[starts[i]:starts[i+1]]
			r, ok := ids[line]
			if !ok {
				if len(ids) >= maxDistinctLines {
					return nil, ErrTooManyLines
				}
				r = indexRune(len(ids))
				ids[line] = r
			}
			out[i] = r
		}
		return out, nil
	}
	r1, err := encode(prev, pl)
	if err != nil {
		return nil, err
	}
	r2, err := encode(cur, cl)
	if err != nil {
		return nil, err
	}

	deadline := time.Now().Add(budget)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = time.Until(deadline)
	if dmp.DiffTimeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	done := make(chan []diffmatchpatch.Diff, 1)
	go func() { done <- dmp.DiffMainRunes(r1, r2, false) }()
	var diffs []diffmatchpatch.Diff
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case diffs = <-done:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	out := make([]Change, 0, len(diffs))
	pi, ci := 0, 0 // line indexes
	for _, d := range diffs {
		n := utf8.RuneCountInString(d.Text)
		if n == 0 {
			continue
		}
		c := Change{PrevStart: pl[pi], CurStart: cl[ci]}
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			c.Op, c.Text = OpEqual, prev[pl[pi]:pl[pi+n]]
			pi += n
			ci += n
		case diffmatchpatch.DiffDelete:
			c.Op, c.Text = OpDelete, prev[pl[pi]:pl[pi+n]]
			pi += n
		case diffmatchpatch.DiffInsert:
			c.Op, c.Text = OpInsert, cur[cl[ci]:cl[ci+n]]
			ci += n
		}
		out = append(out, c)
	}
	return out, nil
}

// lineStarts returns the byte offset of each line of s followed by len(s).
func lineStarts(s string) []int {
	starts := make([]int, 0, strings.Count(s, "\n")+2)
	for i := 0; i < len(s); {
		starts = append(starts, i)
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return append(starts, len(s))
}

// indexRune maps a line index to a Unicode scalar value, skipping the surrogate range, which a Go
// string cannot hold.
func indexRune(i int) rune {
	if i < 0xD800 {
		return rune(i)
	}
	return rune(i + (0xE000 - 0xD800))
}
