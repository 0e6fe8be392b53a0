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

// lineSource yields a document's physical lines with their page numbers, in order, and can be read
// more than once: normalizeLines makes two passes so that it never holds every line at once (a 20 MB
// PDF's text would otherwise sit in memory twice: as lines and as canonical text).
type lineSource func(yield func(page int, line string) bool) error

// pagesSource reads lines already in memory.
func pagesSource(pages [][]string) lineSource {
	return func(yield func(int, string) bool) error {
		for p, lines := range pages {
			for _, l := range lines {
				if !yield(p, l) {
					return nil
				}
			}
		}
		return nil
	}
}

func normalizeLines(src lineSource) (*builder, error) {
	layout, err := scanLayout(src)
	if err != nil {
		return nil, err
	}
	wrap := layout.wrap
	b := &builder{}
	b.text.Grow(layout.size) // sized once: growing by doubling would hold two copies at a time
	var cur []string
	endBlock := func() {
		b.addLines(cur) // each line went through canonicalBlock in feed
		cur = cur[:0]
	}
	prevEnded, prevSentence, prevBareCode, first := true, false, false, true
	feed := func(raw string) {
		l := canonicalBlock(raw)
		if l == "" {
			endBlock()
			prevEnded, prevSentence, prevBareCode = true, false, false
			return
		}
		bullet := listRe.MatchString(l)
		isList := bullet || orderedRe.MatchString(l)
		if !bullet && (prevEnded || prevSentence) {
			if lvl, ok := headingLike(l, first); ok {
				endBlock()
				b.add(l, true, lvl)
				prevEnded, prevSentence, prevBareCode, first = true, false, false, false
				return
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
	// Second pass: the lines without chrome; each page break is a blank line.
	page, index := -1, 0
	err = src(func(p int, l string) bool {
		if p != page {
			if page >= 0 {
				feed("")
			}
			page, index = p, 0
		}
		i := index
		index++
		if !layout.drop[edge{p, i}] && !pageNumberRe.MatchString(strings.TrimSpace(l)) {
			feed(l)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	endBlock()
	return b, nil
}

// edge is a line among the first or last two non-blank lines of a page, where running headers and
// footers sit.
type edge struct{ page, line int }

// layout is what the first pass learns about a document's lines.
type layout struct {
	drop map[edge]bool // running headers and footers
	wrap float64       // the wrap width (see wrapWidth)
	size int           // bytes of all lines, to size the canonical text once
}

// scanLayout is the first pass. It finds running headers and footers: a line among the first or last
// two non-blank lines of a page whose text, digits masked, recurs there on at least half of the pages
// (two at least). And it measures the wrap width of the lines that remain. It keeps only counts and
// the page edges, never the lines.
func scanLayout(src lineSource) (layout, error) {
	type candidate struct {
		line  int
		text  string
		runes int // 0 for a page-number line, which the wrap width never counts
	}
	counts := map[string]int{}
	type edgeInfo struct {
		key   string
		runes int
	}
	edges := map[edge]edgeInfo{}
	lengths := map[int]int{} // rune length -> non-blank lines, for the wrap width
	out := layout{drop: map[edge]bool{}}
	nonEmpty := 0

	var first, last []candidate // the first two and last two non-blank lines of the current page
	page, index := -1, 0
	endPage := func() {
		if len(first) == 0 {
			return
		}
		nonEmpty++
		seen := map[string]bool{}
		for _, c := range append(append([]candidate(nil), first...), last...) {
			e := edge{page, c.line}
			if _, done := edges[e]; done {
				continue
			}
			key := maskDigits(c.text)
			edges[e] = edgeInfo{key, c.runes}
			if !seen[key] {
				seen[key] = true
				counts[key]++
			}
		}
	}
	err := src(func(p int, l string) bool {
		out.size += len(l) + 1
		if p != page {
			endPage()
			page, index, first, last = p, 0, first[:0], last[:0]
		}
		i := index
		index++
		t := strings.TrimSpace(l)
		if t == "" {
			return true
		}
		c := candidate{line: i, text: l}
		if !pageNumberRe.MatchString(t) {
			c.runes = utf8.RuneCountInString(t)
			lengths[c.runes]++
		}
		if len(first) < 2 {
			first = append(first, c)
			return true
		}
		if last = append(last, c); len(last) > 2 {
			last = append(last[:0], last[1:]...)
		}
		return true
	})
	if err != nil {
		return out, err
	}
	endPage()

	if nonEmpty >= 2 {
		need := max(2, (nonEmpty+1)/2)
		for e, info := range edges {
			if counts[info.key] >= need {
				out.drop[e] = true
				if info.runes > 0 {
					lengths[info.runes]--
				}
			}
		}
	}
	out.wrap = wrapWidth(lengths)
	return out, nil
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
// non-blank line lengths, given as counts by length.
func wrapWidth(lengths map[int]int) float64 {
	total := 0
	keys := make([]int, 0, len(lengths))
	for n, c := range lengths {
		if c > 0 {
			total += c
			keys = append(keys, n)
		}
	}
	if total == 0 {
		return 0
	}
	sort.Ints(keys)
	rank := total * 9 / 10 // the index this length would have in the sorted list of lengths
	for _, n := range keys {
		if rank < lengths[n] {
			return float64(n)
		}
		rank -= lengths[n]
	}
	return float64(keys[len(keys)-1])
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
