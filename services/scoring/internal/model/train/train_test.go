package train

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// committed is the artifacts directory package model embeds.
const committed = "../artifacts"

// TestArtifactsAreReproducible retrains with the defaults and compares every file, byte for byte,
// with the committed artifacts: it fails when the code, the rules or the files changed without the
// others, and when training stops being deterministic.
func TestArtifactsAreReproducible(t *testing.T) {
	t.Parallel()
	out, err := Run(Config{Seed: DefaultSeed, RowsPerPopulation: DefaultRows})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	const regenerate = "regenerate with: go run ./services/scoring/cmd/scoring-train -out services/scoring/internal/model/artifacts"
	entries, err := os.ReadDir(committed)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk []string
	for _, e := range entries {
		onDisk = append(onDisk, e.Name())
	}
	var produced []string
	for _, f := range out.Files {
		produced = append(produced, f.Name)
		want, err := os.ReadFile(filepath.Join(committed, f.Name))
		if err != nil {
			t.Errorf("%s: produced but not committed (%v); %s", f.Name, err, regenerate)
			continue
		}
		if !bytes.Equal(f.Data, want) {
			t.Errorf("%s: got %d bytes from training, committed file has %d and differs; %s", f.Name, len(f.Data), len(want), regenerate)
		}
	}
	if !slices.Equal(produced, onDisk) {
		t.Errorf("got files %v from training, committed %v; %s", produced, onDisk, regenerate)
	}
	total := 0
	for _, f := range out.Files {
		total += len(f.Data)
	}
	if total > 1<<20 {
		t.Errorf("got %d bytes of artifacts, want at most 1 MiB", total)
	}
}

func TestRunIsDeterministic(t *testing.T) {
	t.Parallel()
	a, err := Run(Config{Seed: 7, RowsPerPopulation: minRows})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	b, err := Run(Config{Seed: 7, RowsPerPopulation: minRows})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(a.Files) != len(b.Files) {
		t.Fatalf("got %d files, then %d", len(a.Files), len(b.Files))
	}
	for i := range a.Files {
		if a.Files[i].Name != b.Files[i].Name || !bytes.Equal(a.Files[i].Data, b.Files[i].Data) {
			t.Errorf("file %d: got %s, then %s with different content", i, a.Files[i].Name, b.Files[i].Name)
		}
	}
	if _, err := Run(Config{Seed: 7, RowsPerPopulation: minRows - 1}); err == nil {
		t.Errorf("Run with %d rows: got no error", minRows-1)
	}
}

func TestAUC(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p, y []float64
		want float64
	}{
		{"perfect", []float64{.1, .2, .8, .9}, []float64{0, 0, 1, 1}, 1},
		{"inverted", []float64{.9, .8, .2, .1}, []float64{0, 0, 1, 1}, 0},
		{"all tied", []float64{.5, .5, .5, .5}, []float64{0, 1, 0, 1}, 0.5},
		// Pairs (pos, neg): (.4,.1) win, (.4,.4) tie, (.4,.8) loss, (.9, all) three wins → 4.5/6.
		{"ties count half", []float64{.1, .4, .4, .8, .9}, []float64{0, 0, 1, 0, 1}, 4.5 / 6},
	} {
		if got := auc(tc.p, tc.y); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: got AUC %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReliabilityAndECE(t *testing.T) {
	t.Parallel()
	// Bin 0 predicts .05 and sees 0 of 2; bin 9 predicts .95 and sees 2 of 2; p = 1 falls in the last bin.
	p := []float64{.05, .05, .9, 1}
	y := []float64{0, 0, 1, 1}
	bins, ece := reliability(p, y)
	if len(bins) != reliabilityBins {
		t.Fatalf("got %d bins, want %d", len(bins), reliabilityBins)
	}
	if bins[0].Count != 2 || bins[9].Count != 2 || bins[0].MeanPredicted != .05 || bins[9].ObservedRate != 1 {
		t.Errorf("got bins %+v", bins)
	}
	if want := (2*.05 + 2*.05) / 4; math.Abs(ece-want) > 1e-12 {
		t.Errorf("got ECE %v, want %v", ece, want)
	}
	if got := brier(p, y); math.Abs(got-(2*.0025+.01)/4) > 1e-12 {
		t.Errorf("got Brier %v", got)
	}
}

func TestFitIsotonic(t *testing.T) {
	t.Parallel()
	// Rows out of order, a violation (.3 → 1 then .4 → 0) and a tie at .5.
	raw := []float64{.5, .1, .4, .3, .2, .5, .9}
	y := []float64{1, 0, 0, 1, 0, 0, 1}
	iso := fitIsotonic(raw, y)
	// Blocks: {.1,.2} → 0 (floored), {.3,.4} → .5, {.5,.5} → .5 merged with the previous (equal mean), {.9} → 1 (capped).
	wantT := []float64{.2, .5, .9}
	wantV := []float64{isotonicFloor, .5, 1 - isotonicFloor}
	if !slices.Equal(iso.Thresholds, wantT) || !slices.Equal(iso.Values, wantV) {
		t.Errorf("got thresholds %v values %v, want %v %v", iso.Thresholds, iso.Values, wantT, wantV)
	}
}

func TestFitPlattRecoversTheMapping(t *testing.T) {
	t.Parallel()
	// Labels in proportion σ(2z - 1), to the nearest percent, on a grid: the MLE is near slope 2, intercept -1.
	var logits, y []float64
	for i := -40; i <= 40; i++ {
		z := float64(i) / 10
		pos := int(math.Round(sigmoid(2*z-1) * 100))
		for k := range 100 {
			logits = append(logits, z)
			y = append(y, indicator(k < pos))
		}
	}
	p, err := fitPlatt(logits, y)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.Slope-2) > 0.05 || math.Abs(p.Intercept+1) > 0.05 {
		t.Errorf("got slope %v intercept %v, want about 2 and -1", p.Slope, p.Intercept)
	}
}

func TestFitRidgeRecoversCoefficients(t *testing.T) {
	t.Parallel()
	// y = 0.5 + 2·x0 - 1·x1 exactly; with λ = 1e-3 the estimate is within a few thousandths.
	d := design{cols: []int{0, 1}, ptr: []int{0}}
	for i := range 400 {
		x0, x1 := float64(i%7)/3, float64(i%5)/2
		d.idx = append(d.idx, 0, 1)
		d.val = append(d.val, x0, x1)
		d.ptr = append(d.ptr, len(d.idx))
		d.y = append(d.y, 0.5+2*x0-x1)
	}
	b, w, err := fitRidge(&d)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(b-0.5) > 0.01 || math.Abs(w[0]-2) > 0.01 || math.Abs(w[1]+1) > 0.01 {
		t.Errorf("got intercept %v weights %v, want 0.5 [2 -1]", b, w)
	}
}

func TestFitLogisticSeparatesClasses(t *testing.T) {
	t.Parallel()
	// One binary feature: rate .2 without it and .8 with it; λ barely shrinks the fit at 1,000 rows.
	d := design{cols: []int{0}, ptr: []int{0}}
	for i := range 1000 {
		on := i%2 == 0
		if on {
			d.idx = append(d.idx, 0)
			d.val = append(d.val, 1)
		}
		d.ptr = append(d.ptr, len(d.idx))
		positives := 1 // of every five rows
		if on {
			positives = 4
		}
		d.y = append(d.y, indicator((i/2)%5 < positives))
	}
	b, w, err := fitLogistic(&d)
	if err != nil {
		t.Fatal(err)
	}
	if pOff, pOn := sigmoid(b), sigmoid(b+w[0]); math.Abs(pOff-.2) > 0.01 || math.Abs(pOn-.8) > 0.01 {
		t.Errorf("got rates %v without and %v with the feature, want .2 and .8", pOff, pOn)
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range []struct{ q, want float64 }{{0, 1}, {0.005, 1}, {0.5, 5}, {0.8, 8}, {0.9, 9}, {0.995, 10}, {1, 10}} {
		if got := percentile(sorted, tc.q); got != tc.want {
			t.Errorf("percentile(%v): got %v, want %v", tc.q, got, tc.want)
		}
	}
}
