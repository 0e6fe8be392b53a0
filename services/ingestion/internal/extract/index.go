package extract

import (
	"sort"
	"strings"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/normalize"
)

// docIndex holds what the rules need to know about one version as a whole.
type docIndex struct {
	doc      *normalize.Document
	side     string
	starts   []int               // line starts, then len(Text)
	lines    map[string]struct{} // every line's text, for the move check
	codes    map[string]Code     // every code of the version
	effDates map[string]bool     // normalised effective dates
	headings map[int]bool        // start offsets of heading lines

	// codeLines lists the lines on which each code occurs. Whether a code requires prior
	// authorization is read from those lines on demand (paRequired), only for the codes of changed
	// lines: reading every line of a 1 MB document took most of Extract's time.
	codeLines map[string][]int
	paByCode  map[string]bool
	paByLine  map[int]polarity
	paByLead  map[string]polarity
}

func newDocIndex(doc *normalize.Document, side string) *docIndex {
	ix := &docIndex{doc: doc, side: side, starts: lineStarts(doc.Text), codes: map[string]Code{},
		effDates: map[string]bool{}, headings: map[int]bool{}, codeLines: map[string][]int{},
		paByCode: map[string]bool{}, paByLine: map[int]polarity{}, paByLead: map[string]polarity{}}
	line := 0
	scanCodes(doc.Text, func(m codeMatch) {
		ix.codes[m.Value] = m.Code
		for ix.starts[line+1] <= m.start {
			line++
		}
		if ls := ix.codeLines[m.Value]; len(ls) == 0 || ls[len(ls)-1] != line {
			ix.codeLines[m.Value] = append(ls, line)
		}
	})
	ix.lines = make(map[string]struct{}, len(ix.starts))
	for i := 0; i+1 < len(ix.starts); i++ {
		ix.lines[ix.lineText(i)] = struct{}{}
	}
	dates, _ := effectiveDates(doc.Text)
	for _, d := range dates {
		ix.effDates[d] = true
	}
	for _, s := range doc.Sections {
		if s.Heading != "" {
			ix.headings[s.Start] = true
		}
	}
	return ix
}

// lineText returns line i without its newline.
func (ix *docIndex) lineText(i int) string {
	return strings.TrimSuffix(ix.doc.Text[ix.starts[i]:ix.starts[i+1]], "\n")
}

func (ix *docIndex) hasLine(s string) bool {
	_, ok := ix.lines[s]
	return ok
}

// lineIndex returns the index of the line starting at or containing off.
func (ix *docIndex) lineIndex(off int) int {
	return sort.SearchInts(ix.starts, off+1) - 1
}

// leadInLookback bounds the search for a lead-in line: lists under one lead-in are short, and the
// bound keeps a heading-less document linear.
const leadInLookback = 50

// leadIn returns the nearest line above line i in its section that ends in ':', or "".
func (ix *docIndex) leadIn(i int, sec normalize.Section) string {
	for j := i - 1; j >= 0 && i-j <= leadInLookback && ix.starts[j] >= sec.Start; j-- {
		if ix.headings[ix.starts[j]] {
			break
		}
		if t := ix.lineText(j); strings.HasSuffix(t, ":") {
			return t
		}
	}
	return ""
}

// contextHeading returns the heading that gives context to the lines of sec: none for the
// document's title (a heading at the very start of the text), whose words name the whole policy
// ("Durable Medical Equipment Coverage", "... Prior Authorization Policy"), not the lines under it.
func (ix *docIndex) contextHeading(sec normalize.Section) string {
	if sec.Start == 0 {
		return ""
	}
	return sec.Heading
}

// lineInfo is a changed line read in its context.
type lineInfo struct {
	ix       *docIndex
	text     string
	off      int
	heading  bool
	codes    []codeMatch
	dates    []string
	dateLocs [][2]int

	paPol      polarity
	paExplicit bool
	paLoc      [2]int
	covPol     polarity
	covLoc     [2]int

	explained bool // a code, date or prior-authorization fact accounts for the line
}

func (ix *docIndex) info(l hline) *lineInfo {
	li := &lineInfo{ix: ix, text: l.text, off: l.off, heading: ix.headings[l.off]}
	scanCodes(l.text, func(m codeMatch) { li.codes = append(li.codes, m) })
	li.dates, li.dateLocs = effectiveDates(l.text)
	if li.heading {
		return li
	}
	sec, _ := ix.doc.SectionAt(l.off)
	lead := ix.leadIn(ix.lineIndex(l.off), sec)
	heading := ix.contextHeading(sec)
	li.paPol, li.paExplicit, li.paLoc = paContext(l.text, lead, heading)
	covPol, covExplicit, covLoc := coverageContext(l.text, lead, heading)
	if li.paExplicit && !covExplicit {
		// A prior-authorization statement under a coverage heading is about authorization.
		covPol = polNone
	}
	li.covPol, li.covLoc = covPol, covLoc
	return li
}

// paContext reads the prior-authorization polarity of a line: its own words, else its lead-in, else
// its heading.
func paContext(text, lead, heading string) (polarity, bool, [2]int) {
	if p, loc := paPolarity(text); p != polNone {
		return p, true, loc
	}
	if p, _ := paPolarity(lead); p != polNone {
		return p, false, [2]int{}
	}
	return headingPA(heading), false, [2]int{}
}

// coverageContext reads the coverage polarity of a line: its own words, else a criteria heading,
// else its lead-in, else its heading.
func coverageContext(text, lead, heading string) (polarity, bool, [2]int) {
	if p, loc := coveragePolarity(text); p != polNone {
		return p, true, loc
	}
	k := headingCoverage(heading)
	if k == polCriteria {
		return k, false, [2]int{}
	}
	if p, _ := coveragePolarity(lead); p != polNone {
		return p, false, [2]int{}
	}
	return k, false, [2]int{}
}

// paRequired reports whether code occurs on a line of the version that requires prior
// authorization, by the same reading as changed lines get.
func (ix *docIndex) paRequired(code string) bool {
	if v, ok := ix.paByCode[code]; ok {
		return v
	}
	v := false
	for _, i := range ix.codeLines[code] {
		if ix.linePA(i) == polPositive {
			v = true
			break
		}
	}
	ix.paByCode[code] = v
	return v
}

func (ix *docIndex) linePA(i int) polarity {
	if p, ok := ix.paByLine[i]; ok {
		return p
	}
	p := polNone
	if !ix.headings[ix.starts[i]] {
		if p, _ = paPolarity(ix.lineText(i)); p == polNone {
			sec, _ := ix.doc.SectionAt(ix.starts[i])
			lead := ix.leadIn(i, sec)
			var ok bool
			if p, ok = ix.paByLead[lead]; !ok {
				p, _ = paPolarity(lead)
				ix.paByLead[lead] = p
			}
			if p == polNone {
				p = headingPA(ix.contextHeading(sec))
			}
		}
	}
	ix.paByLine[i] = p
	return p
}

// hline is one line of a hunk: its text without the newline and its offset in its version.
type hline struct {
	text string
	off  int
}

// hunk is a run of deleted and inserted lines between unchanged ones.
type hunk struct {
	deleted, inserted []hline
}

func hunks(changes []Change) []hunk {
	var out []hunk
	for i := 0; i < len(changes); {
		if changes[i].Op == OpEqual {
			i++
			continue
		}
		var h hunk
		for ; i < len(changes) && changes[i].Op != OpEqual; i++ {
			c := changes[i]
			if c.Op == OpDelete {
				h.deleted = appendLines(h.deleted, c.Text, c.PrevStart)
			} else {
				h.inserted = appendLines(h.inserted, c.Text, c.CurStart)
			}
		}
		out = append(out, h)
	}
	return out
}

func appendLines(dst []hline, text string, off int) []hline {
	for text != "" {
		n := strings.IndexByte(text, '\n')
		line := text
		if n >= 0 {
			line = text[:n]
		}
		if strings.TrimSpace(line) != "" {
			dst = append(dst, hline{text: line, off: off})
		}
		if n < 0 {
			break
		}
		text, off = text[n+1:], off+n+1
	}
	return dst
}

// pairing maps deleted to inserted lines of one hunk and back; -1 or nil for unpaired.
type pairing struct {
	delToIns []int
	insToDel []*lineInfo
}

func (p pairing) ins(delIndex int) int { return p.delToIns[delIndex] }

func (p pairing) del(insIndex int) *lineInfo { return p.insToDel[insIndex] }

// pairThreshold is the word-set Jaccard similarity from which a deleted and an inserted line are
// one modified line.
const pairThreshold = 0.5

// pairBand bounds the candidates of a deleted line to inserted lines near its proportional
// position, so a coarse hunk of thousands of lines pairs in linear time.
const pairBand = 8

// pairLines pairs each deleted line with the most similar unpaired inserted line, greedily in order,
// or else with an unpaired inserted line of the same field label.
func pairLines(del, ins []*lineInfo) pairing {
	p := pairing{delToIns: make([]int, len(del)), insToDel: make([]*lineInfo, len(ins))}
	for i := range p.delToIns {
		p.delToIns[i] = -1
	}
	if len(del) == 0 || len(ins) == 0 {
		return p
	}
	insWords := make([]map[string]bool, len(ins))
	for j, a := range ins {
		insWords[j] = wordSet(a.text)
	}
	for i, r := range del {
		rw := wordSet(r.text)
		center := i * len(ins) / len(del)
		best, bestScore := -1, 0.0
		for j := max(0, center-pairBand); j < min(len(ins), center+pairBand+1); j++ {
			if p.insToDel[j] != nil {
				continue
			}
			if s := jaccard(rw, insWords[j]); s > bestScore {
				best, bestScore = j, s
			}
		}
		if best < 0 || bestScore < pairThreshold {
			// "Field: value" lines with the same field are one modified line, however different
			// their values ("Last Reviewed: January 15, 2025" / "Last Reviewed: July 20, 2025").
			best = -1
			if lbl := fieldLabel(r.text); lbl != "" {
				for j := max(0, center-pairBand); j < min(len(ins), center+pairBand+1); j++ {
					if p.insToDel[j] == nil && fieldLabel(ins[j].text) == lbl {
						best = j
						break
					}
				}
			}
		}
		if best >= 0 {
			p.delToIns[i] = best
			p.insToDel[best] = r
		}
	}
	return p
}

// fieldLabel returns the label of a short "Label: value" line, or "".
func fieldLabel(s string) string {
	i := strings.IndexByte(s, ':')
	if i < 3 || i > 40 || len(s) > 120 {
		return ""
	}
	return s[:i]
}

func wordSet(s string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127)
	}) {
		set[w] = true
	}
	return set
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}
