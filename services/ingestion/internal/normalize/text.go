package normalize

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Plain text and pdftotext output arrive as physical lines: paragraphs wrapped at a margin, table
// cells on lines of their own, running headers and page numbers on every page. normalizeLines
// rebuilds blocks with these rules:
//
//   - Chrome: a line that is only a page number ("Page 2 of 5", "- 2 -", "2/5") is dropped, and so is
//     a line among the first or last two of a page whose text, digits masked, recurs there on at
//     least half of the pages (two at least): running headers and footers.
//   - A blank line or a page break ends a block.
//   - Headings (one block each, starting a section), only on a line that starts a block or follows
//     a line ending a sentence (".", "!", "?"), and never on a bullet item:
//     numbered ("1. Purpose", "2.1 Criteria", "IV. Coding", "Section 3: Exclusions", "Part B"),
//     ALL-CAPS short lines ("COVERAGE CRITERIA"), short lines ending in ':' ("Covered indications:"),
//     and the document's first line when it is short and unpunctuated (the title). Short means at
//     most 8 words and 60 characters (80 for a title); a numbered line ending in '.', ',' or ';' is a
//     list item, not a heading.
//   - A line joins the block above it (a soft wrap) unless it starts a list item (bullet, "1.",
//     "1)", "(a)", "a."; a bullet glyph is dropped), starts a table row (it starts with a billing code,
//     optionally after "CPT" or "HCPCS", and so did the block above), or the line above ended it:
//     shorter than 60 % of the document's wrap width (the 90th percentile of line lengths), or
//     ending in ':'. A line holding only codes always takes the next line (a code and its
//     description in two table cells).
var (
	pageNumberRe = regexp.MustCompile(`(?i)^(?:page\s+\d+(?:\s+of\s+\d+)?|-\s*\d+\s*-|\d+\s*/\s*\d+|\d{1,4})$`)
	numberedRe   = regexp.MustCompile(`^(?:(?i:section|part|article|chapter)\s+(?:[0-9]+[A-Za-z]?|[IVXivx]+|[A-Z])(?:\.[0-9]+)*[.:]?|[0-9]{1,2}(?:\.[0-9]{1,2}){0,3}\.?|[IVX]{1,5}\.|[A-H]\.)(?:\s+(.*))?$`)
	orderedRe    = regexp.MustCompile(`^[0-9]{1,2}\.\s`)
	listRe       = regexp.MustCompile(`^(?:[•·▪◦‣○●■□➢►*–—-]|\(?[0-9]{1,2}\)|\([a-zA-Z]{1,4}\)|[a-z][.)])\s`)
	codeTokenRe  = regexp.MustCompile(`^(?:[0-9]{4}[0-9FTU]|[A-Z][0-9]{4}|[A-Z][0-9][0-9A-Z]\.[0-9A-Z]{1,4})$`)
)

// bulletGlyphs are the list markers dropped from the start of a list item.
const bulletGlyphs = "•·▪◦‣○●■□➢►*–—-"

const (
	maxHeadingWords = 8
	maxHeadingRunes = 60
	maxTitleRunes   = 80
	shortLineRatio  = 0.6
)

func normalizeLines(pages [][]string) *builder {
	lines := dropChrome(pages)
	wrap := wrapWidth(lines)
	b := &builder{}
	var cur []string
	endBlock := func() {
		if len(cur) > 0 {
			b.add(strings.Join(cur, " "), false, 0)
			cur = cur[:0]
		}
	}
	prevEnded, prevSentence, prevBareCode, first := true, false, false, true
	for _, raw := range lines {
		l := canonicalBlock(raw)
		if l == "" {
			endBlock()
			prevEnded, prevSentence, prevBareCode = true, false, false
			continue
		}
		bullet := listRe.MatchString(l)
		isList := bullet || orderedRe.MatchString(l)
		if !bullet && (prevEnded || prevSentence) {
			if lvl, ok := headingLike(l, first); ok {
				endBlock()
				b.add(l, true, lvl)
				prevEnded, prevSentence, prevBareCode, first = true, false, false, false
				continue
			}
		}
		first = false
		if bullet {
			// The glyph of a bullet is presentation, like an HTML <li>'s marker; numbers and
			// letters of ordered items are kept.
			l = strings.TrimLeft(l, bulletGlyphs+" ")
		}
		bare := bareCodes(l)
		startsCode := startsWithCode(l)
		// A code at the start of a line begins a table row when the block above is a row too;
		// otherwise it is a wrapped sentence's next word ("... testing (CPT" / "95800, 95806 ...").
		newRow := startsCode && len(cur) > 0 && startsWithCode(cur[0])
		join := len(cur) > 0 && !isList && (prevBareCode || (!prevEnded && !newRow))
		if !join {
			endBlock()
		}
		cur = append(cur, l)
		n := utf8.RuneCountInString(l)
		prevEnded = float64(n) < shortLineRatio*wrap || strings.HasSuffix(l, ":")
		prevSentence = strings.ContainsAny(l[len(l)-1:], ".!?")
		prevBareCode = bare
	}
	endBlock()
	return b
}

// dropChrome flattens pages into lines without page numbers and running headers or footers; each
// page break becomes a blank line.
func dropChrome(pages [][]string) []string {
	type edge struct{ page, line int }
	counts := map[string]int{}
	var edges []edge
	nonEmpty := 0
	for p, lines := range pages {
		idx := make([]int, 0, len(lines))
		for i, l := range lines {
			if strings.TrimSpace(l) != "" {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		nonEmpty++
		seen := map[string]bool{}
		for k, i := range idx {
			if k >= 2 && k < len(idx)-2 {
				continue
			}
			edges = append(edges, edge{p, i})
			key := maskDigits(lines[i])
			if !seen[key] {
				seen[key] = true
				counts[key]++
			}
		}
	}
	drop := map[edge]bool{}
	if nonEmpty >= 2 {
		need := max(2, (nonEmpty+1)/2)
		for _, e := range edges {
			if counts[maskDigits(pages[e.page][e.line])] >= need {
				drop[e] = true
			}
		}
	}
	var out []string
	for p, lines := range pages {
		if p > 0 {
			out = append(out, "")
		}
		for i, l := range lines {
			if drop[edge{p, i}] || pageNumberRe.MatchString(strings.TrimSpace(l)) {
				continue
			}
			out = append(out, l)
		}
	}
	return out
}

func maskDigits(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return '#'
		}
		return r
	}, s)
}

// wrapWidth estimates the width, in runes, at which the text was wrapped: the 90th percentile of
// non-blank line lengths.
func wrapWidth(lines []string) float64 {
	var n []int
	for _, l := range lines {
		if c := utf8.RuneCountInString(strings.TrimSpace(l)); c > 0 {
			n = append(n, c)
		}
	}
	if len(n) == 0 {
		return 0
	}
	sort.Ints(n)
	return float64(n[len(n)*9/10])
}

// headingLike applies the heading rules of normalizeLines to a canonical line and returns the level.
func headingLike(l string, first bool) (int, bool) {
	runes := utf8.RuneCountInString(l)
	if runes > maxTitleRunes || letters(l) < 2 {
		return 0, false
	}
	words := len(strings.Fields(l))
	if m := numberedRe.FindStringSubmatch(l); m != nil {
		title := m[1]
		if title == "" {
			// "Section 2" alone; a bare "1." or "A." is not a heading.
			if strings.ContainsAny(l[:1], "SsPpAaCc") && words == 2 {
				return 1, true
			}
			return 0, false
		}
		r, _ := utf8.DecodeRuneInString(title)
		if utf8.RuneCountInString(title) > maxHeadingRunes || len(strings.Fields(title)) > maxHeadingWords ||
			strings.ContainsAny(title[len(title)-1:], ".,;") || !unicode.IsUpper(r) {
			return 0, false
		}
		num := strings.Fields(l)[0]
		if lvl := strings.Count(strings.TrimSuffix(num, "."), ".") + 1; num[0] >= '0' && num[0] <= '9' {
			return lvl, true
		}
		if len(num) == 2 && num[0] >= 'A' && num[0] <= 'H' {
			return 2, true
		}
		return 1, true
	}
	if runes > maxHeadingRunes || words > maxHeadingWords {
		if first && titleLike(l) {
			return 1, true
		}
		return 0, false
	}
	if hasCodeToken(l) {
		return 0, false
	}
	if isAllCaps(l) {
		return 1, true
	}
	r, _ := utf8.DecodeRuneInString(l)
	if strings.HasSuffix(l, ":") && unicode.IsUpper(r) && strings.Count(l, ":") == 1 {
		return 2, true
	}
	if first && titleLike(l) {
		return 1, true
	}
	return 0, false
}

func titleLike(l string) bool {
	r, _ := utf8.DecodeRuneInString(l)
	last, _ := utf8.DecodeLastRuneInString(l)
	return unicode.IsUpper(r) && !strings.ContainsRune(".,;:", last) && !hasCodeToken(l)
}

func letters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}

// isAllCaps: at least four letters, none lower case, and letters make up most of the line.
func isAllCaps(l string) bool {
	lettersN, other := 0, 0
	for _, r := range l {
		switch {
		case unicode.IsLower(r):
			return false
		case unicode.IsLetter(r):
			lettersN++
		case !unicode.IsSpace(r):
			other++
		}
	}
	return lettersN >= 4 && lettersN*10 >= (lettersN+other)*6
}

// startsWithCode reports a line that starts with a billing code, optionally after its system's
// name ("70551 MRI brain", "CPT 95810 Polysomnography", "HCPCS G0398 Home sleep study").
func startsWithCode(l string) bool {
	fs := strings.FieldsFunc(l, splitCodeList)
	if len(fs) == 0 {
		return false
	}
	if codeTokenRe.MatchString(fs[0]) {
		return true
	}
	return len(fs) > 1 && systemLabels[strings.ToUpper(fs[0])] && codeTokenRe.MatchString(fs[1])
}

var systemLabels = map[string]bool{"CPT": true, "HCPCS": true, "ICD-10": true, "ICD-10-CM": true, "ICD10": true, "CODE": true}

func hasCodeToken(l string) bool {
	for _, f := range strings.FieldsFunc(l, splitCodeList) {
		if codeTokenRe.MatchString(f) {
			return true
		}
	}
	return false
}

// bareCodes reports whether a line holds nothing but billing codes (a table's code cell).
func bareCodes(l string) bool {
	fs := strings.FieldsFunc(l, splitCodeList)
	if len(fs) == 0 || len(fs) > 6 {
		return false
	}
	for _, f := range fs {
		if !codeTokenRe.MatchString(f) {
			return false
		}
	}
	return true
}

func splitCodeList(r rune) bool {
	return unicode.IsSpace(r) || r == ',' || r == ';' || r == ':' || r == '/' || r == '(' || r == ')' || r == '–' || r == '-'
}
