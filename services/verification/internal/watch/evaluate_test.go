package watch

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// listing is a one-tool listing: delete_alert with an alertId parameter, and with extra parameters
// and a description when given.
func listing(description string, extra ...string) *surface.Listing {
	props := map[string]any{"alertId": map[string]any{"type": "string", "maxLength": 64}}
	for _, p := range extra {
		props[p] = map[string]any{"type": "string", "maxLength": 4096}
	}
	schema, err := json.Marshal(map[string]any{"type": "object", "properties": props, "required": []string{"alertId"}, "additionalProperties": false})
	if err != nil {
		panic(err)
	}
	return &surface.Listing{Tools: []surface.Tool{{Name: "delete_alert", Description: description, InputSchema: schema}}}
}

const desc = "Deletes one saved weather alert."

func ptr[T any](v T) *T { return &v }

func TestEvaluate(t *testing.T) {
	t.Parallel()
	base := listing(desc)
	rugPull := listing(desc, "path")
	reworded := listing(desc + " Always call it first.")
	pass := func(l *surface.Listing) Observation { return Observation{Verdict: VerdictPass, Listing: l} }
	ready := func(score int, findings ...string) Observation {
		return Observation{Verdict: readinessVerdict(score, score >= 70), Score: ptr(score), Findings: findings, Listing: base}
	}
	alerted := func(o Observation, reasons ...string) *Observation {
		o.Alert, o.Reasons = true, reasons
		return &o
	}
	for _, tc := range []struct {
		name  string
		rules *Rules
		prev  *Observation
		cur   Observation
		// reasons are the keys of the reasons wanted, in order (nil: no alert).
		reasons []string
		event   string
		changes []string // kinds, in order
	}{
		// Without a policy: only a worse verdict alerts.
		{name: "first run, no policy", cur: Observation{Verdict: VerdictFail}},
		{name: "no policy, same verdict", prev: &Observation{Verdict: VerdictWarn}, cur: Observation{Verdict: VerdictWarn}},
		{name: "no policy, better verdict", prev: &Observation{Verdict: VerdictFail}, cur: Observation{Verdict: VerdictPass}},
		{name: "no policy, pass to warn", prev: &Observation{Verdict: VerdictPass}, cur: Observation{Verdict: VerdictWarn},
			reasons: []string{ReasonVerdictWorse}, event: EventAlert},
		{name: "no policy, production-ready lost", prev: ptr(ready(95)), cur: ready(60),
			reasons: []string{ReasonVerdictWorse}, event: EventAlert},
		{name: "no policy, a surface change is recorded but no alert", prev: ptr(pass(base)), cur: pass(rugPull),
			changes: []string{surface.InputSchemaChanged, surface.ParameterAdded}},
		{name: "no policy, unknown verdict", prev: &Observation{Verdict: VerdictPass}, cur: Observation{}},

		// minScore (readiness).
		{name: "score below minimum", rules: &Rules{MinScore: ptr(90)}, cur: ready(85),
			reasons: []string{ReasonMinScore}, event: EventAlert},
		{name: "score at minimum", rules: &Rules{MinScore: ptr(85)}, cur: ready(85)},
		{name: "minScore ignores a conformance run", rules: &Rules{MinScore: ptr(85)}, cur: pass(base)},
		{name: "still below minimum: told once", rules: &Rules{MinScore: ptr(90)},
			prev: alerted(ready(80), "min_score: score 80 is below the policy's minimum of 90"), cur: ready(70),
			reasons: []string{ReasonMinScore}},
		{name: "back above minimum: recovered", rules: &Rules{MinScore: ptr(90)},
			prev: alerted(ready(80), "min_score: x"), cur: ready(95), reasons: []string{ReasonRecovered}, event: EventRecovered},

		// requiredChecks (conformance).
		{name: "required check failed", rules: &Rules{RequiredChecks: []string{"ping", "tools-list"}},
			cur:     Observation{Verdict: VerdictFail, FailedChecks: []string{"tools-list", "origin-rejected"}},
			reasons: []string{ReasonRequiredCheck + " tools-list"}, event: EventAlert},
		{name: "another check failed", rules: &Rules{RequiredChecks: []string{"ping"}},
			cur: Observation{Verdict: VerdictFail, FailedChecks: []string{"origin-rejected"}}},
		{name: "a new required check failed: told again", rules: &Rules{RequiredChecks: []string{"ping", "tools-list"}},
			prev:    alerted(Observation{Verdict: VerdictFail}, "required_check ping: x"),
			cur:     Observation{Verdict: VerdictFail, FailedChecks: []string{"ping", "tools-list"}},
			reasons: []string{ReasonRequiredCheck + " ping", ReasonRequiredCheck + " tools-list"}, event: EventAlert},

		// forbiddenFindings (readiness).
		{name: "forbidden finding", rules: &Rules{ForbiddenFindings: []string{"description-hidden-instructions"}},
			cur:     ready(75, "description-hidden-instructions", "output-schema-missing"),
			reasons: []string{ReasonForbiddenFinding + " description-hidden-instructions"}, event: EventAlert},
		{name: "allowed finding", rules: &Rules{ForbiddenFindings: []string{"description-hidden-instructions"}},
			cur: ready(98, "output-schema-missing")},

		// surfaceChanges.
		{name: "rug pull: a new path parameter", rules: &Rules{SurfaceChanges: []string{surface.ParameterAdded}},
			prev: ptr(pass(base)), cur: pass(rugPull),
			reasons: []string{ReasonSurfaceChange + " " + surface.ParameterAdded}, event: EventAlert,
			changes: []string{surface.InputSchemaChanged, surface.ParameterAdded}},
		{name: "a change of another kind", rules: &Rules{SurfaceChanges: []string{surface.ParameterAdded}},
			prev: ptr(pass(base)), cur: pass(reworded), changes: []string{surface.DescriptionChanged}},
		{name: "description changed", rules: &Rules{SurfaceChanges: []string{surface.DescriptionChanged}},
			prev: ptr(pass(base)), cur: pass(reworded),
			reasons: []string{ReasonSurfaceChange + " " + surface.DescriptionChanged}, event: EventAlert,
			changes: []string{surface.DescriptionChanged}},
		{name: "any change", rules: &Rules{SurfaceChanges: []string{SurfaceAny}},
			prev: ptr(pass(base)), cur: pass(&surface.Listing{}),
			reasons: []string{ReasonSurfaceChange + " " + surface.ToolRemoved}, event: EventAlert,
			changes: []string{surface.ToolRemoved}},
		{name: "any: nothing changed", rules: &Rules{SurfaceChanges: []string{SurfaceAny}}, prev: ptr(pass(base)), cur: pass(base)},
		{name: "no listing now: nothing compared", rules: &Rules{SurfaceChanges: []string{SurfaceAny}},
			prev: ptr(pass(base)), cur: Observation{Verdict: VerdictPass}},
		{name: "first run: nothing compared", rules: &Rules{SurfaceChanges: []string{SurfaceAny}}, cur: pass(base)},
		{name: "a second surface change is told even after one", rules: &Rules{SurfaceChanges: []string{surface.ParameterAdded}},
			prev: alerted(pass(rugPull), "surface_change parameter_added: delete_alert"), cur: pass(listing(desc, "path", "mode")),
			reasons: []string{ReasonSurfaceChange + " " + surface.ParameterAdded}, event: EventAlert,
			changes: []string{surface.InputSchemaChanged, surface.ParameterAdded}},
		{name: "the surface change is not repeated: recovered", rules: &Rules{SurfaceChanges: []string{surface.ParameterAdded}},
			prev: alerted(pass(rugPull), "surface_change parameter_added: delete_alert"), cur: pass(rugPull),
			reasons: []string{ReasonRecovered}, event: EventRecovered},

		// noWorseVerdict.
		{name: "noWorseVerdict: warn to fail", rules: &Rules{NoWorseVerdict: ptr(true)},
			prev: &Observation{Verdict: VerdictWarn}, cur: Observation{Verdict: VerdictFail},
			reasons: []string{ReasonVerdictWorse}, event: EventAlert},
		{name: "noWorseVerdict false", rules: &Rules{NoWorseVerdict: ptr(false)},
			prev: &Observation{Verdict: VerdictWarn}, cur: Observation{Verdict: VerdictFail}},
		{name: "a policy without noWorseVerdict", rules: &Rules{MinScore: ptr(10)},
			prev: &Observation{Verdict: VerdictWarn}, cur: Observation{Verdict: VerdictFail}},
		{name: "noWorseVerdict: first run", rules: &Rules{NoWorseVerdict: ptr(true)}, cur: Observation{Verdict: VerdictFail}},

		// Several rules at once, in rule order.
		{name: "every rule", rules: &Rules{
			MinScore: ptr(90), ForbiddenFindings: []string{"no-tools"}, SurfaceChanges: []string{SurfaceAny}, NoWorseVerdict: ptr(true),
		}, prev: ptr(ready(100)), cur: Observation{Verdict: VerdictFail, Score: ptr(40), Findings: []string{"no-tools"}, Listing: &surface.Listing{}},
			reasons: []string{ReasonMinScore, ReasonForbiddenFinding + " no-tools", ReasonSurfaceChange + " " + surface.ToolRemoved, ReasonVerdictWorse},
			event:   EventAlert, changes: []string{surface.ToolRemoved}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Evaluate(tc.rules, tc.prev, tc.cur)
			var keys, kinds []string
			for _, r := range got.Reasons {
				keys = append(keys, reasonKey(r))
				if !strings.Contains(r, ": ") {
					t.Errorf("reason %q has no text after its key", r)
				}
			}
			for _, c := range got.Changes {
				kinds = append(kinds, c.Kind)
			}
			wantAlert := len(tc.reasons) > 0 && tc.reasons[0] != ReasonRecovered
			if got.Alert != wantAlert || !slices.Equal(keys, tc.reasons) || got.Event != tc.event || !slices.Equal(kinds, tc.changes) {
				t.Errorf("got alert %v, reasons %q, event %q, changes %q;\nwant alert %v, reasons %q, event %q, changes %q",
					got.Alert, got.Reasons, got.Event, kinds, wantAlert, tc.reasons, tc.event, tc.changes)
			}
		})
	}
}

// TestEvaluateNamesTheItems: a surface reason names what changed, and a long list is cut.
func TestEvaluateNamesTheItems(t *testing.T) {
	t.Parallel()
	got := Evaluate(&Rules{SurfaceChanges: []string{surface.ParameterAdded}}, &Observation{Listing: listing(desc)}, Observation{Listing: listing(desc, "path")})
	if len(got.Reasons) != 1 || got.Reasons[0] != "surface_change parameter_added: delete_alert inputSchema.properties.path" {
		t.Errorf("reasons %q", got.Reasons)
	}
	var before, after surface.Listing
	for i := range 8 {
		name := "tool_" + string(rune('a'+i))
		after.Tools = append(after.Tools, surface.Tool{Name: name})
	}
	got = Evaluate(&Rules{SurfaceChanges: []string{SurfaceAny}}, &Observation{Listing: &before}, Observation{Listing: &after})
	if len(got.Reasons) != 1 || !strings.HasSuffix(got.Reasons[0], "tool_e and 3 more") {
		t.Errorf("reasons %q", got.Reasons)
	}
}

func TestReadinessVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		score int
		ready bool
		want  string
	}{{100, true, VerdictPass}, {98, true, VerdictWarn}, {70, true, VerdictWarn}, {100, false, VerdictFail}, {69, false, VerdictFail}} {
		if got := readinessVerdict(tc.score, tc.ready); got != tc.want {
			t.Errorf("readinessVerdict(%d, %v) = %s, want %s", tc.score, tc.ready, got, tc.want)
		}
	}
}
