package extract

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Code systems recognised by RecognizeCodes.
const (
	SystemCPT     = "CPT"
	SystemHCPCS   = "HCPCS"
	SystemICD10CM = "ICD-10-CM"
)

// Code is a billing or diagnosis code found in text.
type Code struct {
	// Value is the code as written, upper case; ICD-10-CM codes always carry their dot ("E11.65",
	// also when written "E1165" after an ICD label).
	Value string
	// System is SystemCPT, SystemHCPCS or SystemICD10CM.
	System string
}

// codeMatch is one occurrence of a code in a text.
type codeMatch struct {
	Code
	start, end int
}

// RecognizeCodes returns the codes in text, each value once, in order of first appearance.
//
// Formats (upper-case letters only; a code is a whole token: no letter or digit touches it):
//
//	CPT        five digits 00100-99999 (Category I); four digits and F (Category II), T (Category
//	           III) or U (Proprietary Laboratory Analyses)
//	HCPCS      one of the letters A B C D E G H J K L M P Q R S T U V and four digits (Level II;
//	           F, I, N, O and W-Z are not used)
//	ICD-10-CM  a letter, a digit, a digit or letter (the category: "E11", "C4A"), then optionally a
//	           dot and one to four digits or letters ("E11.65", "S72.001A", "T36.0X1A"). U is only
//	           valid in U07 and U09 (COVID-19 and its sequela, the ICD-10-CM uses of the chapter
//	           WHO reserves for emergencies). Written with its dot it is always recognised; without
//	           one ("E1165", "E11") only after an "ICD" label that is closer than any
//	           CPT or HCPCS label within the preceding 120 bytes, since a letter and four digits is
//	           first a HCPCS code and "B12" first a vitamin.
//
// Context rejects look-alikes of five-digit CPT codes and, where they apply, of the others:
//
//   - a currency sign or '#' before it, a decimal part or thousands group after it, '%' after it;
//   - a digit group joined to it by '-', '/' or '.' (telephone numbers, dates, identifiers such as
//     "RAD-00420"), except a range of two codes ("70551-70553") and a two-character modifier after
//     it ("70551-26");
//   - ZIP codes: "-dddd" after it (ZIP+4), or a state abbreviation after a comma before it
//     ("Springfield, IL 62704"); a bare "CT 70450" stays a code since CT is also a modality;
//   - a word before it that names another kind of number (box, suite, fax, phone, policy, no.,
//     member, claim, account, model, part, zip, ...), or a unit after it (mg, units, members, days,
//     dollars, ...).
func RecognizeCodes(text string) []Code {
	var out []Code
	seen := map[string]bool{}
	scanCodes(text, func(m codeMatch) {
		if !seen[m.Value] {
			seen[m.Value] = true
			out = append(out, m.Code)
		}
	})
	return out
}

// CodeDiff compares the full code sets of two texts and returns the code values only in cur
// (added) and only in prev (removed), each sorted. It is computed from the whole documents,
// independently of Extract's facts, so that a fact's AffectedCodes can be checked against it: the
// codes of a code_added fact are all in added and those of a code_removed fact all in removed.
// Prior-authorization and coverage facts may name codes present in both versions (a code that
// newly needs authorization), which no set difference can confirm.
func CodeDiff(prev, cur string) (added, removed []string) {
	p, c := codeSet(prev), codeSet(cur)
	for v := range c {
		if _, ok := p[v]; !ok {
			added = append(added, v)
		}
	}
	for v := range p {
		if _, ok := c[v]; !ok {
			removed = append(removed, v)
		}
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed
}

func codeSet(text string) map[string]Code {
	set := map[string]Code{}
	scanCodes(text, func(m codeMatch) { set[m.Value] = m.Code })
	return set
}

// scanCodes calls fn for every code occurrence in text, in order.
func scanCodes(text string, fn func(codeMatch)) {
	n := len(text)
	for i := 0; i < n; {
		c := text[i]
		if !isASCIIAlnum(c) {
			i++
			continue
		}
		j := i + 1
		for j < n && isASCIIAlnum(text[j]) {
			j++
		}
		if !boundaryBefore(text, i) {
			i = j
			continue
		}
		tok, end := text[i:j], j
		dotted := ""
		if j+1 < n && text[j] == '.' && isASCIIAlnum(text[j+1]) {
			k := j + 1
			for k < n && isASCIIAlnum(text[k]) {
				k++
			}
			dotted, end = text[j+1:k], k
		}
		if boundaryAfter(text, end) {
			if m, ok := classify(text, i, end, tok, dotted); ok {
				fn(m)
			}
		}
		i = end
	}
}

func classify(text string, start, end int, tok, dotted string) (codeMatch, bool) {
	m := codeMatch{start: start, end: end}
	switch {
	case dotted != "":
		// Only ICD-10-CM codes have a dot; "70551.50" is a decimal, "V2.1" a version.
		if len(tok) == 3 && len(dotted) <= 4 && icdCategory(tok) && upperAlnum(dotted) &&
			identifierContextOK(text, start, end) {
			m.Code = Code{Value: tok + "." + dotted, System: SystemICD10CM}
			return m, true
		}
		return m, false
	case len(tok) == 5 && allDigits(tok):
		if tok < "00100" || !numberContextOK(text, start, end) {
			return m, false
		}
		m.Code = Code{Value: tok, System: SystemCPT}
		return m, true
	case len(tok) == 5 && allDigits(tok[:4]) && strings.ContainsRune("FTU", rune(tok[4])):
		if !identifierContextOK(text, start, end) {
			return m, false
		}
		m.Code = Code{Value: tok, System: SystemCPT}
		return m, true
	}
	if !upperAlnum(tok) || len(tok) < 3 || len(tok) > 7 {
		return m, false
	}
	icdLabel := false
	if icdCategory(tok[:3]) {
		icdLabel = nearestLabel(text, start) == SystemICD10CM
	}
	if len(tok) == 5 && isHCPCSLetter(tok[0]) && allDigits(tok[1:]) && !icdLabel {
		if !identifierContextOK(text, start, end) {
			return m, false
		}
		m.Code = Code{Value: tok, System: SystemHCPCS}
		return m, true
	}
	if icdLabel && identifierContextOK(text, start, end) {
		v := tok
		if len(tok) > 3 {
			v = tok[:3] + "." + tok[3:]
		}
		m.Code = Code{Value: v, System: SystemICD10CM}
		return m, true
	}
	return m, false
}

// icdCategory reports whether s (three characters) is a structurally valid ICD-10-CM category.
func icdCategory(s string) bool {
	if len(s) != 3 {
		return false
	}
	l, d, x := s[0], s[1], s[2]
	if l < 'A' || l > 'Z' || d < '0' || d > '9' || !(x >= '0' && x <= '9' || x >= 'A' && x <= 'Z') {
		return false
	}
	if l == 'U' {
		return s == "U07" || s == "U09"
	}
	return true
}

// isHCPCSLetter reports the first letters used by HCPCS Level II codes.
func isHCPCSLetter(c byte) bool {
	return strings.IndexByte("ABCDEGHJKLMPQRSTUV", c) >= 0
}

// nearestLabel returns the system whose label is closest before start within 120 bytes, or "".
func nearestLabel(text string, start int) string {
	window := text[max(0, start-120):start]
	for i := len(window) - 1; i >= 0; i-- {
		for _, l := range [...]struct{ label, system string }{
			{"icd", SystemICD10CM}, {"cpt", SystemCPT}, {"hcpcs", SystemHCPCS}, {"procedure", SystemCPT},
		} {
			if window[i]|0x20 == l.label[0] && hasPrefixFold(window[i:], l.label) {
				return l.system
			}
		}
	}
	return ""
}

// numberContextOK applies the look-alike rules of RecognizeCodes to a five-digit number.
func numberContextOK(text string, start, end int) bool {
	if start > 0 {
		switch text[start-1] {
		case '$', '#':
			return false
		}
		if r, _ := utf8.DecodeLastRuneInString(text[:start]); r == '€' || r == '£' || r == '¥' {
			return false
		}
	}
	if !identifierContextOK(text, start, end) {
		return false
	}
	if end < len(text) {
		switch text[end] {
		case '%':
			return false
		case ',':
			// "12345,678" is a number; "70551,70552" a list of codes.
			if digitRun(text, end+1) == 3 {
				return false
			}
		case '-':
			if d := digitRun(text, end+1); d == 4 {
				return false // ZIP+4
			}
		}
	}
	if isZIPAfterState(text, start) {
		return false
	}
	return !unitWords[lowerASCII(wordAfter(text, end))]
}

// identifierContextOK rejects a token joined to another number or identifier and one after a word
// naming another kind of number.
func identifierContextOK(text string, start, end int) bool {
	if start > 0 {
		switch c := text[start-1]; c {
		case '-', '/', '.':
			// "555-01234", "01/12345", "RAD-00420"; but "70551-70553" is a range and
			// "70551/70552" a list.
			if c != '.' && isCodeShaped(tokenBefore(text, start-1)) {
				return true
			}
			if start >= 2 && (isASCIIAlnum(text[start-2]) || text[start-2] == '.') {
				return false
			}
		}
		if r, _ := utf8.DecodeLastRuneInString(text[:start]); r == '–' || r == '—' {
			if p := tokenBefore(text, start-len("–")); p != "" && !isCodeShaped(p) {
				return false
			}
		}
	}
	if end < len(text) && (text[end] == '-' || text[end] == '/') && end+1 < len(text) && isASCIIAlnum(text[end+1]) {
		next := tokenAfter(text, end+1)
		// A range to another code or a two-character modifier ("-26", "-TC") keeps the code.
		if !isCodeShaped(next) && len(next) != 2 {
			return false
		}
	}
	return !numberWords[lowerASCII(strings.TrimRight(wordBefore(text, start), ".:#"))]
}

func isZIPAfterState(text string, start int) bool {
	i := start
	for i > 0 && text[i-1] == ' ' {
		i--
	}
	if i < 3 || i == start {
		return false
	}
	st := text[i-2 : i]
	if !usStates[st] || (i >= 3 && isASCIIAlnum(text[i-3])) {
		return false
	}
	j := i - 2
	for j > 0 && text[j-1] == ' ' {
		j--
	}
	return j > 0 && text[j-1] == ','
}

func isCodeShaped(s string) bool {
	if len(s) == 5 && allDigits(s[:4]) && (isDigit(s[4]) || strings.IndexByte("FTU", s[4]) >= 0) {
		return true
	}
	if len(s) == 5 && isHCPCSLetter(s[0]) && allDigits(s[1:]) {
		return true
	}
	return len(s) >= 3 && icdCategory(s[:3])
}

func tokenBefore(text string, end int) string {
	i := end
	for i > 0 && text[i-1] == ' ' {
		i--
	}
	j := i
	for j > 0 && (isASCIIAlnum(text[j-1]) || text[j-1] == '.') {
		j--
	}
	return text[j:i]
}

func tokenAfter(text string, start int) string {
	j := start
	for j < len(text) && isASCIIAlnum(text[j]) {
		j++
	}
	return text[start:j]
}

// wordBefore returns the word before position start, skipping spaces and one punctuation mark.
func wordBefore(text string, start int) string {
	i := start
	for i > 0 && (text[i-1] == ' ' || text[i-1] == ':' || text[i-1] == '(') {
		i--
	}
	j := i
	for j > 0 && (isASCIIAlnum(text[j-1]) || text[j-1] == '.' || text[j-1] == '#') {
		j--
	}
	return text[j:i]
}

func wordAfter(text string, end int) string {
	i := end
	for i < len(text) && text[i] == ' ' {
		i++
	}
	if i < len(text) && text[i] == '%' {
		return "%"
	}
	j := i
	for j < len(text) && (isASCIIAlnum(text[j]) || text[j] == '.') {
		j++
	}
	return strings.TrimRight(text[i:j], ".")
}

// lowerASCII lower-cases a short word without allocating when it is already lower case or too long
// to be a listed word.
func lowerASCII(w string) string {
	if len(w) > 16 {
		return ""
	}
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= 'A' && c <= 'Z' {
			var buf [16]byte
			for j := 0; j < len(w); j++ {
				buf[j] = w[j] | 0x20*byte(b2i(w[j] >= 'A' && w[j] <= 'Z'))
			}
			return string(buf[:len(w)])
		}
	}
	return w
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func digitRun(text string, i int) int {
	n := 0
	for i+n < len(text) && isDigit(text[i+n]) {
		n++
	}
	return n
}

// boundaryBefore reports that no letter or digit (of any script) touches position i from the left.
func boundaryBefore(text string, i int) bool {
	if i == 0 {
		return true
	}
	r, _ := utf8.DecodeLastRuneInString(text[:i])
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
}

func boundaryAfter(text string, i int) bool {
	if i >= len(text) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_'
}

func isASCIIAlnum(c byte) bool { return isDigit(c) || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}

func upperAlnum(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isDigit(c) && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return s != ""
}

// numberWords name numbers that are not codes when they come right before one.
var numberWords = setOf("box", "pob", "suite", "ste", "apt", "room", "rm", "floor", "fl", "ext",
	"extension", "fax", "phone", "tel", "telephone", "call", "page", "pages", "policy", "no", "nos",
	"number", "num", "id", "member", "claim", "account", "acct", "ref", "reference", "invoice", "npi",
	"tin", "ein", "zip", "usd", "version", "ver", "model", "part", "serial", "sku", "item", "form",
	"route", "rt", "hwy", "highway", "interstate", "flight", "order", "ticket", "case", "lot",
	"batch", "issue", "volume", "vol", "bulletin", "memo", "dept", "department", "pin", "group",
	"plan", "contract", "rx")

// unitWords are units and counted nouns that make the number before them a quantity.
var unitWords = setOf("%", "mg", "mcg", "g", "kg", "ml", "l", "lb", "lbs", "oz", "units", "unit",
	"iu", "mm", "cm", "m", "km", "mi", "miles", "ft", "feet", "dollars", "usd", "members",
	"patients", "people", "persons", "days", "hours", "hrs", "minutes", "min", "seconds", "visits",
	"times", "steps", "calories", "kcal", "claims", "cases", "beds", "employees", "residents",
	"copies", "providers", "enrollees", "lives", "sq", "square")

var usStates = setOf("AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "DC", "FL", "GA", "HI", "ID",
	"IL", "IN", "IA", "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT", "NE", "NV",
	"NH", "NJ", "NM", "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI", "SC", "SD", "TN", "TX", "UT",
	"VT", "VA", "WA", "WV", "WI", "WY", "PR", "GU", "VI")

func setOf(s ...string) map[string]bool {
	m := make(map[string]bool, len(s))
	for _, v := range s {
		m[v] = true
	}
	return m
}
