package readiness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// label is a tool name (or other server-chosen identifier) fit for a report: as listed when it is plain text, escaped when it holds a
// character a reader would not see, so evidence never carries hidden characters raw.
func label(name string) string {
	for _, r := range name {
		if !visible(r) {
			return strconv.QuoteToASCII(name)
		}
	}
	return name
}

func visible(r rune) bool {
	return r != utf8.RuneError && unicode.IsGraphic(r) && !unicode.Is(unicode.Cf, r) && !(r >= 0x80 && r <= 0x9f)
}

// quote shows server text in evidence: at most limit runes, with everything outside printable
// ASCII escaped.
func quote(s string, limit int) string {
	runes := []rune(s)
	if len(runes) > limit {
		return strconv.QuoteToASCII(string(runes[:limit])) + "…"
	}
	return strconv.QuoteToASCII(s)
}

// capped turns details into evidence for one tool, keeping the first maxEvidence and saying how
// many more there were.
func capped(tool string, details []string) []Evidence {
	var out []Evidence
	for i, d := range details {
		if i == maxEvidence-1 && len(details) > maxEvidence {
			out = append(out, Evidence{Tool: tool, Detail: fmt.Sprintf("… and %d more", len(details)-i)})
			break
		}
		out = append(out, Evidence{Tool: tool, Detail: d})
	}
	return out
}

// decode decodes a JSON object, keeping numbers as sent; nil when raw is absent or not an object.
func decode(raw []byte) map[string]any {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil
	}
	return m
}

// hints are a tool's behaviour annotations as given: a hint is set only when it is a JSON boolean.
type hints struct {
	readOnly, destructive       bool
	readOnlySet, destructiveSet bool
}

func toolHints(t surface.Tool) hints {
	m := decode(t.Annotations)
	var h hints
	h.readOnly, h.readOnlySet = m["readOnlyHint"].(bool)
	h.destructive, h.destructiveSet = m["destructiveHint"].(bool)
	return h
}

// forTools runs check on every tool and caps its evidence per tool.
func forTools(in Input, check func(t surface.Tool) []string) []Evidence {
	var out []Evidence
	for _, t := range in.Listing.Tools {
		out = append(out, capped(label(t.Name), check(t))...)
	}
	return out
}
