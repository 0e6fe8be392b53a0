package gate

import (
	"encoding/json"
	"fmt"

	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
)

// Reason says why a decision was taken: RuleIndex is the index of the policy rule that matched
// Change (Rule is a copy), or -1 for the default action, no changes, or no baseline.
type Reason struct {
	Action    reliability.Decision `json:"action"`
	Message   string               `json:"message"`
	RuleIndex int                  `json:"rule_index"`
	Rule      *reliability.Rule    `json:"rule,omitempty"`
	Change    *reliability.Change  `json:"change,omitempty"`
}

// Evaluation is a policy's decision on a diff with its reasons.
type Evaluation struct {
	Decision reliability.Decision `json:"decision"`
	Reasons  []Reason             `json:"reasons"`
}

// MaxReasons bounds the reasons an evaluation lists (a diff of a large surface could match every
// rule on every tool); the decision still counts every match.
const MaxReasons = 200

// Matches reports whether rule r matches change c: the kind when the rule names one, the risk at
// or above the rule's, and for a rule with MinDelta a score change of at least that many points
// (either direction: a drop rule only ever meets drops).
func Matches(r reliability.Rule, c reliability.Change) bool {
	if r.Change != "" && r.Change != c.Kind {
		return false
	}
	if r.Risk != "" && !c.Risk.AtLeast(r.Risk) {
		return false
	}
	if r.MinDelta > 0 && abs(c.Delta) < r.MinDelta {
		return false
	}
	return true
}

// Evaluate applies p to changes. Without changes the decision is allow. Otherwise every rule that
// matches a change contributes its action, a change no rule matches contributes the policy's
// default action, and the decision is the strictest contribution.
func Evaluate(p reliability.Policy, changes []reliability.Change) Evaluation {
	if len(changes) == 0 {
		return Evaluation{Decision: reliability.Allow, Reasons: []Reason{{Action: reliability.Allow, RuleIndex: -1,
			Message: "no changes from the baseline"}}}
	}
	ev := Evaluation{Decision: reliability.Allow, Reasons: []Reason{}}
	note := func(r Reason) {
		ev.Decision = ev.Decision.Stricter(r.Action)
		if len(ev.Reasons) < MaxReasons {
			ev.Reasons = append(ev.Reasons, r)
		}
	}
	for i := range changes {
		c := changes[i]
		matched := false
		for j := range p.Rules {
			r := p.Rules[j]
			if !Matches(r, c) {
				continue
			}
			matched = true
			note(Reason{Action: r.Action, RuleIndex: j, Rule: &r, Change: &c,
				Message: fmt.Sprintf("rule %d (%s) matched %s", j, describe(r), describeChange(c))})
		}
		if !matched {
			note(Reason{Action: p.DefaultAction, RuleIndex: -1, Change: &c,
				Message: fmt.Sprintf("no rule matched %s: default action %s", describeChange(c), p.DefaultAction)})
		}
	}
	return ev
}

// NoBaseline is the evaluation of a run whose target has no baseline yet: allow, since there is
// nothing to compare with.
func NoBaseline() Evaluation {
	return Evaluation{Decision: reliability.Allow, Reasons: []Reason{{Action: reliability.Allow, RuleIndex: -1,
		Message: "no baseline: the target has no accepted run to compare with"}}}
}

func describe(r reliability.Rule) string {
	s := ""
	if r.Change != "" {
		s = "change " + r.Change
	}
	if r.Risk != "" {
		if s != "" {
			s += ", "
		}
		s += "risk >= " + string(r.Risk)
	}
	if r.MinDelta > 0 {
		s += fmt.Sprintf(", at least %d points", r.MinDelta)
	}
	return s + " -> " + string(r.Action)
}

func describeChange(c reliability.Change) string {
	s := c.Kind
	if c.Item != "" {
		s += " of " + c.Item
	}
	return s + " (" + string(c.Risk) + ")"
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func jsonObject(raw []byte, v *map[string]any) bool {
	return json.Unmarshal(raw, v) == nil && *v != nil
}
