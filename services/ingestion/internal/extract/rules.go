package extract

import (
	"regexp"
	"strings"
	"time"
)

// polarity is what a line or heading says about a requirement or a coverage.
type polarity int8

const (
	polNone polarity = iota
	polPositive
	polNegative
	polCriteria // coverage context only: the text states criteria or requirements
)

var (
	// paRe finds a prior-authorization term.
	paRe = regexp.MustCompile(`(?i)\b(?:prior[\s-]+authori[sz]ations?|pre-?authori[sz]ations?|prior[\s-]+approvals?|pre-?certifications?|precert|prior[\s-]+auth|pre-?service\s+reviews?|prior\s+notification)\b`)
	// paRequireRe: a requirement verb near the term makes a statement of a requirement.
	paRequireRe = regexp.MustCompile(`(?i)\b(?:requir\w*|must|need\w*|subject\s+to|mandatory|obtain\w*)\b`)
	// paNegateRe: a negated requirement. The negation must govern the requirement itself ("is not
	// required", "does not require", "no prior authorization"), not any "not" nearby ("required
	// for services that are not emergent").
	paNegateRe = regexp.MustCompile(`(?i)\b(?:(?:is|are|be|was|were)\s+not\s+(?:\w+\s+)?(?:required|needed|necessary|mandatory)|(?:does|do|will|shall|would|need)\s+not\s+(?:\w+\s+)?(?:require|need|be\s+required)|(?:doesn't|don't|won't|isn't|aren't)\s+(?:\w+\s+)?(?:require|need|required|needed)|no\s+(?:longer\s+)?(?:require[sd]?|need(?:ed|s)?)|not\s+subject\s+to|no\s+(?:prior|pre-?(?:authori|cert|service)))`)
	// paExemptRe exempts without a requirement verb.
	paExemptRe = regexp.MustCompile(`(?i)\b(?:exempt\w*|waived?|no\s+longer\s+requir\w*)\b`)

	// covNegRe: statements that something is not covered. Checked before covPosRe, which would
	// match "medically necessary" inside "not medically necessary".
	covNegRe = regexp.MustCompile(`(?i)\b(?:not\s+(?:be\s+)?covered|non-?covered|not\s+(?:a\s+)?covered\s+benefit|(?:considered\s+)?(?:investigational|experimental|unproven)|not\s+(?:considered\s+)?medically\s+necessary|excluded(?:\s+from\s+coverage)?|exclusions?|no\s+longer\s+covered|(?:will|does|do)\s+not\s+(?:be\s+)?cover(?:ed)?|not\s+eligible\s+for\s+coverage)\b`)
	// covPosRe: statements that something is covered.
	covPosRe = regexp.MustCompile(`(?i)\b(?:(?:is|are|will\s+be|remains?|shall\s+be|be)\s+(?:a\s+)?covered|covers|will\s+cover|(?:considered\s+)?medically\s+necessary|eligible\s+for\s+coverage|coverage\s+is\s+(?:provided|available))\b`)
	// criteriaRe: words that make a changed line a criterion when nothing more specific applies.
	criteriaRe = regexp.MustCompile(`(?i)\b(?:criteria|criterion|must|at\s+least|documentation|documented|required|requirements?|failed|trial\s+of|score|index|greater\s+than|less\s+than|or\s+more|or\s+greater|or\s+less|minimum|maximum|within|days?|weeks?|months?|years?)\b`)

	// headNotRe negates a heading ("Codes Not Requiring Prior Authorization").
	headNotRe = regexp.MustCompile(`(?i)\b(?:not|no|without)\b`)

	// Heading kinds, checked in this order.
	headNegRe      = regexp.MustCompile(`(?i)\b(?:non-?covered|not\s+covered|exclusions?|investigational|experimental|unproven|not\s+medically\s+necessary|limitations?)\b`)
	headCriteriaRe = regexp.MustCompile(`(?i)\b(?:criteria|criterion|requirements?|documentation|guidelines?|conditions|continuation|medical\s+necessity)\b`)
	headPosRe      = regexp.MustCompile(`(?i)\b(?:covered|coverage|indications?|medically\s+necessary|benefits?)\b`)

	// effectiveRe finds "Effective Date: July 1, 2025", "effective 07/01/2025", "Effective as of
	// 2025-07-01". Review, revision and approval dates are not effective dates.
	effectiveRe = regexp.MustCompile(`(?i)\beffective(?:\s+date)?\s*(?::|on|as\s+of|from|-)?\s*(` + dateExpr + `)`)
)

// dateRe finds any date in the accepted formats.
var dateRe = regexp.MustCompile(`(?i)\b(?:` + dateExpr + `)`)

const dateExpr = `(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?\s+\d{1,2},?\s+\d{4}` +
	`|\d{1,2}\s+(?:January|February|March|April|May|June|July|August|September|October|November|December)\s+\d{4}` +
	`|\d{1,2}/\d{1,2}/\d{4}|\d{4}-\d{2}-\d{2}`

// window is how far around a term a verb or negation still belongs to it: about one clause.
const window = 60

// paHints are substrings (ASCII case folded) of every term paRe matches. Checking them first keeps
// the case-insensitive regular expression off the many lines that cannot match: it dominated
// Extract's profile on a 1 MB document (BenchmarkExtract1MB1Percent).
var paHints = []string{"auth", "approv", "cert", "service", "notif"}

// paPolarity classifies the prior-authorization statement of s.
func paPolarity(s string) (polarity, [2]int) {
	if !containsAnyFold(s, paHints) {
		return polNone, [2]int{}
	}
	loc := paRe.FindStringIndex(s)
	if loc == nil {
		return polNone, [2]int{}
	}
	lo, hi := clause(s, loc[0], loc[1])
	ctx := s[lo:hi]
	switch {
	case paExemptRe.MatchString(ctx):
		return polNegative, [2]int{loc[0], loc[1]}
	case paRequireRe.MatchString(ctx) && paNegateRe.MatchString(ctx):
		return polNegative, [2]int{loc[0], loc[1]}
	case paRequireRe.MatchString(ctx):
		return polPositive, [2]int{loc[0], loc[1]}
	}
	return polNone, [2]int{}
}

// headingPA classifies a heading: a heading that names prior authorization announces a list of what
// needs it ("Services Requiring Prior Authorization", "3. Prior Authorization") unless negated.
func headingPA(h string) polarity {
	if !paRe.MatchString(h) {
		return polNone
	}
	if paExemptRe.MatchString(h) || paNegateRe.MatchString(h) || headNotRe.MatchString(h) {
		return polNegative
	}
	return polPositive
}

// coveragePolarity classifies the coverage statement of s and returns where it is.
func coveragePolarity(s string) (polarity, [2]int) {
	if loc := covNegRe.FindStringIndex(s); loc != nil {
		return polNegative, [2]int{loc[0], loc[1]}
	}
	if loc := covPosRe.FindStringIndex(s); loc != nil {
		return polPositive, [2]int{loc[0], loc[1]}
	}
	return polNone, [2]int{}
}

func headingCoverage(h string) polarity {
	switch {
	case headNegRe.MatchString(h):
		return polNegative
	case headCriteriaRe.MatchString(h):
		return polCriteria
	case headPosRe.MatchString(h):
		return polPositive
	}
	return polNone
}

// clause bounds the text around [lo, hi) to its sentence and at most window bytes either side.
func clause(s string, lo, hi int) (int, int) {
	start, end := sentenceBounds(s, lo, hi)
	start = max(start, lo-window)
	end = min(end, hi+window)
	for start > 0 && start < len(s) && !isRuneStart(s[start]) {
		start--
	}
	for end < len(s) && !isRuneStart(s[end]) {
		end++
	}
	return start, end
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// abbreviations end in a period that does not end a sentence.
var abbreviations = setOf("e.g", "i.e", "etc", "no", "nos", "vs", "dr", "mr", "ms", "st", "jan",
	"feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "u.s", "a.m",
	"p.m", "approx", "fig", "incl", "dept", "p.o", "inc", "co", "ltd", "min", "max")

// sentenceBounds returns the sentence of s around [lo, hi): from after the previous ". ", "? " or
// "! " that ends a sentence, to the end of the sentence's own terminator.
func sentenceBounds(s string, lo, hi int) (int, int) {
	start := 0
	for i := lo - 1; i > 0; i-- {
		if s[i] == ' ' && isSentenceEnd(s, i-1) {
			start = i + 1
			break
		}
	}
	end := len(s)
	for i := hi; i < len(s); i++ {
		if isSentenceEnd(s, i) && (i+1 == len(s) || s[i+1] == ' ') {
			end = i + 1
			break
		}
	}
	return start, end
}

// isSentenceEnd reports whether s[i] ends a sentence.
func isSentenceEnd(s string, i int) bool {
	switch s[i] {
	case '?', '!':
		return true
	case '.':
		j := i
		for j > 0 && (isASCIIAlnum(s[j-1]) || s[j-1] == '.') {
			j--
		}
		w := strings.ToLower(s[j:i])
		if abbreviations[w] || len(w) == 1 {
			return false // "e.g.", "Jan.", "P.O.", initials
		}
		return true
	}
	return false
}

// effectiveDates returns the normalised effective dates in s with the location of each match. The
// regular expression runs only on a window at each "effective" found by a plain search.
func effectiveDates(s string) (dates []string, locs [][2]int) {
	const word = "effective"
	for from := 0; ; {
		i := indexFold(s[from:], word)
		if i < 0 {
			return dates, locs
		}
		start := from + i
		from = start + len(word)
		end := min(len(s), start+len(word)+64)
		m := effectiveRe.FindStringSubmatchIndex(s[start:end])
		if m == nil || m[0] != 0 {
			continue
		}
		dates = append(dates, normalizeDate(s[start+m[2]:start+m[3]]))
		locs = append(locs, [2]int{start + m[0], start + m[1]})
		from = start + m[1]
	}
}

// indexFold returns the first index of the lower-case ASCII word in s, ignoring ASCII case, or -1.
func indexFold(s, word string) int {
	for i := 0; i+len(word) <= len(s); i++ {
		if s[i]|0x20 == word[0] && hasPrefixFold(s[i:], word) {
			return i
		}
	}
	return -1
}

// hasPrefixFold reports whether s starts with the lower-case ASCII word, ignoring ASCII case.
func hasPrefixFold(s, word string) bool {
	if len(s) < len(word) {
		return false
	}
	for j := 0; j < len(word); j++ {
		if c := s[j]; c != word[j] && c|0x20 != word[j] {
			return false
		}
	}
	return true
}

func containsAnyFold(s string, words []string) bool {
	for _, w := range words {
		if indexFold(s, w) >= 0 {
			return true
		}
	}
	return false
}

var dateLayouts = []string{"January 2, 2006", "January 2 2006", "Jan 2, 2006", "Jan 2 2006",
	"Jan. 2, 2006", "Jan. 2 2006", "2 January 2006", "1/2/2006", "01/02/2006", "2006-01-02"}

// normalizeDate returns the ISO form of a date written in one of the accepted formats, or the
// text itself (white space collapsed) when no layout parses it ("Sept. 1, 2025").
func normalizeDate(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t.Format(time.DateOnly)
		}
	}
	if strings.HasPrefix(strings.ToLower(s), "sept") {
		return normalizeDate("Sep" + s[4:])
	}
	return s
}
