// Package confidence scores an extracted fact deterministically and decides its change event's status.
//
// Confidence is a weighted sum of seven components, each in [0, 1]; the weights sum to 1:
//
//	component           weight  value
//	evidence_verified    0.25   1 when the quote was found in the side it cites, else 0
//	evidence_side        0.10   1 when the quote was found on the side the extraction claimed (current or
//	                            previous), else 0: a removal whose quote only matches the new text, or
//	                            the other way round, is suspect
//	code_cross_check     0.20   agreement of the fact's affected_codes with the code differences computed
//	                            independently from the same diff: 1.0 for full agreement, 0.0 as soon as
//	                            one code is mismatched (README "Confidence"). code_added and code_removed facts are
//	                            checked against the set difference of the two versions' codes; other
//	                            facts against the codes on the inserted (current-side facts) or deleted
//	                            (previous-side facts) lines of the diff. A fact without codes scores 1.0
//	rule_strength        0.15   how specific the extraction rule is: structural changes (codes, dates)
//	                            1.0, prior authorization 0.9, coverage 0.8, criteria 0.6
//	section_attribution  0.10   1 when the evidence lies under a named section heading, else 0.5
//	source_health        0.10   1 for a healthy source, 0.5 for a new or degraded one
//	quote_quality        0.10   1 for a quote of 20 to 600 characters, 0.5 for a shorter or longer one
//
// A change event is AUTO_PUBLISHED at or above the auto-publish level, REJECTED below the review level,
// and PENDING_REVIEW in between; a fact without verified evidence is NO_VERIFIABLE_EVIDENCE whatever
// its score, since only verified evidence may publish.
package confidence

import (
	"math"
	"slices"
)

// Weights of the seven components, by name.
var Weights = map[string]float64{
	"evidence_verified":   0.25,
	"evidence_side":       0.10,
	"code_cross_check":    0.20,
	"rule_strength":       0.15,
	"section_attribution": 0.10,
	"source_health":       0.10,
	"quote_quality":       0.10,
}

var componentOrder = []string{"evidence_verified", "evidence_side", "code_cross_check", "rule_strength",
	"section_attribution", "source_health", "quote_quality"}

// Statuses of a change event.
const (
	AutoPublished        = "AUTO_PUBLISHED"
	PendingReview        = "PENDING_REVIEW"
	Rejected             = "REJECTED"
	NoVerifiableEvidence = "NO_VERIFIABLE_EVIDENCE"
)

// Input is what the components are computed from.
type Input struct {
	ChangeType       string
	EvidenceVerified bool
	// ClaimedSide is the side ("current" or "previous") the extraction says its quote comes from;
	// VerifiedSide is where verification found it.
	ClaimedSide   string
	VerifiedSide  string
	AffectedCodes []string
	// The code differences computed independently from the same diff: codes only in the current
	// version, codes only in the previous one, and the codes on inserted and on deleted lines.
	CodesAdded      []string
	CodesRemoved    []string
	CodesOnInserted []string
	CodesOnDeleted  []string
	Section         string
	SourceHealth    string
	Quote           string
}

// Score returns the confidence (rounded to 4 decimals, as stored) and its components.
func Score(in Input) (float64, map[string]float64) {
	c := map[string]float64{
		"evidence_verified":   b2f(in.EvidenceVerified),
		"evidence_side":       b2f(in.EvidenceVerified && in.VerifiedSide == in.ClaimedSide),
		"code_cross_check":    codeAgreement(in),
		"rule_strength":       ruleStrength(in.ChangeType),
		"section_attribution": 0.5,
		"source_health":       0.5,
		"quote_quality":       0.5,
	}
	if in.Section != "" {
		c["section_attribution"] = 1
	}
	if in.SourceHealth == "HEALTHY" {
		c["source_health"] = 1
	}
	if n := len([]rune(in.Quote)); n >= 20 && n <= 600 {
		c["quote_quality"] = 1
	}
	total := 0.0
	for _, name := range componentOrder { // a fixed order keeps the float sum identical run to run
		total += Weights[name] * c[name]
	}
	return math.Round(total*10000) / 10000, c
}

// Thresholds are the two levels that decide a status.
type Thresholds struct {
	AutoPublish float64
	Review      float64
	// Scope is the row that applied: "source_type", "type" or "global".
	Scope string
}

// GlobalDefault applies when no stored threshold matches (README "Confidence": 0.85 auto-publish, 0.6
// review).
var GlobalDefault = Thresholds{AutoPublish: 0.85, Review: 0.6, Scope: "global"}

// Rule is one stored threshold row: for a source and change type, for a change type, or global.
type Rule struct {
	ForSource   bool   // the row names the source being scored
	ChangeType  string // empty for the global row
	AutoPublish float64
	Review      float64
}

// Select returns the most specific thresholds for changeType among rules (a source's own rows and the
// shared ones): source and type, then type, then global, then GlobalDefault when no row matches.
func Select(rules []Rule, changeType string) Thresholds {
	best, rank := GlobalDefault, 0
	for _, r := range rules {
		var this int
		var scope string
		switch {
		case r.ForSource && r.ChangeType == changeType:
			this, scope = 3, "source_type"
		case !r.ForSource && r.ChangeType == changeType:
			this, scope = 2, "type"
		case !r.ForSource && r.ChangeType == "":
			this, scope = 1, "global"
		default:
			continue
		}
		if this > rank {
			best, rank = Thresholds{AutoPublish: r.AutoPublish, Review: r.Review, Scope: scope}, this
		}
	}
	return best
}

// Decide returns the change event's status.
func Decide(confidence float64, verified bool, t Thresholds) string {
	switch {
	case !verified:
		return NoVerifiableEvidence
	case confidence >= t.AutoPublish:
		return AutoPublished
	case confidence < t.Review:
		return Rejected
	default:
		return PendingReview
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func codeAgreement(in Input) float64 {
	if len(in.AffectedCodes) == 0 {
		return 1
	}
	var diff []string
	switch {
	case in.ChangeType == "code_added":
		diff = in.CodesAdded
	case in.ChangeType == "code_removed":
		diff = in.CodesRemoved
	case in.ClaimedSide == "previous":
		diff = in.CodesOnDeleted
	default:
		diff = in.CodesOnInserted
	}
	for _, code := range in.AffectedCodes {
		if !slices.Contains(diff, code) {
			return 0
		}
	}
	return 1
}

func ruleStrength(changeType string) float64 {
	switch changeType {
	case "code_added", "code_removed", "effective_date_changed":
		return 1
	case "prior_auth_added", "prior_auth_removed":
		return 0.9
	case "coverage_added", "coverage_removed":
		return 0.8
	}
	return 0.6
}
