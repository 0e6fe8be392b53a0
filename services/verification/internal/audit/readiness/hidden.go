package readiness

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// checkHiddenInstructions looks for text a user reviewing a server cannot see but a model reads:
//
//   - zero-width characters U+200B..U+200F, U+2060..U+2064 and U+FEFF;
//   - bidirectional controls U+202A..U+202E and U+2066..U+2069 ("Trojan Source");
//   - ANSI escape sequences (ESC [ … and ESC ] …), which terminals use to hide or recolour text;
//   - other C0 controls but \n and \t (and \r directly before \n), DEL and the C1 controls;
//   - Unicode tag characters U+E0000..U+E007F, which spell invisible ASCII, and the variation
//     selectors U+E0100..U+E01EF, used the same way to smuggle bytes;
//   - HTML comments and <IMPORTANT>, <SYSTEM>-style tags, hidden by every Markdown renderer.
//
// Joiners are legitimate in some places, and flagging them would make the rule useless for
// servers written in those languages: ZWJ between emoji (family and profession sequences),
// ZWJ and ZWNJ between letters of scripts that shape with them (Arabic, Indic, …), and
// LRM/RLM next to right-to-left letters.
//
// Evidence gives positions in characters (code points) counted from 1, and shows the
// surroundings escaped; tag characters are decoded to the ASCII they spell, escaped too.
func checkHiddenInstructions(in Input) []Evidence {
	return perText(in, hiddenIn)
}

var (
	htmlComment = regexp.MustCompile(`(?s)<!--.*?(?:-->|$)`)
	// hiddenTag matches markup that prompt-injection payloads use to pose as higher-priority
	// text; Markdown renderers drop unknown tags, so users never see them.
	hiddenTag = regexp.MustCompile(`(?i)<\s*/?\s*(important|system(?:[\s_-]?prompt)?|hidden|secret|override|assistant)\b[^<>]{0,80}>`)
)

var invisibleNames = map[rune]string{
	0x200B: "ZERO WIDTH SPACE",
	0x200C: "ZERO WIDTH NON-JOINER",
	0x200D: "ZERO WIDTH JOINER",
	0x200E: "LEFT-TO-RIGHT MARK",
	0x200F: "RIGHT-TO-LEFT MARK",
	0x2060: "WORD JOINER",
	0x2061: "FUNCTION APPLICATION",
	0x2062: "INVISIBLE TIMES",
	0x2063: "INVISIBLE SEPARATOR",
	0x2064: "INVISIBLE PLUS",
	0xFEFF: "ZERO WIDTH NO-BREAK SPACE",
	0x202A: "LEFT-TO-RIGHT EMBEDDING",
	0x202B: "RIGHT-TO-LEFT EMBEDDING",
	0x202C: "POP DIRECTIONAL FORMATTING",
	0x202D: "LEFT-TO-RIGHT OVERRIDE",
	0x202E: "RIGHT-TO-LEFT OVERRIDE",
	0x2066: "LEFT-TO-RIGHT ISOLATE",
	0x2067: "RIGHT-TO-LEFT ISOLATE",
	0x2068: "FIRST STRONG ISOLATE",
	0x2069: "POP DIRECTIONAL ISOLATE",
}

var controlNames = map[rune]string{
	0x00: "NUL", 0x07: "BEL", 0x08: "BACKSPACE", 0x0B: "VERTICAL TAB", 0x0C: "FORM FEED",
	0x0D: "CARRIAGE RETURN", 0x1B: "ESCAPE", 0x7F: "DELETE",
}

func isTag(r rune) bool      { return r >= 0xE0000 && r <= 0xE007F }
func isSelector(r rune) bool { return r >= 0xE0100 && r <= 0xE01EF }

// hiddenIn lists the hidden content of s, each run of one kind once.
func hiddenIn(s string) []string {
	var out []string
	rs := []rune(s)
	for i := 0; i < len(rs); {
		what, n := hiddenAt(rs, i)
		if what == "" {
			i++
			continue
		}
		out = append(out, fmt.Sprintf("%s at character %d, near %s", what, i+1, context(rs, i, n)))
		i += n
	}
	if !strings.Contains(s, "<") {
		return out
	}
	for _, m := range htmlComment.FindAllStringIndex(s, -1) {
		out = append(out, fmt.Sprintf("HTML comment at character %d: %s", utf8.RuneCountInString(s[:m[0]])+1, quote(s[m[0]:m[1]], 60)))
	}
	seen := map[string]bool{}
	for _, m := range hiddenTag.FindAllStringSubmatchIndex(s, -1) {
		name := strings.ToLower(s[m[2]:m[3]])
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, fmt.Sprintf("tag %s at character %d", quote(s[m[0]:m[1]], 40), utf8.RuneCountInString(s[:m[0]])+1))
	}
	return out
}

// hiddenAt says what hidden content starts at rs[i] and how many runes it spans; "" when none.
func hiddenAt(rs []rune, i int) (string, int) {
	r := rs[i]
	switch {
	case isTag(r) || isSelector(r):
		j := i
		var spelled strings.Builder
		for j < len(rs) && (isTag(rs[j]) || isSelector(rs[j])) {
			if isTag(rs[j]) {
				spelled.WriteRune(rs[j] - 0xE0000)
			}
			j++
		}
		what := fmt.Sprintf("%d invisible tag or variation-selector characters", j-i)
		if spelled.Len() > 0 {
			what += " spelling " + quote(spelled.String(), 60)
		}
		return what, j - i
	case r == 0x1B && i+1 < len(rs) && (rs[i+1] == '[' || rs[i+1] == ']'):
		j := i + 2
		for j < len(rs) && j-i < 32 && !(rs[j] >= 0x40 && rs[j] <= 0x7E && rs[i+1] == '[') && rs[j] != 0x07 {
			j++
		}
		j = min(j+1, len(rs))
		return "ANSI escape sequence " + strconv.QuoteToASCII(string(rs[i:j])), j - i
	case r < 0x20 || r == 0x7F || (r >= 0x80 && r <= 0x9F):
		if r == '\n' || r == '\t' || (r == '\r' && i+1 < len(rs) && rs[i+1] == '\n') {
			return "", 0
		}
		name := controlNames[r]
		if name == "" {
			name = "CONTROL CHARACTER"
		}
		return run(rs, i, fmt.Sprintf("U+%04X %s", r, name))
	}
	name, ok := invisibleNames[r]
	if !ok || allowedJoiner(rs, i) {
		return "", 0
	}
	return run(rs, i, fmt.Sprintf("U+%04X %s", r, name))
}

// run measures how often rs[i] repeats from i, so a padding of 200 zero-width spaces is one
// piece of evidence.
func run(rs []rune, i int, what string) (string, int) {
	j := i
	for j < len(rs) && rs[j] == rs[i] {
		j++
	}
	if j-i > 1 {
		what = fmt.Sprintf("%d × %s", j-i, what)
	}
	return what, j - i
}

var (
	joiningScripts = []*unicode.RangeTable{
		unicode.Arabic, unicode.Syriac, unicode.Devanagari, unicode.Bengali, unicode.Gurmukhi,
		unicode.Gujarati, unicode.Oriya, unicode.Tamil, unicode.Telugu, unicode.Kannada,
		unicode.Malayalam, unicode.Sinhala, unicode.Khmer, unicode.Myanmar, unicode.Tibetan,
		unicode.Mongolian,
	}
	rtlScripts = []*unicode.RangeTable{unicode.Arabic, unicode.Hebrew, unicode.Syriac, unicode.Thaana, unicode.Nko}
)

func allowedJoiner(rs []rune, i int) bool {
	var prev, next rune = -1, -1
	if i > 0 {
		prev = rs[i-1]
	}
	if i+1 < len(rs) {
		next = rs[i+1]
	}
	switch rs[i] {
	case 0x200D:
		if emoji(prev) && emoji(next) {
			return true
		}
		fallthrough
	case 0x200C:
		return prev >= 0 && next >= 0 && unicode.In(prev, joiningScripts...) && unicode.In(next, joiningScripts...)
	case 0x200E, 0x200F:
		return (prev >= 0 && unicode.In(prev, rtlScripts...)) || (next >= 0 && unicode.In(next, rtlScripts...))
	}
	return false
}

func emoji(r rune) bool {
	return r >= 0 && (unicode.Is(unicode.So, r) || (r >= 0x1F3FB && r <= 0x1F3FF) || r == 0xFE0F)
}

// context shows the text around rs[i:i+n], escaped, so a reader can find the spot without the
// hidden characters being reproduced. Runs of tag characters, eleven bytes each when escaped,
// are shown by their count.
func context(rs []rune, i, n int) string {
	const around = 12
	from, to := max(0, i-around), min(len(rs), i+n+around)
	if n > 2*around {
		// A long hidden run is shown by its ends: its content is already summarised.
		return compact(rs[from:i+around]) + "…" + compact(rs[i+n-around:to])
	}
	return compact(rs[from:to])
}

func compact(rs []rune) string {
	var b strings.Builder
	for i := 0; i < len(rs); {
		if !isTag(rs[i]) && !isSelector(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		j := i
		for j < len(rs) && (isTag(rs[j]) || isSelector(rs[j])) {
			j++
		}
		fmt.Fprintf(&b, "[%d tag chars]", j-i)
		i = j
	}
	return strconv.QuoteToASCII(b.String())
}
