package train

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
)

// renderCard renders a model card as markdown, from the same values as its JSON.
func renderCard(c model.Card) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Model card: %s\n\n", modelTitle(c.Workflow, c.Version, c.Profile))
	fmt.Fprintf(&b, "**Intended use:** %s.\n\n", c.IntendedUse)
	b.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| workflow | %s |\n| version | %s |\n", c.Workflow, c.Version)
	if c.Profile != "" {
		fmt.Fprintf(&b, "| distribution profile | %s |\n", c.Profile)
	}
	if c.CalibrationMethod != "" {
		fmt.Fprintf(&b, "| calibration | %s (%s) |\n", c.CalibrationMethod, c.CalibrationVersion)
	}
	fmt.Fprintf(&b, "| training run | seed %d, %d claims per population |\n\n", c.Training.Seed, c.Training.RowsPerPopulation)

	fmt.Fprintf(&b, "## Data\n\n%s See `../MODELS.md` for the generative rules.\n\n", c.Data)
	b.WriteString("| split | claims |\n|---|---|\n")
	fmt.Fprintf(&b, "| train | %d |\n", c.Samples.Train)
	if c.Samples.Calibration > 0 {
		fmt.Fprintf(&b, "| calibration | %d |\n", c.Samples.Calibration)
	}
	fmt.Fprintf(&b, "| held-out test | %d |\n\n", c.Samples.Test)

	b.WriteString("## Metrics (held-out test split)\n\n| metric | value |\n|---|---|\n")
	if m := c.Classification; m != nil {
		fmt.Fprintf(&b, "| AUC | %s |\n| Brier score | %s |\n| ECE, 10 bins, calibrated | %s |\n| ECE, 10 bins, raw | %s |\n| positive rate | %s |\n\n",
			num(m.AUC), num(m.Brier), num(m.ECE), num(m.ECERaw), num(m.PositiveRate))
	}
	if m := c.Regression; m != nil {
		fmt.Fprintf(&b, "| MAE of allowed amount | %s |\n| MAPE of allowed amount | %s |\n| median allowed amount | %s |\n\n",
			num(m.MAE), num(m.MAPE), num(m.MedianAllowed))
		if m.OracleMAE != 0 {
			b.WriteString("## Against the generator\n\n| metric | value |\n|---|---|\n")
			fmt.Fprintf(&b, "| MAE of the generator's conditional median | %s |\n| model MAE / conditional-median MAE | %s |\n", num(m.OracleMAE), num(m.MAERatioToOracle))
			fmt.Fprintf(&b, "| overcharged claims (≥ 1 log unit above the population's median price) | %d |\n", m.OverchargedCount)
			fmt.Fprintf(&b, "| MAE on overcharged claims | %s |\n| mean relative error on overcharged claims | %s |\n\n", num(m.OverchargedMAE), num(m.OverchargedBias))
		}
	}
	if m := c.Classification; m != nil && m.Oracle != nil {
		o := m.Oracle
		b.WriteString("## Against the generator (oracle)\n\n")
		b.WriteString("The generator knows each claim's probability. *True* is the probability the label was drawn with; " +
			"*payload-only* averages out what a claim does not carry (the hidden provider effect, whether prior auth " +
			"was required and on file): the best a model of the payload can do.\n\n| metric | value |\n|---|---|\n")
		fmt.Fprintf(&b, "| PR-AUC (average precision) | %s |\n| ECE, 15 bins, calibrated | %s |\n", num(m.PRAUC), num(m.ECE15))
		fmt.Fprintf(&b, "| oracle AUC, true | %s |\n| oracle AUC, payload-only | %s |\n", num(o.AUCTrue), num(o.AUCPayload))
		fmt.Fprintf(&b, "| AUC / true oracle AUC | %s |\n| AUC / payload-only oracle AUC | %s |\n", num(o.RatioToTrue), num(o.RatioToPayload))
		fmt.Fprintf(&b, "| ECE, 10 bins, of the payload-only oracle | %s |\n\n", num(o.ECEPayloadOracle))
		if s := m.OverLimit; s != nil {
			b.WriteString("Claims with units above the medically-unlikely-edit limit:\n\n| claims | mean predicted | observed rate | mean payload-only probability |\n|---|---|---|---|\n")
			fmt.Fprintf(&b, "| %d | %s | %s | %s |\n\n", s.Count, num(s.MeanPredicted), num(s.ObservedRate), num(s.MeanTrue))
		}
		if s := m.OverLimitFreshSeed; s != nil {
			fmt.Fprintf(&b, "The same on a fresh population (seed %d, %d claims), whose observed rate rests on more claims:\n\n", s.Seed, s.Rows)
			b.WriteString("| claims | mean predicted | observed rate | mean payload-only probability |\n|---|---|---|---|\n")
			fmt.Fprintf(&b, "| %d | %s | %s | %s |\n\n", s.Count, num(s.MeanPredicted), num(s.ObservedRate), num(s.MeanTrue))
		}
		b.WriteString("Reliability by decile of the calibrated score:\n\n| decile | claims | score range | mean predicted | observed rate |\n|---|---|---|---|---|\n")
		for i, bin := range m.ReliabilityDeciles {
			fmt.Fprintf(&b, "| %d | %d | %s–%s | %s | %s |\n", i+1, bin.Count, num(bin.Lower), num(bin.Upper), num(bin.MeanPredicted), num(bin.ObservedRate))
		}
		b.WriteString("\n")
	}
	if t := c.Tiers; t != nil {
		if t.Split != "" {
			fmt.Fprintf(&b, "## Risk tiers\n\nCut-offs on the calibrated score: the scores whose shares at or above them come nearest 10 %% and 20 %% of the %s split (not the held-out test split the metrics are measured on).\n\n", t.Split)
		} else {
			b.WriteString("## Risk tiers\n\nCut-offs on the calibrated score: the 90th and 80th percentiles of the held-out population.\n\n")
		}
		fmt.Fprintf(&b, "| tier | calibrated score |\n|---|---|\n| high (top 10 %%) | ≥ %s |\n| medium (next 10 %%) | ≥ %s |\n| low | below |\n\n",
			num(t.High), num(t.Medium))
		if t.Split != "" {
			fmt.Fprintf(&b, "On the held-out test split, out of sample: %s high, %s medium.\n\n", num(t.HighShareTest), num(t.MediumShareTest))
		}
	}
	if r := c.Routing; r != nil {
		detector := "`model.DetectProfile`"
		if r.Rule != "" {
			detector = "`model.DetectProfileNext` (rule " + r.Rule + ")"
		}
		fmt.Fprintf(&b, "## Routing\n\n%s on the %d held-out claims of this population:\n\n", detector, r.Rows)
		fmt.Fprintf(&b, "| detected | share |\n|---|---|\n| %s (own) | %s |\n| another profile | %s |\n| not decisive (default profile) | %s |\n\n",
			c.Profile, num(r.Own), num(r.Other), num(r.NotDecisive))
	}
	if c.ReliabilityPNG != "" {
		fmt.Fprintf(&b, "## Reliability\n\n![reliability diagram](%s)\n\n", c.ReliabilityPNG)
		b.WriteString("| bin | claims | mean predicted | observed rate |\n|---|---|---|---|\n")
		for _, bin := range c.Classification.Reliability {
			fmt.Fprintf(&b, "| %s–%s | %d | %s | %s |\n", num(bin.Lower), num(bin.Upper), bin.Count, num(bin.MeanPredicted), num(bin.ObservedRate))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Limitations\n\n")
	for _, l := range c.Limitations {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	return []byte(b.String())
}

// num prints a metric with four decimals: enough to compare runs, few enough to read.
func num(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }
