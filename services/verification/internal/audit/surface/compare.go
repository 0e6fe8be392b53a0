package surface

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
)

// Change kinds. Compare reports the first group; CompareListings adds the second, which needs
// the schemas and annotations themselves rather than their hashes.
const (
	ToolAdded           = "tool_added"
	ToolRemoved         = "tool_removed"
	DescriptionChanged  = "description_changed"
	InputSchemaChanged  = "input_schema_changed"
	OutputSchemaChanged = "output_schema_changed"
	AnnotationChanged   = "annotation_changed"
	TitleChanged        = "title_changed"
	PromptAdded         = "prompt_added"
	PromptRemoved       = "prompt_removed"
	PromptChanged       = "prompt_changed"
	ResourceAdded       = "resource_added"
	ResourceRemoved     = "resource_removed"
	ResourceChanged     = "resource_changed"

	ParameterAdded            = "parameter_added"
	ParameterRemoved          = "parameter_removed"
	ParameterNowRequired      = "parameter_now_required"
	ParameterNoLongerRequired = "parameter_no_longer_required"
	SchemaWidened             = "schema_widened"
	AnnotationFlipped         = "annotation_flipped"
)

// Change is one difference between two surfaces. Item is the tool or prompt name, the resource
// URI or the template's URI template; Field names what changed within it.
type Change struct {
	Kind   string `json:"kind"`
	Item   string `json:"item"`
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Compare lists what changed from old to new, tools first, then prompts, resources and resource
// templates (reported with the resource kinds), each in item order. A nil surface is an empty
// one. Items are matched by name (URI for resources); a name listed twice is matched occurrence
// by occurrence, so a duplicate that appears is reported as added.
func Compare(old, new *Surface) []Change {
	return compare(old, new, nil)
}

// compare is Compare with a hook that adds changes for a tool present in both surfaces.
func compare(old, new *Surface, finer func(a, b ToolDigest) []Change) []Change {
	if old == nil {
		old = &Surface{}
	}
	if new == nil {
		new = &Surface{}
	}
	var out []Change
	pair(old.Tools, new.Tools, func(t ToolDigest) string { return t.Name },
		func(t ToolDigest) { out = append(out, Change{Kind: ToolAdded, Item: t.Name}) },
		func(t ToolDigest) { out = append(out, Change{Kind: ToolRemoved, Item: t.Name}) },
		func(a, b ToolDigest) {
			out = append(out, toolChanges(a, b)...)
			if finer != nil && a.Hash != b.Hash {
				out = append(out, finer(a, b)...)
			}
		})
	pair(old.Prompts, new.Prompts, func(p PromptDigest) string { return p.Name },
		func(p PromptDigest) { out = append(out, Change{Kind: PromptAdded, Item: p.Name}) },
		func(p PromptDigest) { out = append(out, Change{Kind: PromptRemoved, Item: p.Name}) },
		func(a, b PromptDigest) {
			if a.Title != b.Title {
				out = append(out, Change{Kind: PromptChanged, Item: a.Name, Field: "title", Detail: fmt.Sprintf("%q -> %q", a.Title, b.Title)})
			}
			for _, f := range [][3]string{
				{"description", a.DescriptionSHA256, b.DescriptionSHA256},
				{"arguments", a.ArgumentsSHA256, b.ArgumentsSHA256},
			} {
				if f[1] != f[2] {
					out = append(out, Change{Kind: PromptChanged, Item: a.Name, Field: f[0], Detail: hashDetail(f[0], f[1], f[2])})
				}
			}
		})
	pair(old.Resources, new.Resources, func(r ResourceDigest) string { return r.URI },
		func(r ResourceDigest) { out = append(out, Change{Kind: ResourceAdded, Item: r.URI}) },
		func(r ResourceDigest) { out = append(out, Change{Kind: ResourceRemoved, Item: r.URI}) },
		func(a, b ResourceDigest) {
			out = append(out, resourceChanges(a.URI, [][3]string{
				{"name", a.Name, b.Name},
				{"title", a.Title, b.Title},
				{"mime_type", a.MimeType, b.MimeType},
				{"description", a.DescriptionSHA256, b.DescriptionSHA256},
			})...)
		})
	pair(old.Templates, new.Templates, func(r TemplateDigest) string { return r.URITemplate },
		func(r TemplateDigest) {
			out = append(out, Change{Kind: ResourceAdded, Item: r.URITemplate, Detail: "resource template"})
		},
		func(r TemplateDigest) {
			out = append(out, Change{Kind: ResourceRemoved, Item: r.URITemplate, Detail: "resource template"})
		},
		func(a, b TemplateDigest) {
			out = append(out, resourceChanges(a.URITemplate, [][3]string{
				{"name", a.Name, b.Name},
				{"title", a.Title, b.Title},
				{"mime_type", a.MimeType, b.MimeType},
				{"description", a.DescriptionSHA256, b.DescriptionSHA256},
			})...)
		})
	return out
}

func toolChanges(a, b ToolDigest) []Change {
	var out []Change
	if a.Title != b.Title {
		out = append(out, Change{Kind: TitleChanged, Item: a.Name, Field: "title", Detail: fmt.Sprintf("%q -> %q", a.Title, b.Title)})
	}
	if a.DescriptionSHA256 != b.DescriptionSHA256 {
		out = append(out, Change{Kind: DescriptionChanged, Item: a.Name, Field: "description", Detail: hashDetail("description", a.DescriptionSHA256, b.DescriptionSHA256)})
	}
	if a.InputSchemaSHA256 != b.InputSchemaSHA256 {
		out = append(out, Change{Kind: InputSchemaChanged, Item: a.Name, Field: "inputSchema", Detail: hashDetail("inputSchema", a.InputSchemaSHA256, b.InputSchemaSHA256)})
	}
	if a.OutputSchemaSHA256 != b.OutputSchemaSHA256 {
		out = append(out, Change{Kind: OutputSchemaChanged, Item: a.Name, Field: "outputSchema", Detail: hashDetail("outputSchema", a.OutputSchemaSHA256, b.OutputSchemaSHA256)})
	}
	if a.AnnotationsSHA256 != b.AnnotationsSHA256 {
		keys := changedKeys(a.Annotations, b.Annotations)
		if len(keys) == 0 {
			out = append(out, Change{Kind: AnnotationChanged, Item: a.Name, Field: "annotations", Detail: hashDetail("annotations", a.AnnotationsSHA256, b.AnnotationsSHA256)})
		}
		for _, k := range keys {
			out = append(out, Change{Kind: AnnotationChanged, Item: a.Name, Field: "annotations." + k, Detail: show(a.Annotations, k) + " -> " + show(b.Annotations, k)})
		}
	}
	return out
}

func resourceChanges(item string, fields [][3]string) []Change {
	var out []Change
	for _, f := range fields {
		if f[1] == f[2] {
			continue
		}
		d := fmt.Sprintf("%q -> %q", f[1], f[2])
		if f[0] == "description" {
			d = hashDetail(f[0], f[1], f[2])
		}
		out = append(out, Change{Kind: ResourceChanged, Item: item, Field: f[0], Detail: d})
	}
	return out
}

// hashDetail says how a hashed field changed; the hashes are shortened because the detail is for
// people, and the full ones are in the surfaces.
func hashDetail(field, a, b string) string {
	switch {
	case a == "":
		return field + " added"
	case b == "":
		return field + " removed"
	}
	return fmt.Sprintf("%s %s -> %s", field, short(a), short(b))
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func changedKeys(a, b map[string]any) []string {
	var keys []string
	for k, v := range a {
		if w, ok := b[k]; !ok || !reflect.DeepEqual(v, w) {
			keys = append(keys, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func show(m map[string]any, k string) string {
	v, ok := m[k]
	if !ok {
		return "absent"
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(raw)
}

// pair matches items of old and new by key, the n-th occurrence of a key with the n-th, and
// calls the callbacks in key order. Both slices must be sorted by key, as Digest leaves them.
func pair[T any](old, new []T, key func(T) string, added, removed func(T), both func(a, b T)) {
	type slot struct {
		key  string
		n    int
		a, b *T
	}
	index := map[[2]any]*slot{}
	var order []*slot
	put := func(items []T, isNew bool) {
		seen := map[string]int{}
		for i := range items {
			k := key(items[i])
			n := seen[k]
			seen[k]++
			id := [2]any{k, n}
			s := index[id]
			if s == nil {
				s = &slot{key: k, n: n}
				index[id] = s
				order = append(order, s)
			}
			if isNew {
				s.b = &items[i]
			} else {
				s.a = &items[i]
			}
		}
	}
	put(old, false)
	put(new, true)
	sort.SliceStable(order, func(i, j int) bool {
		if order[i].key != order[j].key {
			return order[i].key < order[j].key
		}
		return order[i].n < order[j].n
	})
	for _, s := range order {
		switch {
		case s.a == nil:
			added(*s.b)
		case s.b == nil:
			removed(*s.a)
		default:
			both(*s.a, *s.b)
		}
	}
}
