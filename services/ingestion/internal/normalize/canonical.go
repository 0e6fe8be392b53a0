package normalize

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// builder accumulates canonical blocks into Text and records where headings start sections.
type builder struct {
	text     strings.Builder
	sections []Section
}

// add appends one block. It canonicalises s and drops it when nothing remains.
func (b *builder) add(s string, heading bool, level int) {
	s = canonicalBlock(s)
	if s == "" {
		return
	}
	start := b.text.Len()
	if heading {
		b.sections = append(b.sections, Section{Heading: s, Level: level, Start: start})
	} else if len(b.sections) == 0 {
		b.sections = append(b.sections, Section{Start: start})
	}
	b.text.WriteString(s)
	b.text.WriteByte('\n')
}

// addLines appends one paragraph made of lines that are each canonical already: joined by single
// spaces they stay canonical (each has no outer white space, and a space composes with no mark), so
// they are written as they are, without building the joined string first.
func (b *builder) addLines(lines []string) {
	if len(lines) == 0 {
		return
	}
	if len(b.sections) == 0 {
		b.sections = append(b.sections, Section{Start: b.text.Len()})
	}
	for i, l := range lines {
		if i > 0 {
			b.text.WriteByte(' ')
		}
		b.text.WriteString(l)
	}
	b.text.WriteByte('\n')
}

func (b *builder) document(format string) *Document {
	text := b.text.String()
	secs := b.sections
	for i := range secs {
		secs[i].Index = i
		if i+1 < len(secs) {
			secs[i].End = secs[i+1].Start
		} else {
			secs[i].End = len(text)
		}
	}
	return &Document{Format: format, Text: text, Sections: secs, CanonicalHash: Hash(text)}
}

// canonicalBlock applies the per-block rules of the package comment: valid UTF-8, no zero-width
// characters, collapsed white space, NFC.
func canonicalBlock(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case isInvisible(r):
			continue
		case unicode.IsControl(r):
			// C0/C1 controls other than white space carry no text (NUL, escape sequences).
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	out := b.String()
	if !norm.NFC.IsNormalString(out) {
		out = norm.NFC.String(out)
	}
	return out
}

// isInvisible reports format characters that change no visible text: zero-width space, joiners and
// non-joiners, word joiner, byte-order mark, soft hyphen. Editors and CMSs insert them freely, so a
// re-render may differ only by them.
func isInvisible(r rune) bool {
	switch r {
	case '\u00AD', '\u200B', '\u200C', '\u200D', '\u2060', '\uFEFF':
		return true
	}
	return false
}

// decode converts raw bytes to UTF-8. The order follows the WHATWG encoding sniffing algorithm
// (byte-order mark, then the transport's charset label, then for HTML a <meta> declaration in the
// first 1024 bytes) with one deliberate change: without a byte-order mark or label, bytes that are
// valid UTF-8 as a whole are read as UTF-8. charset.DetermineEncoding looks only at the first 1024
// bytes and falls back to windows-1252 when they are ASCII, which garbles a UTF-8 page whose first
// non-ASCII character comes later, the common case for policy pages with a long <head>.
func decode(raw []byte, label string, sniffHTML bool) string {
	head := raw
	if len(head) > 1024 {
		head = head[:1024]
	}
	ct := "text/plain"
	if label != "" {
		ct += "; charset=" + label
	}
	if !sniffHTML {
		// DetermineEncoding pre-scans for <meta> tags; plain text must not be read as HTML.
		if e, ok := bomOrLabel(head, label); ok {
			return transformString(e, raw)
		}
		return utf8OrWindows1252(raw, false)
	}
	e, name, certain := charset.DetermineEncoding(head, ct)
	if certain || (name != "utf-8" && name != "windows-1252") {
		return transformString(e, raw)
	}
	return utf8OrWindows1252(raw, name == "utf-8")
}

func bomOrLabel(head []byte, label string) (encoding.Encoding, bool) {
	switch {
	case strings.HasPrefix(string(head), "\xEF\xBB\xBF"):
		return encoding.Nop, true
	case strings.HasPrefix(string(head), "\xFE\xFF"), strings.HasPrefix(string(head), "\xFF\xFE"):
		e, _, _ := charset.DetermineEncoding(head, "text/plain")
		return e, true
	}
	if label != "" {
		if e, _ := charset.Lookup(label); e != nil {
			return e, true
		}
	}
	return nil, false
}

func utf8OrWindows1252(raw []byte, preferUTF8 bool) string {
	if utf8.Valid(raw) || preferUTF8 {
		return string(raw) // invalid sequences become U+FFFD in canonicalBlock
	}
	return transformString(charmap.Windows1252, raw)
}

func transformString(e encoding.Encoding, raw []byte) string {
	if e == encoding.Nop || e == nil {
		return string(raw)
	}
	out, _, err := transform.Bytes(e.NewDecoder(), raw)
	if err != nil {
		return string(raw)
	}
	return string(out)
}
