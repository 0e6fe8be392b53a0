package train

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

// fitPlatt fits Platt scaling, p = σ(a·logit + b), by Newton's method on the log loss of the
// calibration split, halving a step that would raise the loss. Two parameters converge in a handful
// of iterations; the cap only guards against a degenerate split.
func fitPlatt(logits, y []float64) (model.Platt, error) {
	loss := func(a, b float64) float64 {
		s := 0.0
		for i, z := range logits {
			t := a*z + b
			s += softplus(t) - y[i]*t
		}
		return s
	}
	a, b := 1.0, 0.0
	cur := loss(a, b)
	for range 100 {
		var ga, gb, haa, hab, hbb float64
		for i, z := range logits {
			p := sigmoid(a*z + b)
			r, h := p-y[i], p*(1-p)
			ga, gb = ga+r*z, gb+r
			haa, hab, hbb = haa+h*z*z, hab+h*z, hbb+h
		}
		det := haa*hbb - hab*hab
		if det <= 0 {
			return model.Platt{}, fmt.Errorf("platt scaling: singular Hessian")
		}
		da, db := (hbb*ga-hab*gb)/det, (haa*gb-hab*ga)/det
		step := 1.0
		for ; step > 1e-10; step /= 2 {
			if next := loss(a-step*da, b-step*db); next <= cur {
				a, b, cur = a-step*da, b-step*db, next
				break
			}
		}
		if math.Abs(step*da)+math.Abs(step*db) < 1e-12 || step <= 1e-10 {
			break
		}
	}
	return model.Platt{Slope: round(a), Intercept: round(b)}, nil
}

// isotonicFloor keeps isotonic calibration away from 0 and 1: a block of only negatives in the
// calibration split does not make a claim certain never to need prior auth.
const isotonicFloor = 0.001

// fitIsotonic fits a non-decreasing step function of the raw probability by pool adjacent violators.
// Equal raw values are pooled first, so the result does not depend on the order of the rows, and
// blocks with equal means are merged too, which keeps the table short without changing any value.
func fitIsotonic(raw, y []float64) model.Isotonic {
	type block struct {
		sum, n, xMax float64
	}
	order := make([]int, len(raw))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return cmp.Compare(raw[i], raw[j]) })
	blocks := make([]block, 0, len(raw))
	for _, i := range order {
		if last := len(blocks) - 1; last >= 0 && blocks[last].xMax == raw[i] {
			blocks[last].sum += y[i]
			blocks[last].n++
		} else {
			blocks = append(blocks, block{sum: y[i], n: 1, xMax: raw[i]})
		}
		for len(blocks) > 1 {
			l, p := &blocks[len(blocks)-1], &blocks[len(blocks)-2]
			if p.sum/p.n < l.sum/l.n {
				break
			}
			p.sum, p.n, p.xMax = p.sum+l.sum, p.n+l.n, l.xMax
			blocks = blocks[:len(blocks)-1]
		}
	}
	iso := model.Isotonic{Thresholds: make([]float64, len(blocks)), Values: make([]float64, len(blocks))}
	for i, b := range blocks {
		iso.Thresholds[i] = round(b.xMax)
		iso.Values[i] = round(min(max(b.sum/b.n, isotonicFloor), 1-isotonicFloor))
	}
	return iso
}
