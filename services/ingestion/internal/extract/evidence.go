package extract

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/normalize"
)

// VerifyEvidence reports whether quote occurs in the current version or, failing that, in the
// previous one (a removal can only be quoted from the version that still had the text), and the
// heading of the section where it first occurs. Both the quote and the versions are compared after
// the normaliser's rules: white space runs (line breaks between blocks included) count as one
// space, invisible format characters are ignored, and the quote is NFC-normalised. Case and
// punctuation must match exactly. An empty quote, or nil documents, never verify.
func VerifyEvidence(quote string, prev, cur *normalize.Document) (side string, section string, ok bool) {
	q := normalizeQuote(quote)
	if q == "" {
		return "", "", false
	}
	for _, v := range [...]struct {
		doc  *normalize.Document
		side string
	}{{cur, SideCurrent}, {prev, SidePrevious}} {
		if v.doc == nil {
			continue
		}
		if i := indexSpaceFold(v.doc.Text, q); i >= 0 {
			sec, _ := v.doc.SectionAt(i)
			return v.side, sec.Heading, true
		}
	}
	return "", "", false
}

func normalizeQuote(s string) string {
	s = strings.Map(func(r rune) rune {
		switch r {
		case '\u00AD', '\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF':
			return -1
		}
		if unicode.IsSpace(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return norm.NFC.String(strings.Join(strings.Fields(s), " "))
}

// indexSpaceFold returns the first index of q in text where each space of q may match a space or a
// line break of text (canonical text has single spaces within lines and "\n" between them), or -1.
func indexSpaceFold(text, q string) int {
	sp := strings.IndexByte(q, ' ')
	if sp < 0 {
		return strings.Index(text, q)
	}
	if i := strings.Index(text, q); i >= 0 {
		return i // the common case: the quote lies within one block
	}
	head := q[:sp]
	for from := 0; from < len(text); {
		i := strings.Index(text[from:], head)
		if i < 0 {
			return -1
		}
		start := from + i
		if matchSpaceFold(text[start:], q) {
			return start
		}
		from = start + 1
	}
	return -1
}

func matchSpaceFold(text, q string) bool {
	if len(text) < len(q) {
		return false
	}
	for i := 0; i < len(q); i++ {
		if c := text[i]; c != q[i] && !(q[i] == ' ' && c == '\n') {
			return false
		}
	}
	return true
}
