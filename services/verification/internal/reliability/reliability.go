// Package reliability holds what the parts of agent reliability share: the states of a run and
// their transitions, the typed changes a diff reports with their risk, the deployment policy that
// turns a diff into a decision, and the plans' limits. The use cases live in its subpackages.
package reliability

import (
	"fmt"
	"slices"
	"time"
)

// State is a run's state.
type State string

// Run states. A run is queued by a scan, running while a worker holds its lease, and then either
// failed (the audit could not be finished: failure_code says why) or decided by the deployment
// policy: succeeded (allow), blocked, or needs_approval until a person approves it.
const (
	Queued        State = "queued"
	Running       State = "running"
	Succeeded     State = "succeeded"
	Failed        State = "failed"
	NeedsApproval State = "needs_approval"
	Approved      State = "approved"
	Blocked       State = "blocked"
)

// transitions lists the states each state may move to. A running run whose lease ends goes back
// to running under another worker (the same state), so a crashed worker never leaves it stuck.
var transitions = map[State][]State{
	Queued:        {Running, Failed},
	Running:       {Running, Succeeded, Failed, NeedsApproval, Blocked},
	NeedsApproval: {Approved},
}

// CanMove reports whether a run in state from may move to state to.
func CanMove(from, to State) bool { return slices.Contains(transitions[from], to) }

// Finished reports whether a run in state s has its result (every state but queued and running).
func (s State) Finished() bool { return s != Queued && s != Running }

// Decision is what a deployment policy decides for a diff.
type Decision string

// Decisions, from the mildest. A diff's decision is the strictest of its rules' actions.
const (
	Allow        Decision = "allow"
	NeedApproval Decision = "needs_approval"
	Block        Decision = "block"
)

// rank orders decisions by strictness.
func (d Decision) rank() int { return slices.Index([]Decision{Allow, NeedApproval, Block}, d) }

// Stricter returns the stricter of d and e.
func (d Decision) Stricter(e Decision) Decision {
	if e.rank() > d.rank() {
		return e
	}
	return d
}

// Risk is the risk level of one change.
type Risk string

// Risk levels, from the lowest.
const (
	RiskLow      Risk = "low"
	RiskMedium   Risk = "medium"
	RiskHigh     Risk = "high"
	RiskCritical Risk = "critical"
)

var risks = []Risk{RiskLow, RiskMedium, RiskHigh, RiskCritical}

// AtLeast reports whether r is at least as high as o.
func (r Risk) AtLeast(o Risk) bool { return slices.Index(risks, r) >= slices.Index(risks, o) }

// Change kinds a diff reports. The tool-surface kinds are those of the audit's surface comparison
// (internal/audit/surface) under these names; the others compare the audits' results.
const (
	ToolAdded              = "tool_added"
	ToolRemoved            = "tool_removed"
	ToolDescriptionChanged = "tool_description_changed"
	ParameterAdded         = "parameter_added"
	ParameterRemoved       = "parameter_removed"
	SchemaWidened          = "schema_widened"
	SchemaNarrowed         = "schema_narrowed"
	AnnotationFlipped      = "annotation_flipped"
	CheckNewlyFailing      = "check_newly_failing"
	CheckFixed             = "check_fixed"
	VerdictChanged         = "verdict_changed"
	ReadinessScoreDropped  = "readiness_score_dropped"
	ReadinessScoreRaised   = "readiness_score_raised"
)

// ChangeKinds lists every kind, in the order a diff reports them.
var ChangeKinds = []string{
	ToolAdded, ToolRemoved, ToolDescriptionChanged, ParameterAdded, ParameterRemoved, SchemaWidened,
	SchemaNarrowed, AnnotationFlipped, CheckNewlyFailing, CheckFixed, VerdictChanged,
	ReadinessScoreDropped, ReadinessScoreRaised,
}

// Change is one typed difference between two runs.
type Change struct {
	Kind string `json:"kind"`
	// Item is the tool name or the check id it is about (empty for scores and verdicts).
	Item   string `json:"item,omitempty"`
	Detail string `json:"detail,omitempty"`
	Risk   Risk   `json:"risk"`
	// Delta is the score's change in points (score kinds only).
	Delta int `json:"delta,omitempty"`
}

// Rule is one rule of a deployment policy: it matches a change by kind (and, for score drops,
// by at least MinDelta points) or by risk, and gives its action.
type Rule struct {
	// Change is a change kind; empty matches every kind at or above Risk.
	Change string `json:"change,omitempty"`
	// Risk, when set, matches changes of at least this risk.
	Risk Risk `json:"risk,omitempty"`
	// MinDelta is the smallest score change, in points, a score rule matches (0: any).
	MinDelta int      `json:"min_delta,omitempty"`
	Action   Decision `json:"action"`
}

// Policy is a repository's deployment policy: its rules, and the decision when none matches.
type Policy struct {
	Rules         []Rule   `json:"rules"`
	DefaultAction Decision `json:"default_action"`
}

// MaxRules bounds a policy's rules.
const MaxRules = 50

// DefaultPolicy is the policy of a repository that has not set one: block a newly failing check or
// a readiness drop of more than 10 points, ask approval for new or removed tools, changed
// descriptions, parameters, schemas and annotations, and allow the rest.
func DefaultPolicy() Policy {
	return Policy{
		Rules: []Rule{
			{Change: CheckNewlyFailing, Action: Block},
			{Change: ReadinessScoreDropped, MinDelta: 11, Action: Block},
			{Change: ToolAdded, Action: NeedApproval},
			{Change: ToolRemoved, Action: NeedApproval},
			{Change: ToolDescriptionChanged, Action: NeedApproval},
			{Change: ParameterAdded, Action: NeedApproval},
			{Change: ParameterRemoved, Action: NeedApproval},
			{Change: SchemaWidened, Action: NeedApproval},
			{Change: SchemaNarrowed, Action: NeedApproval},
			{Change: AnnotationFlipped, Action: NeedApproval},
		},
		DefaultAction: Allow,
	}
}

// Validate reports the first problem of p, naming the field (rules[i].change...) it is in.
func (p Policy) Validate() error {
	if len(p.Rules) > MaxRules {
		return fmt.Errorf("rules: at most %d", MaxRules)
	}
	if p.DefaultAction != Allow && p.DefaultAction != NeedApproval && p.DefaultAction != Block {
		return fmt.Errorf("default_action: want allow, needs_approval or block")
	}
	for i, r := range p.Rules {
		switch {
		case r.Change == "" && r.Risk == "":
			return fmt.Errorf("rules[%d]: needs change or risk", i)
		case r.Change != "" && !slices.Contains(ChangeKinds, r.Change):
			return fmt.Errorf("rules[%d].change: unknown change kind %q", i, r.Change)
		case r.Risk != "" && !slices.Contains(risks, r.Risk):
			return fmt.Errorf("rules[%d].risk: want low, medium, high or critical", i)
		case r.MinDelta < 0 || r.MinDelta > 100:
			return fmt.Errorf("rules[%d].min_delta: want 0..100", i)
		case r.Action != Allow && r.Action != NeedApproval && r.Action != Block:
			return fmt.Errorf("rules[%d].action: want allow, needs_approval or block", i)
		}
	}
	return nil
}

// Plan is a billing plan's limits. Zero means no limit.
type Plan struct {
	Name string `json:"name"`
	// Targets caps the workspace's targets; ScansPerMonth its runs per calendar month (UTC).
	Targets       int `json:"targets"`
	ScansPerMonth int `json:"scans_per_month"`
}

// Plans are the plans by name.
var Plans = map[string]Plan{
	"free":       {Name: "free", Targets: 3, ScansPerMonth: 100},
	"team":       {Name: "team", Targets: 50, ScansPerMonth: 5000},
	"enterprise": {Name: "enterprise"},
}

// PlanOf returns the limits of a plan by name; an unknown name reads as free.
func PlanOf(name string) Plan {
	if p, ok := Plans[name]; ok {
		return p
	}
	return Plans["free"]
}

// Month returns the calendar month (UTC) that holds t: the period scans are counted in.
func Month(t time.Time) (from, to time.Time) {
	t = t.UTC()
	from = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return from, from.AddDate(0, 1, 0)
}
