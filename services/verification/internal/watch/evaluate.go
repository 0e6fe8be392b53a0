package watch

import (
	"fmt"
	"slices"
	"strings"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// Verdicts of a run, best first: a conformance run's is the report's; a readiness run's is pass
// when it scores 100, warn when a rule fired but it is still production-ready, fail when it is not
// production-ready (readinessVerdict).
const (
	VerdictPass = "pass"
	VerdictWarn = "warn"
	VerdictFail = "fail"
)

// SurfaceAny in a policy's surfaceChanges forbids every change of the tool surface.
const SurfaceAny = "any"

// Webhook event types of the watch API.
const (
	EventAlert     = "watch.alert"
	EventRecovered = "watch.recovered"
)

// Reason codes: a reason is "<code>[ <subject>]: <text>", and its part before the colon is its key
// (two runs alert for the same reason when their keys are equal).
const (
	ReasonMinScore         = "min_score"
	ReasonRequiredCheck    = "required_check"
	ReasonForbiddenFinding = "forbidden_finding"
	ReasonSurfaceChange    = "surface_change"
	ReasonVerdictWorse     = "verdict_worse"
	ReasonRecovered        = "recovered"
)

// Observation is what the evaluation reads of one succeeded run.
type Observation struct {
	// Verdict is pass, warn or fail ("" when unknown).
	Verdict string
	// Score is the readiness score; nil for a conformance run.
	Score *int
	// FailedChecks are the ids of the conformance checks whose status is FAILURE.
	FailedChecks []string
	// Findings are the ids of the readiness rules that fired.
	Findings []string
	// Listing is the tool listing; nil when the run could not list tools.
	Listing *surface.Listing
	// Alert and Reasons are the run's own evaluation (read for the previous run only).
	Alert   bool
	Reasons []string
}

// Evaluation is what a run means under a policy.
type Evaluation struct {
	// Alert is true when the run breaks a rule.
	Alert bool
	// Reasons say which rules it breaks, or, for a recovery, that it recovered.
	Reasons []string
	// Changes are every change of the tool surface since the previous run, forbidden or not; nil
	// when either run could not list tools.
	Changes []surface.Change
	// Event is the webhook event the run causes: EventAlert, EventRecovered or "" (none).
	Event string
}

// Evaluate decides whether cur, a succeeded run, is an alert, comparing it with prev, the previous
// succeeded run of the watch (nil for the first). A run is an alert when it breaks any rule rules
// sets: a score below minScore; a requiredChecks id that failed; a forbiddenFindings rule that
// fired; a change of the tool surface of a forbidden kind ("any": every kind) since prev; with
// noWorseVerdict, a verdict worse than prev's (pass > warn > fail). Without a policy (rules nil) a
// run is an alert when its verdict is worse than prev's, so that a watch without a policy still
// tells its owner when things get worse (for readiness, that includes production-ready turning
// false: its verdict becomes fail).
//
// An alert run causes EventAlert unless prev was an alert for the same reasons (a condition that
// lasts is told once; a surface change is always told); a run that is not an alert after one that was causes EventRecovered.
func Evaluate(rules *Rules, prev *Observation, cur Observation) Evaluation {
	var ev Evaluation
	if prev != nil && prev.Listing != nil && cur.Listing != nil {
		ev.Changes = surface.CompareListings(*prev.Listing, *cur.Listing)
	}
	worse := prev != nil && rank(cur.Verdict) > 0 && rank(prev.Verdict) > 0 && rank(cur.Verdict) < rank(prev.Verdict)
	verdictReason := func() string {
		return fmt.Sprintf("%s: verdict %s is worse than the previous run's %s", ReasonVerdictWorse, cur.Verdict, prev.Verdict)
	}
	if rules == nil {
		if worse {
			ev.Reasons = append(ev.Reasons, verdictReason())
		}
	} else {
		if rules.MinScore != nil && cur.Score != nil && *cur.Score < *rules.MinScore {
			ev.Reasons = append(ev.Reasons, fmt.Sprintf("%s: score %d is below the policy's minimum of %d", ReasonMinScore, *cur.Score, *rules.MinScore))
		}
		for _, id := range rules.RequiredChecks {
			if slices.Contains(cur.FailedChecks, id) {
				ev.Reasons = append(ev.Reasons, fmt.Sprintf("%s %s: the required check failed", ReasonRequiredCheck, id))
			}
		}
		for _, id := range rules.ForbiddenFindings {
			if slices.Contains(cur.Findings, id) {
				ev.Reasons = append(ev.Reasons, fmt.Sprintf("%s %s: the forbidden readiness rule fired", ReasonForbiddenFinding, id))
			}
		}
		ev.Reasons = append(ev.Reasons, surfaceReasons(rules.SurfaceChanges, ev.Changes)...)
		if rules.NoWorseVerdict != nil && *rules.NoWorseVerdict && worse {
			ev.Reasons = append(ev.Reasons, verdictReason())
		}
	}
	ev.Alert = len(ev.Reasons) > 0
	switch {
	case ev.Alert && (prev == nil || !prev.Alert || !sameKeys(ev.Reasons, prev.Reasons)):
		ev.Event = EventAlert
	case !ev.Alert && prev != nil && prev.Alert:
		ev.Event = EventRecovered
		ev.Reasons = []string{ReasonRecovered + ": the run breaks no rule; the previous run was an alert"}
	}
	return ev
}

// maxItemsNamed bounds the items one surface reason names.
const maxItemsNamed = 5

// surfaceReasons is one reason per forbidden kind of change, naming its items.
func surfaceReasons(forbidden []string, changes []surface.Change) []string {
	if len(forbidden) == 0 || len(changes) == 0 {
		return nil
	}
	all := slices.Contains(forbidden, SurfaceAny)
	var kinds []string
	items := map[string][]string{}
	for _, c := range changes {
		if !all && !slices.Contains(forbidden, c.Kind) {
			continue
		}
		if _, ok := items[c.Kind]; !ok {
			kinds = append(kinds, c.Kind)
		}
		item := c.Item
		if c.Field != "" {
			item += " " + c.Field
		}
		if !slices.Contains(items[c.Kind], item) {
			items[c.Kind] = append(items[c.Kind], item)
		}
	}
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		named := items[k]
		more := ""
		if len(named) > maxItemsNamed {
			more = fmt.Sprintf(" and %d more", len(named)-maxItemsNamed)
			named = named[:maxItemsNamed]
		}
		out = append(out, fmt.Sprintf("%s %s: %s%s", ReasonSurfaceChange, k, strings.Join(named, ", "), more))
	}
	return out
}

// rank orders verdicts, best highest; 0 for an unknown one.
func rank(verdict string) int {
	switch verdict {
	case VerdictPass:
		return 3
	case VerdictWarn:
		return 2
	case VerdictFail:
		return 1
	}
	return 0
}

// reasonKey is a reason's part before its colon.
func reasonKey(reason string) string {
	key, _, _ := strings.Cut(reason, ":")
	return key
}

// sameKeys reports whether every reason of a has a key among b's: nothing new to tell. A surface
// change is always new: it is a change since the previous run, not a lasting condition.
func sameKeys(a, b []string) bool {
	keys := make(map[string]bool, len(b))
	for _, r := range b {
		keys[reasonKey(r)] = true
	}
	for _, r := range a {
		if k := reasonKey(r); !keys[k] || strings.HasPrefix(k, ReasonSurfaceChange+" ") {
			return false
		}
	}
	return true
}

// readinessVerdict is a readiness run's verdict: pass at 100, warn while production-ready, fail
// otherwise.
func readinessVerdict(score int, productionReady bool) string {
	switch {
	case !productionReady:
		return VerdictFail
	case score < 100:
		return VerdictWarn
	}
	return VerdictPass
}
