package extract

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// rebuild checks that changes rebuild both texts and that every offset points at its text.
func rebuild(t *testing.T, prev, cur string, changes []Change) {
	t.Helper()
	var p, c strings.Builder
	for _, ch := range changes {
		if ch.Text == "" {
			t.Fatalf("empty change %+v", ch)
		}
		if ch.Op != OpInsert {
			if ch.PrevStart != p.Len() || !strings.HasPrefix(prev[ch.PrevStart:], ch.Text) {
				t.Fatalf("change %+v: PrevStart %d, rebuilt prev is %d bytes", ch, ch.PrevStart, p.Len())
			}
			p.WriteString(ch.Text)
		}
		if ch.Op != OpDelete {
			if ch.CurStart != c.Len() || !strings.HasPrefix(cur[ch.CurStart:], ch.Text) {
				t.Fatalf("change %+v: CurStart %d, rebuilt cur is %d bytes", ch, ch.CurStart, c.Len())
			}
			c.WriteString(ch.Text)
		}
	}
	if p.String() != prev || c.String() != cur {
		t.Fatalf("changes rebuild %q / %q, want %q / %q", p.String(), c.String(), prev, cur)
	}
}

func TestDiff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, prev, cur string
		want            string // ops and texts, "=a\n" "-b\n" "+c\n"
	}{
		{"both empty", "", "", ""},
		{"same", "a\nb\n", "a\nb\n", "=a\nb\n"},
		{"from empty", "", "a\n", "+a\n"},
		{"to empty", "a\n", "", "-a\n"},
		{"insert", "a\nc\n", "a\nb\nc\n", "=a\n|+b\n|=c\n"},
		{"delete", "a\nb\nc\n", "a\nc\n", "=a\n|-b\n|=c\n"},
		{"replace", "a\nb\nc\n", "a\nB\nc\n", "=a\n|-b\n|+B\n|=c\n"},
		{"no final newline", "a\nb", "a\nb\nc", "=a\n|-b|+b\nc"},
		{"unicode lines", "é\n✓\n", "é\n✗\n", "=é\n|-✓\n|+✗\n"},
		{"repeated lines", "x\nx\nx\n", "x\nx\n", "=x\nx\n|-x\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			changes, err := Diff(context.Background(), c.prev, c.cur)
			if err != nil {
				t.Fatal(err)
			}
			rebuild(t, c.prev, c.cur, changes)
			var got []string
			for _, ch := range changes {
				got = append(got, map[Op]string{OpEqual: "=", OpDelete: "-", OpInsert: "+"}[ch.Op]+ch.Text)
			}
			if g := strings.Join(got, "|"); g != c.want {
				t.Errorf("Diff = %q, want %q", g, c.want)
			}
		})
	}
}

// pathological returns two texts of n distinct lines each that share every line in a different
// order: the Myers edit distance is about 2n, the worst case of its O(N·D) cost.
func pathological(n int) (string, string) {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d of the policy\n", i)
	}
	prev := strings.Join(lines, "")
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(lines), func(i, j int) { lines[i], lines[j] = lines[j], lines[i] })
	return prev, strings.Join(lines, "")
}

func TestDiffPathologicalRespectsContext(t *testing.T) {
	t.Parallel()
	prev, cur := pathological(100_000)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Diff(ctx, prev, cur)
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want context.DeadlineExceeded", err)
	}
	// The encoding pass before the diff takes tens of milliseconds under -race; the bound is the
	// time-out plus that, with room for a loaded CI machine.
	if elapsed > 2*time.Second {
		t.Errorf("Diff returned after %v, want shortly after its 100ms time-out", elapsed)
	}
}

func TestDiffPathologicalDegradesWithinBudget(t *testing.T) {
	t.Parallel()
	prev, cur := pathological(50_000)
	start := time.Now()
	changes, err := diff(context.Background(), prev, cur, 100*time.Millisecond)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed > 3*time.Second {
		t.Errorf("diff returned after %v, want shortly after its 100ms budget", elapsed)
	}
	rebuild(t, prev, cur, changes) // coarser, never wrong
}

func TestDiffCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Diff(ctx, "a\n", "b\n"); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
}

func TestIndexRuneSkipsSurrogates(t *testing.T) {
	t.Parallel()
	for _, i := range []int{0, 0xD7FF, 0xD800, 0xDFFF, maxDistinctLines - 1} {
		r := indexRune(i)
		if r >= 0xD800 && r <= 0xDFFF || r > 0x10FFFF {
			t.Errorf("indexRune(%#x) = %#x, not a scalar value", i, r)
		}
	}
	if indexRune(0xD800) != 0xE000 {
		t.Errorf("indexRune(0xD800) = %#x, want 0xE000", indexRune(0xD800))
	}
}

// changedPercent returns doc with one line in every 100/percent rewritten.
func changedPercent(doc string, percent int) string {
	lines := strings.SplitAfter(doc, "\n")
	step := 100 / percent
	for i := step / 2; i < len(lines); i += step {
		lines[i] = "Changed: " + lines[i]
	}
	return strings.Join(lines, "")
}

// BenchmarkDiff1MB1Percent diffs a 1 MB document against itself with 1 % of its lines rewritten.
// Target (README "Performance"): at most 50 ms per operation.
func BenchmarkDiff1MB1Percent(b *testing.B) {
	prev := benchmarkDocument(1 << 20)
	cur := changedPercent(prev, 1)
	b.SetBytes(int64(len(prev)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Diff(context.Background(), prev, cur); err != nil {
			b.Fatal(err)
		}
	}
}
