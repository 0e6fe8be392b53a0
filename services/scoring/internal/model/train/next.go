package train

import (
	"cmp"
	"math"
	"slices"

	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model/synth"
)

// The second generation's additions to training: explanations against the reference population and
// the oracle metrics of its cards.

// factorReference is the mean contribution of each factor group over recs, for the fitted (rounded)
// linear predictor lin: the reference population top factors are measured against.
func factorReference(lin model.Linear, recs []synth.Record) ([]model.GroupMean, error) {
	var sum, c [model.NumFactorGroups]float64
	var v model.Vector
	for i := range recs {
		model.Extract(&recs[i].Claim, recs[i].Signals, &v)
		if err := model.GroupContributions(&lin, &v, &c); err != nil {
			return nil, err
		}
		for g := range sum {
			sum[g] += c[g]
		}
	}
	out := make([]model.GroupMean, 0, model.NumFactorGroups)
	for g := range sum {
		if m := round(sum[g] / float64(len(recs))); m != 0 {
			out = append(out, model.GroupMean{Group: model.GroupName(g), Mean: m})
		}
	}
	return out, nil
}

// overLimit reports whether a claim's units exceed its family's medically-unlikely-edit limit.
func overLimit(r *synth.Record) bool {
	return r.Claim.Units > model.UnitLimit[model.FamilyOf(r.Claim.CPTCode)]
}

// nextMetrics adds the second generation's figures to m: PR-AUC, ECE over 15 bins, the oracle
// comparison, reliability by decile and calibration on the over-limit claims.
func nextMetrics(m *model.ClassificationMetrics, test scored, recs []synth.Record, oracle func(*synth.Record) (float64, float64)) {
	m.PRAUC = round(prAUC(test.prob, test.y))
	_, ece15 := reliabilityN(test.prob, test.y, 15)
	m.ECE15 = round(ece15)
	truth, payload := make([]float64, len(recs)), make([]float64, len(recs))
	for i := range recs {
		truth[i], payload[i] = oracle(&recs[i])
	}
	aucModel, aucTrue, aucPayload := auc(test.prob, test.y), auc(truth, test.y), auc(payload, test.y)
	_, eceOracle := reliability(payload, test.y)
	m.Oracle = &model.Oracle{
		AUCTrue: round(aucTrue), AUCPayload: round(aucPayload),
		RatioToTrue: round(aucModel / aucTrue), RatioToPayload: round(aucModel / aucPayload),
		ECEPayloadOracle: round(eceOracle),
	}
	m.ReliabilityDeciles = deciles(test.prob, test.y)
	var sg model.Subgroup
	var sumP, sumY, sumT float64
	for i := range recs {
		if overLimit(&recs[i]) {
			sg.Count++
			sumP += test.prob[i]
			sumY += test.y[i]
			sumT += payload[i]
		}
	}
	if sg.Count > 0 {
		n := float64(sg.Count)
		sg.MeanPredicted, sg.ObservedRate, sg.MeanTrue = round(sumP/n), round(sumY/n), round(sumT/n)
		m.OverLimit = &sg
	}
}

// freshScale sizes the fresh population the over-limit check of a denial card is repeated on: 4 ×
// the rows per population, 200,000 with the defaults, about 430 over-limit claims per profile against
// 20-30 in the test split.
const freshScale = 4

// freshOverLimit draws a fresh population of p with seed and keeps its over-limit claims.
func freshOverLimit(p model.Profile, seed uint64, rows int) ([]synth.Record, error) {
	recs, err := synth.Generate(p, rows, seed)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(recs, func(r synth.Record) bool { return !overLimit(&r) }), nil
}

// freshMetrics measures c on the over-limit claims of a fresh population.
func freshMetrics(c *model.Classifier, seed uint64, rows int, recs []synth.Record) *model.Subgroup {
	sg := model.Subgroup{Seed: seed, Rows: rows, Count: len(recs)}
	if len(recs) == 0 {
		return &sg
	}
	var res model.Result
	var sumP, sumY, sumT float64
	for i := range recs {
		c.Score(&recs[i].Claim, recs[i].Signals, &res)
		sumP += res.Probability
		sumY += indicator(recs[i].Denied)
		sumT += recs[i].DenialPayloadProbability
	}
	n := float64(len(recs))
	sg.MeanPredicted, sg.ObservedRate, sg.MeanTrue = round(sumP/n), round(sumY/n), round(sumT/n)
	return &sg
}

// prAUC is the average precision: the precision at each positive, averaged, tied scores entering
// together.
func prAUC(p, y []float64) float64 {
	order := make([]int, len(p))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return cmp.Compare(p[j], p[i]) })
	totalPos := 0.0
	for _, v := range y {
		totalPos += v
	}
	var tp, fp, ap float64
	for lo := 0; lo < len(order); {
		hi := lo + 1
		for hi < len(order) && p[order[hi]] == p[order[lo]] {
			hi++
		}
		pos := 0.0
		for _, i := range order[lo:hi] {
			pos += y[i]
		}
		tp += pos
		fp += float64(hi-lo) - pos
		if pos > 0 {
			ap += pos / totalPos * tp / (tp + fp)
		}
		lo = hi
	}
	return ap
}

// deciles is the reliability table by decile of the score: ten bins of (almost) equal counts, each
// with its score range.
func deciles(p, y []float64) []model.ReliabilityBin {
	order := make([]int, len(p))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(p[i], p[j]) })
	out := make([]model.ReliabilityBin, 0, 10)
	for k := range 10 {
		lo, hi := k*len(order)/10, (k+1)*len(order)/10
		if lo == hi {
			continue
		}
		var sp, sy float64
		for _, i := range order[lo:hi] {
			sp += p[i]
			sy += y[i]
		}
		n := float64(hi - lo)
		out = append(out, model.ReliabilityBin{
			Lower: round(p[order[lo]]), Upper: round(p[order[hi-1]]), Count: hi - lo,
			MeanPredicted: round(sp / n), ObservedRate: round(sy / n),
		})
	}
	return out
}

// overchargedLogUnits is where a claim counts as overcharged: at least one log unit above its
// population's median per-unit charge.
const overchargedLogUnits = 1

// nextRegressionMetrics adds the oracle MAE (the generator's conditional median) and the error on
// overcharged claims to m.
func nextRegressionMetrics(m *model.RegressionMetrics, reg *model.Regressor, recs []synth.Record, mae float64) {
	var est model.Estimate
	var oracleErr, overErr, overRel float64
	for i := range recs {
		r := &recs[i]
		median := max(math.Round(r.Claim.BilledAmount*math.Exp(min(r.AllowedLogRatio, 0))*100)/100, 0.01)
		oracleErr += math.Abs(median - r.AllowedAmount)
		if r.Overcharge >= overchargedLogUnits {
			reg.Estimate(&r.Claim, &est)
			m.OverchargedCount++
			overErr += math.Abs(est.ExpectedAllowed - r.AllowedAmount)
			overRel += (est.ExpectedAllowed - r.AllowedAmount) / r.AllowedAmount
		}
	}
	oracle := oracleErr / float64(len(recs))
	m.OracleMAE, m.MAERatioToOracle = round(oracle), round(mae/oracle)
	if m.OverchargedCount > 0 {
		n := float64(m.OverchargedCount)
		m.OverchargedMAE, m.OverchargedBias = round(overErr/n), round(overRel/n)
	}
}

// tierShares records the shares of the test scores p in the high and medium tiers t.
func tierShares(t *model.Tiers, p []float64) {
	var high, medium int
	for _, v := range p {
		switch {
		case v >= t.High:
			high++
		case v >= t.Medium:
			medium++
		}
	}
	t.HighShareTest, t.MediumShareTest = round(float64(high)/float64(len(p))), round(float64(medium)/float64(len(p)))
}

// nearestTiers cuts the tiers on the calibration scores p at the distinct score values whose shares
// at or above them come nearest 10 % (high) and 20 % (high and medium together). For continuous
// scores this is the 90th and 80th percentile; for an isotonic step function, whose claims share a
// score per step, the percentile would take in the whole step it falls on, however wide, and the
// nearest share is the better cut.
func nearestTiers(p []float64) model.Tiers {
	sorted := slices.Clone(p)
	slices.Sort(sorted)
	cut := func(share float64) float64 {
		n := float64(len(sorted))
		best, bestGap := sorted[len(sorted)-1], math.Inf(1)
		for lo := 0; lo < len(sorted); {
			hi := lo + 1
			for hi < len(sorted) && sorted[hi] == sorted[lo] {
				hi++
			}
			// The claims at or above sorted[lo] are sorted[lo:].
			if gap := math.Abs(float64(len(sorted)-lo)/n - share); gap < bestGap {
				best, bestGap = sorted[lo], gap
			}
			lo = hi
		}
		return best
	}
	return model.Tiers{High: round(cut(0.10)), Medium: round(cut(0.20))}
}
