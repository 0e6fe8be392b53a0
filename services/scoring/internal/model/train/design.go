package train

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model/synth"
)

// design is a sparse design matrix (compressed rows) over the features a model uses, with its target.
// Most features are one-hot, so a row has about ten non-zeros out of sixty and the fits run on those.
type design struct {
	cols []int // layout index (model.FeatureName) of each column
	ptr  []int // row i is idx/val[ptr[i]:ptr[i+1]]
	idx  []int32
	val  []float64
	y    []float64
	// free marks the columns the logistic fit leaves unpenalised (nil: none), like the intercept: a
	// rare indicator such as the over-limit one (0.3 % of claims) would otherwise be shrunk to a
	// fraction of its effect by a penalty sized for the common features.
	free []bool
}

// unpenalised are the features the second generation fits without penalty.
var unpenalised = []string{model.PrefixLimit + "units_over_limit"}

// freeColumns marks d's columns named in unpenalised.
func (d *design) freeColumns() {
	d.free = make([]bool, len(d.cols))
	for c, j := range d.cols {
		d.free[c] = slices.Contains(unpenalised, model.FeatureName(j))
	}
}

func (d *design) rows() int { return len(d.y) }

// Percentiles that bound a family's numeric features for drift: 1 % of training claims fall outside
// by construction, so a flag means "unusual", not "impossible".
const (
	driftLow  = 0.005
	driftHigh = 0.995
)

// newDesign extracts recs with the runtime's model.Extract, keeps the features that are not excluded
// and occur at least once (a feature never seen in training could only learn a zero weight), and
// summarises the population for drift checks.
//
// With codeAmount the drift ranges are of the code-referenced amount (the second generation's).
func newDesign(recs []synth.Record, exclude []string, codeAmount bool, target func(*synth.Record) float64) (design, model.Reference) {
	type entry struct {
		col int
		val float64
	}
	var (
		v        model.Vector
		entries  = make([]entry, 0, 12*len(recs))
		ptr      = make([]int, 1, len(recs)+1)
		used     [model.NumFeatures]bool
		payers   = map[int64]int{}
		amounts  [model.NumFamilies][]float64
		units    [model.NumFamilies][]float64
		placeSet = map[string]bool{}
		y        = make([]float64, len(recs))
	)
	for i := range recs {
		r := &recs[i]
		t := model.Extract(&r.Claim, r.Signals, &v)
		for j, x := range v {
			if x != 0 && !excluded(model.FeatureName(j), exclude) {
				entries = append(entries, entry{j, x})
				used[j] = true
			}
		}
		ptr = append(ptr, len(entries))
		y[i] = target(r)
		payers[r.Claim.PayerID]++
		if codeAmount {
			amounts[t.Family] = append(amounts[t.Family], t.CodeAmount)
		} else {
			amounts[t.Family] = append(amounts[t.Family], t.Amount)
		}
		units[t.Family] = append(units[t.Family], t.Units)
		if t.PlaceOfService >= 0 {
			placeSet[r.Claim.PlaceOfService] = true
		}
	}
	d := design{ptr: ptr, y: y, idx: make([]int32, len(entries)), val: make([]float64, len(entries))}
	var col [model.NumFeatures]int32
	for j, u := range used {
		if u {
			col[j] = int32(len(d.cols))
			d.cols = append(d.cols, j)
		}
	}
	for k, e := range entries {
		d.idx[k], d.val[k] = col[e.col], e.val
	}

	var ref model.Reference
	if codeAmount {
		ref.AmountBasis = model.AmountBasisCode
	}
	for id, n := range payers {
		ref.Payers = append(ref.Payers, model.PayerRows{PayerID: id, Rows: n})
	}
	slices.SortFunc(ref.Payers, func(a, b model.PayerRows) int { return cmp.Compare(a.PayerID, b.PayerID) })
	for f := range model.NumFamilies {
		if len(amounts[f]) == 0 {
			continue
		}
		slices.Sort(amounts[f])
		slices.Sort(units[f])
		ref.Families = append(ref.Families, model.FamilyRange{
			Family:     f.String(),
			Rows:       len(amounts[f]),
			AmountLow:  round(percentile(amounts[f], driftLow)),
			AmountHigh: round(percentile(amounts[f], driftHigh)),
			UnitsLow:   round(percentile(units[f], driftLow)),
			UnitsHigh:  round(percentile(units[f], driftHigh)),
		})
	}
	for _, p := range model.PlacesOfService {
		if placeSet[p.Code] {
			ref.PlacesOfService = append(ref.PlacesOfService, p.Code)
		}
	}
	return d, ref
}

func excluded(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// linearArtifact turns fitted coefficients into the artifact form, in layout order, rounded (see round)
// and without the exact zeros that carry no information.
func linearArtifact(d *design, intercept float64, w []float64) model.Linear {
	lin := model.Linear{Intercept: round(intercept)}
	for c, j := range d.cols {
		if x := round(w[c]); x != 0 {
			lin.Weights = append(lin.Weights, model.Weight{Feature: model.FeatureName(j), Weight: x})
		}
	}
	return lin
}

// percentile is the nearest-rank q-quantile of sorted values.
func percentile(sorted []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
