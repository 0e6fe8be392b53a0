// Package gate compares two runs of a target and applies a deployment policy to the result: Diff
// turns two run summaries into typed changes with their risk, and Evaluate turns the changes into
// a decision with the reasons (which rule matched which change). It is pure: no I/O, no clock.
package gate

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
)

// Check is one check's status in a run: a conformance check (evaluator "mcp", the report's status
// SUCCESS, FAILURE, WARNING, SKIPPED or INFO) or a readiness rule (evaluator "readiness", SUCCESS
// when the rule passed, FAILURE otherwise).
type Check struct {
	ID        string `json:"id"`
	Evaluator string `json:"evaluator"`
	Status    string `json:"status"`
}

// Statuses a diff reads.
const (
	StatusSuccess = "SUCCESS"
	StatusFailure = "FAILURE"
)

// Summary is what a finished run saw, as diffs need it.
type Summary struct {
	// Verdict is the conformance verdict (pass, warn, fail); "" without the mcp evaluator.
	Verdict string `json:"verdict,omitempty"`
	// ReadinessScore is 0..100; nil without the readiness evaluator.
	ReadinessScore  *int    `json:"readiness_score,omitempty"`
	ProductionReady bool    `json:"production_ready"`
	Checks          []Check `json:"checks"`
	// SurfaceSHA256 is the tool surface's hash; Listed says whether the tools could be listed at
	// all, and Tools is the listing itself (descriptions and schemas, redacted as reports are).
	SurfaceSHA256 string         `json:"surface_sha256,omitempty"`
	Listed        bool           `json:"listed"`
	Tools         []surface.Tool `json:"tools"`
}

// ToolNames returns the summary's tool names, sorted.
func (s Summary) ToolNames() []string {
	out := make([]string, 0, len(s.Tools))
	for _, t := range s.Tools {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// Diff lists what changed from base to head: the tool surface first (when both runs could list
// their tools), then the checks, the verdict and the readiness score. Every change carries its
// risk (see riskOf and the documented table). No change is an empty list, never nil, so that a
// stored or answered diff reads [].
func Diff(base, head Summary) []reliability.Change {
	out := []reliability.Change{}
	if base.Listed && head.Listed {
		out = append(out, surfaceChanges(base.Tools, head.Tools)...)
	}
	out = append(out, checkChanges(base.Checks, head.Checks)...)
	if base.Verdict != "" && head.Verdict != "" && base.Verdict != head.Verdict {
		out = append(out, reliability.Change{Kind: reliability.VerdictChanged, Detail: base.Verdict + " -> " + head.Verdict,
			Risk: verdictRisk(base.Verdict, head.Verdict)})
	}
	if base.ReadinessScore != nil && head.ReadinessScore != nil && *base.ReadinessScore != *head.ReadinessScore {
		delta := *head.ReadinessScore - *base.ReadinessScore
		c := reliability.Change{Delta: delta, Detail: fmt.Sprintf("%d -> %d", *base.ReadinessScore, *head.ReadinessScore)}
		if delta < 0 {
			c.Kind, c.Risk = reliability.ReadinessScoreDropped, dropRisk(-delta)
		} else {
			c.Kind, c.Risk = reliability.ReadinessScoreRaised, reliability.RiskLow
		}
		out = append(out, c)
	}
	return out
}

// surfaceChanges maps the audit's listing comparison (surface.CompareListings) onto the change
// kinds of reliability. Prompt and resource changes are not gated (they do not change what an
// agent can do); a plain annotation change that flips no hint, and an input schema change already
// reported as parameters or widening, are left out as noise.
func surfaceChanges(base, head []surface.Tool) []reliability.Change {
	raw := surface.CompareListings(surface.Listing{Tools: base}, surface.Listing{Tools: head})
	finer := map[string]bool{}
	for _, c := range raw {
		switch c.Kind {
		case surface.ParameterAdded, surface.ParameterRemoved, surface.ParameterNowRequired,
			surface.ParameterNoLongerRequired, surface.SchemaWidened:
			if strings.HasPrefix(c.Field, "inputSchema") {
				finer[c.Item] = true
			}
		}
	}
	headByName := map[string]surface.Tool{}
	for _, t := range head {
		headByName[t.Name] = t
	}
	var out []reliability.Change
	add := func(kind string, c surface.Change, risk reliability.Risk, detail string) {
		if detail == "" {
			detail = c.Detail
		}
		out = append(out, reliability.Change{Kind: kind, Item: c.Item, Detail: detail, Risk: risk})
	}
	for _, c := range raw {
		switch c.Kind {
		case surface.ToolAdded:
			risk, detail := addedRisk(headByName[c.Item])
			add(reliability.ToolAdded, c, risk, detail)
		case surface.ToolRemoved:
			add(reliability.ToolRemoved, c, reliability.RiskHigh, "")
		case surface.DescriptionChanged:
			add(reliability.ToolDescriptionChanged, c, reliability.RiskMedium, "")
		case surface.TitleChanged:
			add(reliability.ToolDescriptionChanged, c, reliability.RiskLow, "title "+c.Detail)
		case surface.ParameterAdded:
			risk := reliability.RiskMedium
			if c.Detail == "required" {
				risk = reliability.RiskHigh
			}
			add(reliability.ParameterAdded, c, risk, strings.TrimPrefix(c.Field, "inputSchema.properties.")+" ("+c.Detail+")")
		case surface.ParameterRemoved:
			add(reliability.ParameterRemoved, c, reliability.RiskHigh, strings.TrimPrefix(c.Field, "inputSchema.properties."))
		case surface.ParameterNowRequired:
			add(reliability.SchemaNarrowed, c, reliability.RiskHigh, strings.TrimPrefix(c.Field, "inputSchema.properties.")+" is now required")
		case surface.ParameterNoLongerRequired:
			add(reliability.SchemaWidened, c, reliability.RiskMedium, strings.TrimPrefix(c.Field, "inputSchema.properties.")+" is no longer required")
		case surface.SchemaWidened:
			add(reliability.SchemaWidened, c, reliability.RiskHigh, c.Field+": "+c.Detail)
		case surface.InputSchemaChanged:
			if !finer[c.Item] {
				add(reliability.SchemaNarrowed, c, reliability.RiskMedium, "inputSchema changed without widening")
			}
		case surface.OutputSchemaChanged:
			add(reliability.SchemaNarrowed, c, reliability.RiskMedium, "outputSchema changed")
		case surface.AnnotationFlipped:
			add(reliability.AnnotationFlipped, c, flipRisk(c.Field, c.Detail), "")
		}
	}
	return out
}

// hint reads a boolean behaviour hint of a tool's annotations, or its MCP default.
func hint(t surface.Tool, name string, def bool) bool {
	var m map[string]any
	if len(t.Annotations) > 0 && jsonObject(t.Annotations, &m) {
		if v, ok := m[name].(bool); ok {
			return v
		}
	}
	return def
}

// addedRisk grades a new tool by its behaviour hints, read with the MCP defaults (readOnlyHint
// false, destructiveHint true): a tool that may destroy is critical, one that writes without
// destroying high, a read-only tool medium.
func addedRisk(t surface.Tool) (reliability.Risk, string) {
	switch {
	case hint(t, "readOnlyHint", false):
		return reliability.RiskMedium, "read-only tool"
	case hint(t, "destructiveHint", true):
		return reliability.RiskCritical, "tool that may be destructive (readOnlyHint false, destructiveHint true or absent)"
	}
	return reliability.RiskHigh, "tool that writes (destructiveHint false)"
}

// flipRisk grades a flipped hint by the direction it moved: toward destroying or writing is
// critical, toward the open world high, away from idempotent medium, toward safety low.
func flipRisk(field, detail string) reliability.Risk {
	toTrue := strings.Contains(detail, "-> true")
	switch strings.TrimPrefix(field, "annotations.") {
	case "destructiveHint":
		if toTrue {
			return reliability.RiskCritical
		}
	case "readOnlyHint":
		if !toTrue {
			return reliability.RiskCritical
		}
	case "openWorldHint":
		if toTrue {
			return reliability.RiskHigh
		}
	case "idempotentHint":
		if !toTrue {
			return reliability.RiskMedium
		}
	}
	return reliability.RiskLow
}

// checkChanges reports checks that fail in head and did not in base (absent included), and checks
// that failed in base and are present without failing in head. A check absent from head is not
// "fixed": it was not run.
func checkChanges(base, head []Check) []reliability.Change {
	was := make(map[[2]string]string, len(base))
	for _, c := range base {
		was[[2]string{c.Evaluator, c.ID}] = c.Status
	}
	var out []reliability.Change
	for _, c := range sortedChecks(head) {
		before, seen := was[[2]string{c.Evaluator, c.ID}]
		switch {
		case c.Status == StatusFailure && before != StatusFailure:
			from := before
			if !seen {
				from = "absent"
			}
			out = append(out, reliability.Change{Kind: reliability.CheckNewlyFailing, Item: c.ID,
				Detail: c.Evaluator + ": " + from + " -> FAILURE", Risk: reliability.RiskHigh})
		case seen && before == StatusFailure && c.Status != StatusFailure:
			out = append(out, reliability.Change{Kind: reliability.CheckFixed, Item: c.ID,
				Detail: c.Evaluator + ": FAILURE -> " + c.Status, Risk: reliability.RiskLow})
		}
	}
	return out
}

func sortedChecks(in []Check) []Check {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b Check) int {
		return cmp.Or(cmp.Compare(a.Evaluator, b.Evaluator), cmp.Compare(a.ID, b.ID))
	})
	return out
}

var verdictRank = map[string]int{"pass": 0, "warn": 1, "fail": 2}

// verdictRisk: worse to fail is high, worse to warn medium, any improvement low.
func verdictRisk(from, to string) reliability.Risk {
	switch {
	case verdictRank[to] <= verdictRank[from]:
		return reliability.RiskLow
	case to == "fail":
		return reliability.RiskHigh
	}
	return reliability.RiskMedium
}

// dropRisk grades a readiness drop of points: 20 or more high, more than 10 medium, else low.
func dropRisk(points int) reliability.Risk {
	switch {
	case points >= 20:
		return reliability.RiskHigh
	case points > 10:
		return reliability.RiskMedium
	}
	return reliability.RiskLow
}

// HighestRisk returns the highest risk of changes, "" when there are none.
func HighestRisk(changes []reliability.Change) reliability.Risk {
	var top reliability.Risk
	for _, c := range changes {
		if top == "" || !top.AtLeast(c.Risk) {
			top = c.Risk
		}
	}
	return top
}
