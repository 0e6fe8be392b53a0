package model

import (
	"fmt"
	"math"
	"slices"
	"strconv"
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

// Factor groups: the second generation's explanations measure each group of features against the
// model's reference population (the mean claim of its training split), so a factor says what makes
// this claim unusual, not what it shares with every claim. A payer id and its bucket form one group.
const (
	groupPayer = iota
	groupFamily
	groupPOS
	groupNetwork
	groupDiagnosis
	groupAmount
	groupUnits
	groupOverLimit
	groupPolicyAdded
	groupPolicyRemoved
	// NumFactorGroups is the number of factor groups.
	NumFactorGroups
)

// groupNames are the keys artifacts store group means under.
var groupNames = [NumFactorGroups]string{"payer", "family", "place_of_service", "network", "diagnosis", "amount",
	"units", "units_over_limit", "policy_prior_auth_added", "policy_prior_auth_removed"}

// groupAbsentLabels name a group none of whose one-hot or indicator features is set.
var groupAbsentLabels = [NumFactorGroups]string{
	groupPayer:         "payer_id: unknown",
	groupFamily:        "cpt family: other",
	groupPOS:           "place_of_service: not given or unknown",
	groupNetwork:       "network_status: unknown",
	groupDiagnosis:     "icd10 typical for cpt family",
	groupAmount:        "billed amount per unit",
	groupUnits:         "units",
	groupOverLimit:     "units within the medically-unlikely-edit limit",
	groupPolicyAdded:   "no policy change: prior_auth_added",
	groupPolicyRemoved: "no policy change: prior_auth_removed",
}

// featureGroup is the group of each feature; payerLabels merge a payer id with its bucket.
var featureGroup, payerLabels = buildGroups()

func buildGroups() (g [NumFeatures]int, payers [NumPayers]string) {
	for i := range NumFeatures {
		switch {
		case i < offPayer:
			g[i] = groupPayer
		case i < offFamily:
			g[i] = groupPayer
		case i < offPOS:
			g[i] = groupFamily
		case i < offNetwork:
			g[i] = groupPOS
		case i < featAtypicalDiagnosis:
			g[i] = groupNetwork
		case i == featAtypicalDiagnosis:
			g[i] = groupDiagnosis
		case i == featAmount || i >= featCodeAmount:
			g[i] = groupAmount
		case i == featUnits:
			g[i] = groupUnits
		case i == featPolicyAdded:
			g[i] = groupPolicyAdded
		case i == featPolicyRemoved:
			g[i] = groupPolicyRemoved
		case i == featOverLimit:
			g[i] = groupOverLimit
		}
	}
	for i, id := range KnownPayers {
		payers[i] = "payer_id: " + strconv.FormatInt(id, 10) + " (" + BucketOf(id).String() + ")"
	}
	return g, payers
}

// GroupName returns the artifact key of factor group g.
func GroupName(g int) string { return groupNames[g] }

// GroupContributions adds each feature's contribution w·v to its group: what training averages
// into an artifact's group means.
func GroupContributions(l *Linear, v *Vector, out *[NumFactorGroups]float64) error {
	lin, err := newLinear(*l)
	if err != nil {
		return err
	}
	*out = [NumFactorGroups]float64{}
	for _, i := range lin.active {
		out[featureGroup[i]] += lin.weights[i] * v[i]
	}
	return nil
}

// groupLabel names group g as the claim v has it: the feature set within the group (a payer id before
// its bucket), the group's fixed label for numeric groups, or its absent label.
func groupLabel(g int, v *Vector) string {
	switch g {
	case groupAmount:
		return featureLabels[featCodeAmount]
	case groupUnits:
		return featureLabels[featUnits]
	case groupPayer:
		for i := range NumPayers {
			if v[offPayer+i] != 0 {
				return payerLabels[i]
			}
		}
	}
	for i := range NumFeatures {
		if featureGroup[i] == g && v[i] != 0 {
			return featureLabels[i]
		}
	}
	return groupAbsentLabels[g]
}

// relativeFactors is the second generation's explanation: each group the model uses, by its
// contribution minus the reference population's mean contribution.
type relativeFactors struct {
	used [NumFactorGroups]bool
	mean [NumFactorGroups]float64
}

func newRelativeFactors(l *linear, means []GroupMean) (*relativeFactors, error) {
	if len(means) == 0 {
		return nil, nil
	}
	rf := &relativeFactors{}
	for _, i := range l.active {
		rf.used[featureGroup[i]] = true
	}
	for _, m := range means {
		g := slices.Index(groupNames[:], m.Group)
		if g < 0 {
			return nil, fmt.Errorf("factor reference: unknown group %q", m.Group)
		}
		if math.IsNaN(m.Mean) || math.IsInf(m.Mean, 0) {
			return nil, fmt.Errorf("factor reference: group %q mean %v", m.Group, m.Mean)
		}
		rf.mean[g] = m.Mean
	}
	return rf, nil
}

// predict returns intercept + w·v and records the top group contributions relative to the reference
// population in fs[:*n].
func (rf *relativeFactors) predict(l *linear, v *Vector, fs *[MaxFactors]Factor, n *int) float64 {
	z := l.intercept
	var contrib [NumFactorGroups]float64
	for _, i := range l.active {
		if v[i] == 0 {
			continue
		}
		c := l.weights[i] * v[i]
		z += c
		contrib[featureGroup[i]] += c
	}
	for g := range NumFactorGroups {
		if !rf.used[g] {
			continue
		}
		// A claim that matches the reference in a group differs from it by rounding only: no factor.
		if d := contrib[g] - rf.mean[g]; math.Abs(d) > 1e-9 {
			pushFactor(fs, n, Factor{Name: groupLabel(g, v), Contribution: d})
		}
	}
	return z
}
