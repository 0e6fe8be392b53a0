// Package extract derives deterministic facts from the difference between two normalised versions
// of a policy document (README "Policies, facts and the ledger"), recognises billing and diagnosis
// codes, and verifies that a quote occurs in one of the versions (the evidence check).
//
// It is pure domain code over normalize.Document values: no transport or storage imports.
package extract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/normalize"
)

// Change types of a Fact.
const (
	CoverageAdded        = "coverage_added"
	CoverageRemoved      = "coverage_removed"
	PriorAuthAdded       = "prior_auth_added"
	PriorAuthRemoved     = "prior_auth_removed"
	CodeAdded            = "code_added"
	CodeRemoved          = "code_removed"
	EffectiveDateChanged = "effective_date_changed"
	CriteriaChanged      = "criteria_changed"
)

// Evidence sides: the version a quote is taken from.
const (
	SideCurrent  = "current"
	SidePrevious = "previous"
)

// Fact is one deterministic finding about a change between two versions.
type Fact struct {
	// ChangeType is one of the change-type constants.
	ChangeType string
	// Summary is a one-line description built from a fixed template.
	Summary string
	// AffectedCodes are the code values the fact is about, sorted; empty when it names none.
	AffectedCodes []string
	// EvidenceQuote is an exact substring of the Text of the version named by EvidenceSide: a
	// sentence, or a whole block when the sentence is short, at most maxQuote bytes.
	EvidenceQuote string
	// EvidenceSide is SideCurrent or SidePrevious.
	EvidenceSide string
	// SectionHeading is the heading of the section holding the quote in that version ("" for
	// text before the first heading).
	SectionHeading string
}

// maxQuote bounds an evidence quote; a longer sentence is cut around the matched term.
const maxQuote = 500

// minQuote is the length below which a sentence is too short to stand alone ("E2103.") and the
// whole block is quoted instead.
const minQuote = 20

// Extract compares prev and cur and returns the facts of their difference, in the order of the
// hunks they come from. It returns no facts for the first version (prev nil) or identical texts.
// Its time is bounded by Diff's (ctx and DiffTimeout) plus work linear in the two texts.
//
// The diff (Diff) yields hunks: runs of deleted and inserted lines between unchanged ones. A line
// deleted here but present elsewhere in the current version (or inserted but present in the
// previous one) has moved and is ignored. Within a hunk a deleted and an inserted line whose word
// sets overlap by half or more (Jaccard) are a modified pair. Each changed line is then read in its
// context: its own words first; else the nearest lead-in line ending in ':' above it in its section
// (within 50 lines: "Prior authorization is required for the following codes:"); else its section
// heading. Heading lines themselves only count for codes and dates.
//
// Rule table (evidence side in brackets; "inserted" and "deleted" are lines after the move check):
//
//	effective_date_changed  an inserted line holds "Effective[ Date][:| on| as of] DATE" (DATE as
//	                        "July 1, 2025", "07/01/2025", "2025-07-01" or "1 July 2025") whose date
//	                        is not an effective date of the previous version [current]; review and
//	                        revision dates never count
//	code_added              codes on an inserted line that occur nowhere in the previous version
//	                        [current]
//	code_removed            codes on a deleted line that occur nowhere in the current version
//	                        [previous]
//	prior_auth_added        an inserted line that requires prior authorization (a term such as
//	                        "prior authorization", "precertification", "pre-service review" with a
//	                        requirement verb such as "required", "must", "subject to", and no
//	                        negation of that verb), or inherits the requirement from its lead-in or
//	                        heading ("Services Requiring Prior Authorization"): its codes that did
//	                        not require it in the previous version [current]; without codes, only a
//	                        line that states the requirement itself and replaces no such line
//	prior_auth_removed      the mirror image on a deleted line: its codes that no longer require
//	                        it [previous]; or an inserted line that negates the requirement ("is no
//	                        longer required", "does not require", "exempt from") for codes that
//	                        required it [previous when the hunk deletes the requiring line, else
//	                        current]
//	coverage_added          an inserted line stating coverage ("is covered", "considered
//	                        medically necessary", "eligible for coverage") or under a covering
//	                        lead-in or heading ("Covered Indications") [current]; a deleted line
//	                        stating non-coverage [previous]; a modified pair going from not covered
//	                        (or silent) to covered [current]
//	coverage_removed        an inserted line stating non-coverage ("not covered", "non-covered",
//	                        "considered investigational", "experimental", "not medically
//	                        necessary", "excluded") or under such a heading ("Exclusions") [current];
//	                        a deleted line stating or inheriting coverage [previous]; a modified
//	                        pair going from covered to not covered (or silent) [previous]
//	criteria_changed        an inserted or deleted line under a criteria heading ("Criteria",
//	                        "Requirements", "Documentation", "Continuation") [its side]; a modified
//	                        pair whose coverage reading did not flip, that no code, date or
//	                        prior-authorization fact explains, that differs in more than dates
//	                        ("Last Reviewed: ..."), and that has a coverage or criteria
//	                        context or criteria words ("must", "at least", "within", "score",
//	                        "days") [current]
//
// A line may give facts of several types (a new row in a prior-authorization table adding a new
// code gives code_added and prior_auth_added). Within one type a code is reported once, by the
// first fact in document order whose evidence side fits the type's direction (current for
// additions, previous for removals); a fact left without codes is dropped, and facts without codes
// are unique by quote. Prior-authorization and coverage facts may name codes present in both
// versions (CodeDiff cannot confirm those).
func Extract(ctx context.Context, prev, cur *normalize.Document) ([]Fact, error) {
	if cur == nil {
		return nil, errors.New("extract: nil current document")
	}
	if prev == nil || prev.Text == cur.Text {
		return nil, nil
	}
	changes, err := Diff(ctx, prev.Text, cur.Text)
	if err != nil {
		return nil, err
	}
	e := &extractor{prev: newDocIndex(prev, SidePrevious), cur: newDocIndex(cur, SideCurrent)}
	for i, h := range hunks(changes) {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		e.hunk(h)
	}
	return e.facts(), nil
}

type extractor struct {
	prev, cur  *docIndex
	candidates []candidate
}

// candidate is a fact before de-duplication: its quote and summary are built once its codes are
// final.
type candidate struct {
	changeType string
	line       *lineInfo
	codes      []string
	loc        [2]int // the matched term in line.text; zero for none
	detail     string // summary detail (dates)
}

func (e *extractor) add(changeType string, l *lineInfo, codes []string, loc [2]int) {
	e.candidates = append(e.candidates, candidate{changeType: changeType, line: l, codes: codes, loc: loc})
}

func (e *extractor) hunk(h hunk) {
	var del, ins []*lineInfo
	for _, l := range h.deleted {
		if !e.cur.hasLine(l.text) {
			del = append(del, e.prev.info(l))
		}
	}
	for _, l := range h.inserted {
		if !e.prev.hasLine(l.text) {
			ins = append(ins, e.cur.info(l))
		}
	}
	if len(del) == 0 && len(ins) == 0 {
		return
	}
	pairOf := pairLines(del, ins)

	// Effective dates.
	for _, a := range ins {
		for i, d := range a.dates {
			if !e.prev.effDates[d] {
				c := candidate{changeType: EffectiveDateChanged, line: a, loc: a.dateLocs[i]}
				c.detail = fmt.Sprintf("Effective date changed from %s to %s", e.previousDates(), d)
				e.candidates = append(e.candidates, c)
				a.explained = true
			}
		}
	}
	for _, r := range del {
		if len(r.dates) > 0 {
			r.explained = true
		}
	}

	// Codes.
	for _, r := range del {
		if gone := missingFrom(r.codes, e.cur.codes); len(gone) > 0 {
			e.add(CodeRemoved, r, gone, [2]int{})
			r.explained = true
		}
	}
	for _, a := range ins {
		if added := missingFrom(a.codes, e.prev.codes); len(added) > 0 {
			e.add(CodeAdded, a, added, [2]int{})
			a.explained = true
		}
	}

	// Prior authorization.
	hasExplicitPA := func(ls []*lineInfo) bool {
		for _, l := range ls {
			if !l.heading && l.paPol == polPositive && l.paExplicit && len(l.codes) == 0 {
				return true
			}
		}
		return false
	}
	for _, r := range del {
		if r.heading || r.paPol != polPositive {
			continue
		}
		if len(r.codes) > 0 {
			if gone := filterCodes(r.codes, e.cur.paRequired, false); len(gone) > 0 {
				e.add(PriorAuthRemoved, r, gone, r.paLoc)
				r.explained = true
			}
		} else if r.paExplicit && !hasExplicitPA(ins) {
			e.add(PriorAuthRemoved, r, nil, r.paLoc)
			r.explained = true
		}
	}
	for ai, a := range ins {
		if a.heading {
			continue
		}
		switch {
		case a.paPol == polPositive && len(a.codes) > 0:
			if added := filterCodes(a.codes, e.prev.paRequired, false); len(added) > 0 {
				e.add(PriorAuthAdded, a, added, a.paLoc)
				a.explained = true
			}
		case a.paPol == polPositive && a.paExplicit:
			if !hasExplicitPA(del) {
				e.add(PriorAuthAdded, a, nil, a.paLoc)
				a.explained = true
			}
		case a.paPol == polNegative && a.paExplicit:
			codes := filterCodes(a.codes, e.prev.paRequired, true)
			if len(a.codes) > 0 && len(codes) == 0 {
				break // these codes never needed it
			}
			ev := a
			if r := pairOf.del(ai); r != nil && r.paPol == polPositive {
				ev = r
			}
			e.add(PriorAuthRemoved, ev, codes, ev.paLoc)
			a.explained = true
		}
	}

	// Coverage and criteria.
	for ri, r := range del {
		if r.heading {
			continue
		}
		if ai := pairOf.ins(ri); ai >= 0 && !ins[ai].heading {
			e.pair(r, ins[ai])
			continue
		}
		switch r.covPol {
		case polPositive:
			e.add(CoverageRemoved, r, codeValues(r.codes), r.covLoc)
		case polNegative:
			e.add(CoverageAdded, r, codeValues(r.codes), r.covLoc)
		case polCriteria:
			e.add(CriteriaChanged, r, codeValues(r.codes), [2]int{})
		}
	}
	for ai, a := range ins {
		if a.heading || pairOf.del(ai) != nil && !pairOf.del(ai).heading {
			continue
		}
		switch a.covPol {
		case polPositive:
			e.add(CoverageAdded, a, codeValues(a.codes), a.covLoc)
		case polNegative:
			e.add(CoverageRemoved, a, codeValues(a.codes), a.covLoc)
		case polCriteria:
			e.add(CriteriaChanged, a, codeValues(a.codes), [2]int{})
		}
	}
}

// pair applies the coverage and criteria rules to a modified line.
func (e *extractor) pair(r, a *lineInfo) {
	rp, ap := r.covPol, a.covPol
	switch {
	case rp == polPositive && ap != polPositive:
		e.add(CoverageRemoved, r, codeValues(r.codes), r.covLoc)
	case ap == polPositive && rp != polPositive:
		e.add(CoverageAdded, a, codeValues(a.codes), a.covLoc)
	case rp == polNegative && ap == polNone:
		e.add(CoverageAdded, r, codeValues(r.codes), r.covLoc)
	case ap == polNegative && rp == polNone:
		e.add(CoverageRemoved, a, codeValues(a.codes), a.covLoc)
	case r.explained || a.explained || !slices.Equal(codeValues(r.codes), codeValues(a.codes)):
		// A code, date or prior-authorization change accounts for the edit.
	case dateRe.ReplaceAllString(r.text, "") == dateRe.ReplaceAllString(a.text, ""):
		// Only a date changed: review and revision stamps are not criteria.
	case rp != polNone || ap != polNone || criteriaRe.MatchString(r.text) || criteriaRe.MatchString(a.text):
		e.add(CriteriaChanged, a, codeValues(a.codes), [2]int{})
	}
}

func (e *extractor) previousDates() string {
	var old []string
	for d := range e.prev.effDates {
		if !e.cur.effDates[d] {
			old = append(old, d)
		}
	}
	if len(old) == 0 {
		for d := range e.prev.effDates {
			old = append(old, d)
		}
	}
	if len(old) == 0 {
		return "unstated"
	}
	sort.Strings(old)
	return strings.Join(old, ", ")
}

// facts de-duplicates the candidates and builds their quotes and summaries.
func (e *extractor) facts() []Fact {
	reported := map[string]map[string]bool{}
	quoted := map[string]bool{}
	keep := make([]bool, len(e.candidates))
	for pass := 0; pass < 2; pass++ {
		for i := range e.candidates {
			c := &e.candidates[i]
			fits := direction(c.changeType) == "" || direction(c.changeType) == c.line.ix.side
			if fits != (pass == 0) {
				continue
			}
			if c.changeType == EffectiveDateChanged || len(c.codes) == 0 {
				key := c.changeType + "\x00" + c.line.ix.side + "\x00" + e.quote(c)
				if !quoted[key] {
					quoted[key], keep[i] = true, true
				}
				continue
			}
			seen := reported[c.changeType]
			if seen == nil {
				seen = map[string]bool{}
				reported[c.changeType] = seen
			}
			var left []string
			for _, v := range c.codes {
				if !seen[v] {
					seen[v] = true
					left = append(left, v)
				}
			}
			c.codes, keep[i] = left, len(left) > 0
		}
	}
	var out []Fact
	for i, c := range e.candidates {
		if !keep[i] {
			continue
		}
		ix := c.line.ix
		sec, _ := ix.doc.SectionAt(c.line.off)
		q := e.quote(&c)
		out = append(out, Fact{
			ChangeType: c.changeType, Summary: e.summary(&c, q), AffectedCodes: c.codes,
			EvidenceQuote: q, EvidenceSide: ix.side, SectionHeading: sec.Heading,
		})
	}
	return out
}

// quote returns the evidence quote of a candidate: the sentence around its term (or its first
// code), or the whole block when that sentence is short. A quote from the previous version must
// not also occur in the current one, or verification would attribute it to the current side.
func (e *extractor) quote(c *candidate) string {
	l := c.line
	lo, hi := c.loc[0], c.loc[1]
	if lo == hi {
		for _, m := range l.codes {
			if len(c.codes) == 0 || slices.Contains(c.codes, m.Value) {
				lo, hi = m.start, m.end
				break
			}
		}
	}
	if c.changeType == EffectiveDateChanged {
		return l.text[lo:hi]
	}
	q := l.text
	if lo != hi {
		s, t := sentenceBounds(l.text, lo, hi)
		q = strings.TrimSpace(l.text[s:t])
		if len(q) < minQuote {
			q = l.text
		}
		if len(q) > maxQuote {
			q = cutAround(l.text, lo, hi)
		}
	} else if len(q) > maxQuote {
		q = cutAround(l.text, 0, 0)
	}
	if l.ix.side == SidePrevious && q != l.text && indexSpaceFold(e.cur.doc.Text, q) >= 0 {
		q = l.text
		if len(q) > maxQuote {
			q = cutAround(l.text, lo, hi)
		}
	}
	return q
}

// cutAround returns at most maxQuote bytes of s around [lo, hi), cut at spaces.
func cutAround(s string, lo, hi int) string {
	start := max(0, lo-(maxQuote-(hi-lo))/2)
	end := min(len(s), start+maxQuote)
	start = max(0, end-maxQuote)
	if start > 0 {
		if i := strings.IndexByte(s[start:end], ' '); i >= 0 && start+i < lo {
			start += i + 1
		}
	}
	if end < len(s) {
		if i := strings.LastIndexByte(s[start:end], ' '); i > 0 && start+i >= hi {
			end = start + i
		}
	}
	for start < end && !isRuneStart(s[start]) {
		start++
	}
	for end > start && end < len(s) && !isRuneStart(s[end]) {
		end--
	}
	return strings.TrimSpace(s[start:end])
}

func (e *extractor) summary(c *candidate, quote string) string {
	if c.changeType == EffectiveDateChanged {
		return c.detail
	}
	codes := e.qualified(c.codes)
	switch c.changeType {
	case CodeAdded:
		return plural("Code", "Codes", len(c.codes)) + " added: " + codes
	case CodeRemoved:
		return plural("Code", "Codes", len(c.codes)) + " removed: " + codes
	case PriorAuthAdded:
		if codes != "" {
			return "Prior authorization now required for " + codes
		}
		return "Prior authorization requirement added: " + clip(quote, 140)
	case PriorAuthRemoved:
		if codes != "" {
			return "Prior authorization no longer required for " + codes
		}
		return "Prior authorization requirement removed: " + clip(quote, 140)
	case CoverageAdded:
		if codes != "" {
			return "Coverage added for " + codes + ": " + clip(quote, 120)
		}
		return "Coverage added: " + clip(quote, 140)
	case CoverageRemoved:
		if codes != "" {
			return "Coverage removed for " + codes + ": " + clip(quote, 120)
		}
		return "Coverage removed: " + clip(quote, 140)
	}
	sec, _ := c.line.ix.doc.SectionAt(c.line.off)
	if sec.Heading != "" {
		return fmt.Sprintf("Criteria changed in %q: %s", sec.Heading, clip(quote, 120))
	}
	return "Criteria changed: " + clip(quote, 140)
}

// qualified names codes with their systems: "CPT 71250, HCPCS E2103".
func (e *extractor) qualified(values []string) string {
	parts := make([]string, 0, len(values))
	for _, v := range values {
		c, ok := e.cur.codes[v]
		if !ok {
			c = e.prev.codes[v]
		}
		parts = append(parts, c.System+" "+v)
	}
	return strings.Join(parts, ", ")
}

func plural(one, many string, n int) string {
	if n == 1 {
		return one
	}
	return many
}

// clip shortens s to at most n bytes at a rune boundary, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return strings.TrimSpace(s[:n]) + "…"
}

// direction is the evidence side a change type's evidence naturally comes from.
func direction(changeType string) string {
	switch changeType {
	case CoverageAdded, PriorAuthAdded, CodeAdded, EffectiveDateChanged:
		return SideCurrent
	case CoverageRemoved, PriorAuthRemoved, CodeRemoved:
		return SidePrevious
	}
	return ""
}

// codeValues returns the distinct values of ms, sorted.
func codeValues(ms []codeMatch) []string {
	var out []string
	for _, m := range ms {
		if !slices.Contains(out, m.Value) {
			out = append(out, m.Value)
		}
	}
	sort.Strings(out)
	return out
}

// missingFrom returns the distinct values of ms absent from set, sorted.
func missingFrom(ms []codeMatch, set map[string]Code) []string {
	var out []string
	for _, v := range codeValues(ms) {
		if _, ok := set[v]; !ok {
			out = append(out, v)
		}
	}
	return out
}

// filterCodes returns the distinct values of ms for which pred is want, sorted.
func filterCodes(ms []codeMatch, pred func(string) bool, want bool) []string {
	var out []string
	for _, v := range codeValues(ms) {
		if pred(v) == want {
			out = append(out, v)
		}
	}
	return out
}
