package model

import (
	"fmt"
	"math"
)

// Factor is one feature's share of a score: its contribution in log-odds (classifiers, before
// calibration) or in log allowed/billed ratio (the regressor).
type Factor struct {
	Name         string
	Contribution float64
}

// MaxFactors is how many factors a result explains.
const MaxFactors = 5

// ranksBefore orders factors by absolute contribution, largest first, then by name so equal
// contributions still come out in one order.
func ranksBefore(a, b Factor) bool {
	aa, ab := math.Abs(a.Contribution), math.Abs(b.Contribution)
	if aa != ab {
		return aa > ab
	}
	return a.Name < b.Name
}

// pushFactor keeps fs[:*n] the top factors seen so far, in rank order, without allocating.
func pushFactor(fs *[MaxFactors]Factor, n *int, f Factor) {
	i := *n
	if i == MaxFactors {
		if !ranksBefore(f, fs[MaxFactors-1]) {
			return
		}
		i--
	} else {
		*n++
	}
	for ; i > 0 && ranksBefore(f, fs[i-1]); i-- {
		fs[i] = fs[i-1]
	}
	fs[i] = f
}

// linear is Linear in the form a zero-allocation prediction needs.
type linear struct {
	intercept float64
	weights   Vector
	// active lists the features with a non-zero weight, so a prediction skips the rest.
	active []int
}

func newLinear(l Linear) (linear, error) {
	lin := linear{intercept: l.Intercept}
	for _, w := range l.Weights {
		i := featureIndex(w.Feature)
		if i < 0 {
			return linear{}, fmt.Errorf("unknown feature %q", w.Feature)
		}
		if lin.weights[i] != 0 {
			return linear{}, fmt.Errorf("feature %q weighted twice", w.Feature)
		}
		if math.IsNaN(w.Weight) || math.IsInf(w.Weight, 0) {
			return linear{}, fmt.Errorf("feature %q: weight %v", w.Feature, w.Weight)
		}
		lin.weights[i] = w.Weight
	}
	for i, w := range lin.weights {
		if w != 0 {
			lin.active = append(lin.active, i)
		}
	}
	return lin, nil
}

// predict returns intercept + w·v and records the top contributions in fs[:*n].
func (l *linear) predict(v *Vector, fs *[MaxFactors]Factor, n *int) float64 {
	z := l.intercept
	for _, i := range l.active {
		if v[i] == 0 {
			continue
		}
		c := l.weights[i] * v[i]
		z += c
		pushFactor(fs, n, Factor{Name: featureLabels[i], Contribution: c})
	}
	return z
}
