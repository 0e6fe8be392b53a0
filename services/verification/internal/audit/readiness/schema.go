package readiness

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// absent reports whether a listed JSON value counts as not given (no member, or null).
func absent(raw []byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// inputSchema is t's input schema when it is a JSON object.
func inputSchema(t surface.Tool) (map[string]any, bool) {
	m, ok := decodeAny(t.InputSchema).(map[string]any)
	return m, ok
}

// eachProperty calls f with every property schema of schema, nested properties and array items
// included, and a dotted path to it ("filter.tags[]").
func eachProperty(schema map[string]any, f func(path string, prop any)) {
	var walk func(s map[string]any, prefix string, depth int)
	walk = func(s map[string]any, prefix string, depth int) {
		if depth > maxWalkDepth {
			return
		}
		props, _ := s["properties"].(map[string]any)
		names := make([]string, 0, len(props))
		for n := range props {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			path := prefix + n
			f(path, props[n])
			p, ok := props[n].(map[string]any)
			if !ok {
				continue
			}
			walk(p, path+".", depth+1)
			if items, ok := p["items"].(map[string]any); ok {
				f(path+"[]", items)
				walk(items, path+"[].", depth+1)
			}
		}
	}
	walk(schema, "", 0)
}

// typed reports whether a property schema constrains the kind of value it takes.
func typed(prop any) bool {
	switch p := prop.(type) {
	case bool:
		return !p // false accepts nothing; true accepts anything
	case map[string]any:
		for _, k := range []string{"type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const"} {
			if _, ok := p[k]; ok {
				return true
			}
		}
	}
	return false
}

func checkInputSchemaUntyped(in Input) []Evidence {
	return forTools(in, func(t surface.Tool) []string {
		if absent(t.InputSchema) {
			return []string{"inputSchema is missing"}
		}
		s, ok := inputSchema(t)
		if !ok {
			return []string{"inputSchema is not a JSON object"}
		}
		if s["type"] != "object" {
			return []string{fmt.Sprintf("inputSchema type is %s, not \"object\"", jsonOrAbsent(s, "type"))}
		}
		var out []string
		eachProperty(s, func(path string, prop any) {
			if !typed(prop) {
				out = append(out, fmt.Sprintf("property %s has no type", quote(path, 80)))
			}
		})
		return out
	})
}

func checkInputSchemaUnbounded(in Input) []Evidence {
	return forTools(in, func(t surface.Tool) []string {
		s, ok := inputSchema(t)
		if !ok {
			return nil
		}
		var out []string
		eachProperty(s, func(path string, prop any) {
			p, ok := prop.(map[string]any)
			if !ok || has(p, "enum", "const") {
				return
			}
			for _, typ := range types(p) {
				var missing string
				switch typ {
				case "string":
					if !has(p, "maxLength", "pattern", "format") {
						missing = "no maxLength, pattern, format or enum"
					}
				case "number", "integer":
					lo, hi := has(p, "minimum", "exclusiveMinimum"), has(p, "maximum", "exclusiveMaximum")
					switch {
					case !lo && !hi:
						missing = "no minimum or maximum"
					case !lo:
						missing = "no minimum"
					case !hi:
						missing = "no maximum"
					}
				case "array":
					if !has(p, "maxItems") {
						missing = "no maxItems"
					}
				}
				if missing != "" {
					out = append(out, fmt.Sprintf("property %s (%s) has %s", quote(path, 80), typ, missing))
				}
			}
		})
		return out
	})
}

func checkInputSchemaRequiredMissing(in Input) []Evidence {
	return forTools(in, func(t surface.Tool) []string {
		s, ok := inputSchema(t)
		if !ok {
			return nil
		}
		props, _ := s["properties"].(map[string]any)
		if len(props) == 0 || has(s, "required") {
			return nil
		}
		if len(props) == 1 {
			return []string{"1 property but no \"required\" list"}
		}
		return []string{fmt.Sprintf("%d properties but no \"required\" list", len(props))}
	})
}

func checkInputSchemaOpen(in Input) []Evidence {
	return forTools(in, func(t surface.Tool) []string {
		s, ok := inputSchema(t)
		if !ok || s["type"] != "object" {
			return nil // input-schema-untyped reports it
		}
		switch ap := s["additionalProperties"].(type) {
		case nil:
			return []string{"additionalProperties is absent, so any extra argument is accepted"}
		case bool:
			if ap {
				return []string{"additionalProperties is true"}
			}
		case map[string]any:
			if len(ap) == 0 {
				return []string{"additionalProperties is {}, which accepts anything"}
			}
		}
		return nil
	})
}

func checkOutputSchemaMissing(in Input) []Evidence {
	return forTools(in, func(t surface.Tool) []string {
		if absent(t.OutputSchema) {
			return []string{"no outputSchema"}
		}
		return nil
	})
}

func has(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; ok {
			return true
		}
	}
	return false
}

func types(p map[string]any) []string {
	switch t := p["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, v := range t {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// jsonOrAbsent describes m[k] briefly: a string quoted, anything else by its JSON kind.
func jsonOrAbsent(m map[string]any, k string) string {
	v, ok := m[k]
	if !ok {
		return "absent"
	}
	switch v := v.(type) {
	case string:
		return quote(v, 40)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}
