package surface

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// CompareListings reports what Compare reports for the two listings' digests and, after the
// changes of each tool present in both, finer changes only the schemas themselves can show:
// parameters added, removed or made (non-)required, the input schema accepting more than it did
// (schema_widened), and behaviour hints that changed meaning (annotation_flipped).
//
// Widening is judged on the input schema only: that is where a server that passed review can
// quietly start accepting more (an open object, a longer string, a dropped enum). The top-level
// properties and, recursively, the properties and items present in both schemas are compared;
// $ref, allOf and the other combinators are not followed.
func CompareListings(old, new Listing) []Change {
	oldTools, newTools := byHash(old.Tools), byHash(new.Tools)
	return compare(Digest(old), Digest(new), func(a, b ToolDigest) []Change {
		return toolDiff(oldTools[a.Hash], newTools[b.Hash])
	})
}

// byHash indexes tools by their digest hash: tools with equal hashes are equal in every field
// that matters, so any of them will do.
func byHash(tools []Tool) map[string]Tool {
	m := make(map[string]Tool, len(tools))
	for _, t := range tools {
		m[digestTool(t).Hash] = t
	}
	return m
}

func toolDiff(a, b Tool) []Change {
	var out []Change
	sa, sb := object(a.InputSchema), object(b.InputSchema)
	out = append(out, parameterChanges(b.Name, sa, sb)...)
	w := widening{item: b.Name}
	w.walk(sa, sb, "inputSchema", 0)
	out = append(out, w.out...)
	out = append(out, flips(b.Name, object(a.Annotations), object(b.Annotations))...)
	return out
}

func parameterChanges(item string, a, b map[string]any) []Change {
	pa, pb := props(a), props(b)
	ra, rb := required(a), required(b)
	var out []Change
	for _, name := range keys(pa, pb) {
		field := "inputSchema.properties." + name
		_, inA := pa[name]
		_, inB := pb[name]
		switch {
		case !inA:
			d := "optional"
			if rb[name] {
				d = "required"
			}
			out = append(out, Change{Kind: ParameterAdded, Item: item, Field: field, Detail: d})
		case !inB:
			out = append(out, Change{Kind: ParameterRemoved, Item: item, Field: field})
		case !ra[name] && rb[name]:
			out = append(out, Change{Kind: ParameterNowRequired, Item: item, Field: field})
		case ra[name] && !rb[name]:
			out = append(out, Change{Kind: ParameterNoLongerRequired, Item: item, Field: field})
		}
	}
	return out
}

// maxSchemaDepth bounds the walk: schemas come from the audited server.
const maxSchemaDepth = 32

type widening struct {
	item string
	out  []Change
}

func (w *widening) add(path, format string, args ...any) {
	w.out = append(w.out, Change{Kind: SchemaWidened, Item: w.item, Field: path, Detail: fmt.Sprintf(format, args...)})
}

func (w *widening) walk(a, b map[string]any, path string, depth int) {
	if a == nil || b == nil || depth > maxSchemaDepth {
		return
	}
	w.additional(a, b, path)
	w.types(a, b, path)
	w.enum(a, b, path)
	if _, ok := a["const"]; ok {
		if _, ok := b["const"]; !ok {
			w.add(path, "const removed")
		}
	}
	for _, kw := range []string{"maxLength", "maximum", "exclusiveMaximum", "maxItems", "maxProperties"} {
		w.bound(a, b, path, kw, func(x, y float64) bool { return y > x })
	}
	for _, kw := range []string{"minLength", "minimum", "exclusiveMinimum", "minItems", "minProperties"} {
		w.bound(a, b, path, kw, func(x, y float64) bool { return y < x })
	}
	for _, kw := range []string{"pattern", "format"} {
		if _, ok := a[kw]; ok {
			if _, ok := b[kw]; !ok {
				w.add(path, "%s removed", kw)
			}
		}
	}
	pa, pb := props(a), props(b)
	for _, name := range keys(pa, pb) {
		x, _ := pa[name].(map[string]any)
		y, _ := pb[name].(map[string]any)
		w.walk(x, y, path+".properties."+name, depth+1)
	}
	x, _ := a["items"].(map[string]any)
	y, _ := b["items"].(map[string]any)
	w.walk(x, y, path+".items", depth+1)
}

// additional treats a missing additionalProperties as open, as JSON Schema does.
func (w *widening) additional(a, b map[string]any, path string) {
	describe := func(v any, ok bool) (string, bool) {
		switch v := v.(type) {
		case bool:
			if !v {
				return "false", false
			}
			return "true", true
		case map[string]any:
			return "schema", false
		}
		return "absent", true
	}
	va, okA := a["additionalProperties"]
	vb, okB := b["additionalProperties"]
	da, openA := describe(va, okA)
	db, openB := describe(vb, okB)
	switch {
	case !openA && openB:
		w.add(path, "additionalProperties %s -> %s (open)", da, db)
	case da == "false" && db == "schema":
		w.add(path, "additionalProperties false -> schema")
	}
}

func (w *widening) types(a, b map[string]any, path string) {
	ta, tb := typeSet(a), typeSet(b)
	if len(ta) == 0 {
		return
	}
	if len(tb) == 0 {
		w.add(path, "type constraint %s removed", strings.Join(sortedSet(ta), "|"))
		return
	}
	for t := range tb {
		if ta[t] || (t == "integer" && ta["number"]) {
			continue
		}
		w.add(path, "type widened: %s -> %s", strings.Join(sortedSet(ta), "|"), strings.Join(sortedSet(tb), "|"))
		return
	}
}

func (w *widening) enum(a, b map[string]any, path string) {
	ea, ok := a["enum"].([]any)
	if !ok {
		return
	}
	eb, ok := b["enum"].([]any)
	if !ok {
		w.add(path, "enum removed")
		return
	}
	have := map[string]bool{}
	for _, v := range ea {
		have[jsonText(v)] = true
	}
	var added []string
	for _, v := range eb {
		if t := jsonText(v); !have[t] {
			added = append(added, t)
		}
	}
	if len(added) > 0 {
		w.add(path, "enum grew: added %s", strings.Join(added, ", "))
	}
}

func (w *widening) bound(a, b map[string]any, path, kw string, looser func(x, y float64) bool) {
	x, ok := number(a[kw])
	if !ok {
		return
	}
	y, ok := number(b[kw])
	switch {
	case !ok:
		w.add(path, "%s %s removed", kw, format(x))
	case looser(x, y):
		w.add(path, "%s %s -> %s", kw, format(x), format(y))
	}
}

// hints are the tool annotations whose meaning a client acts on, with the value the MCP
// specification tells clients to assume when a hint is absent.
var hints = []struct {
	name string
	def  bool
}{
	{"readOnlyHint", false},
	{"destructiveHint", true},
	{"idempotentHint", false},
	{"openWorldHint", true},
}

// flips compares effective values: a hint that goes from absent to its default changes nothing a
// client does, while one that goes from absent to the opposite of its default does.
func flips(item string, a, b map[string]any) []Change {
	var out []Change
	for _, h := range hints {
		va, da := hint(a, h.name, h.def)
		vb, db := hint(b, h.name, h.def)
		if va != vb {
			out = append(out, Change{Kind: AnnotationFlipped, Item: item, Field: "annotations." + h.name,
				Detail: fmt.Sprintf("%s %t%s -> %t%s", h.name, va, da, vb, db)})
		}
	}
	return out
}

func hint(m map[string]any, name string, def bool) (bool, string) {
	if v, ok := m[name].(bool); ok {
		return v, ""
	}
	return def, " (default)"
}

func props(schema map[string]any) map[string]any {
	p, _ := schema["properties"].(map[string]any)
	return p
}

func required(schema map[string]any) map[string]bool {
	r := map[string]bool{}
	list, _ := schema["required"].([]any)
	for _, v := range list {
		if s, ok := v.(string); ok {
			r[s] = true
		}
	}
	return r
}

func typeSet(schema map[string]any) map[string]bool {
	s := map[string]bool{}
	switch t := schema["type"].(type) {
	case string:
		s[t] = true
	case []any:
		for _, v := range t {
			if str, ok := v.(string); ok {
				s[str] = true
			}
		}
	}
	return s
}

func keys(a, b map[string]any) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func sortedSet(s map[string]bool) []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

// jsonText spells an enum value as canonical JSON, so the string "1" and the number 1 stay
// apart while 1 and 1.0 do not.
func jsonText(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if c, err := Canonical(raw); err == nil {
		return string(c)
	}
	return string(raw)
}

func format(f float64) string {
	return strconv.FormatFloat(f, 'g', -1, 64)
}
