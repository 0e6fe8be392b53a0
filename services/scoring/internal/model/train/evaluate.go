package train

import (
	"cmp"
	"math"
	"slices"

	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

// reliabilityBins is the bin count of ECE and the reliability diagram.
const reliabilityBins = 10

// auc is the area under the ROC curve by the Mann-Whitney rank sum, tied scores sharing their
// average rank.
func auc(p, y []float64) float64 {
	order := make([]int, len(p))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return cmp.Compare(p[i], p[j]) })
	var rankSum, pos float64
	for lo := 0; lo < len(order); {
		hi := lo + 1
		for hi < len(order) && p[order[hi]] == p[order[lo]] {
			hi++
		}
		rank := float64(lo+hi+1) / 2 // mean of the 1-based ranks lo+1 … hi
		for _, i := range order[lo:hi] {
			if y[i] == 1 {
				rankSum += rank
				pos++
			}
		}
		lo = hi
	}
	neg := float64(len(p)) - pos
	return (rankSum - pos*(pos+1)/2) / (pos * neg)
}

func brier(p, y []float64) float64 {
	s := 0.0
	for i := range p {
		s += (p[i] - y[i]) * (p[i] - y[i])
	}
	return s / float64(len(p))
}

// reliability bins p into equal-width bins and returns them with the expected calibration error: the
// count-weighted mean gap between mean prediction and observed rate.
func reliability(p, y []float64) ([]model.ReliabilityBin, float64) {
	return reliabilityN(p, y, reliabilityBins)
}

// reliabilityN is reliability over nBins equal-width bins.
func reliabilityN(p, y []float64, nBins int) ([]model.ReliabilityBin, float64) {
	sumP, sumY := make([]float64, nBins), make([]float64, nBins)
	count := make([]int, nBins)
	for i, v := range p {
		b := min(int(v*float64(nBins)), nBins-1)
		sumP[b] += v
		sumY[b] += y[i]
		count[b]++
	}
	bins := make([]model.ReliabilityBin, nBins)
	ece := 0.0
	for b := range bins {
		bins[b] = model.ReliabilityBin{Lower: round(float64(b) / float64(nBins)), Upper: round(float64(b+1) / float64(nBins)), Count: count[b]}
		if count[b] == 0 {
			continue
		}
		n := float64(count[b])
		bins[b].MeanPredicted, bins[b].ObservedRate = sumP[b]/n, sumY[b]/n
		ece += n * math.Abs(bins[b].MeanPredicted-bins[b].ObservedRate)
		bins[b].MeanPredicted, bins[b].ObservedRate = round(bins[b].MeanPredicted), round(bins[b].ObservedRate)
	}
	return bins, ece / float64(len(p))
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// tiers are the 90th and 80th percentiles of the calibrated scores of the held-out population.
func tiers(p []float64) model.Tiers {
	sorted := slices.Clone(p)
	slices.Sort(sorted)
	return model.Tiers{High: round(percentile(sorted, 0.90)), Medium: round(percentile(sorted, 0.80))}
}
