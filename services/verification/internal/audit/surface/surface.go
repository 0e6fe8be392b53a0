// Package surface describes what an MCP server offers (tools, prompts, resources) and hashes it.
//
// The hashes exist to notice a "rug pull": a server that was audited with one set of tool
// descriptions and schemas and later serves another. Every hash is SHA-256 in lower-case hex:
//
//   - descriptions are hashed as sent, less trailing ASCII whitespace, without Unicode
//     normalisation: the model reads the bytes sent, so a switch to decomposed forms or an
//     inserted zero-width character must change the hash; an empty description hashes to "";
//   - schemas, annotations and prompt arguments are hashed in their RFC 8785 canonical JSON form
//     (see Canonical), so reordered keys or reformatted numbers do not change them; an absent or
//     null value hashes to "";
//   - each item's hash is the SHA-256 of the canonical JSON object of its kind, identifying fields
//     and field hashes, so no concatenation of fields can collide with another;
//   - the surface hash is the SHA-256 of the item hashes, sorted, one per line, so the order in
//     which a server lists items does not matter while any change to any item does.
package surface

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"
)

// Tool is a tool as tools/list lists it.
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
}

// Prompt is a prompt as prompts/list lists it.
type Prompt struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
}

// Resource is a resource as resources/list lists it.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// ResourceTemplate is a template as resources/templates/list lists it.
type ResourceTemplate struct {
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// Listing is everything the list methods returned.
type Listing struct {
	Tools     []Tool
	Prompts   []Prompt
	Resources []Resource
	Templates []ResourceTemplate
}

// Surface is the hashed form of a Listing. Slices are never nil, so the JSON always has arrays.
type Surface struct {
	Hash      string           `json:"hash"`
	Tools     []ToolDigest     `json:"tools"`
	Prompts   []PromptDigest   `json:"prompts"`
	Resources []ResourceDigest `json:"resources"`
	Templates []TemplateDigest `json:"resource_templates"`
	Counts    Counts           `json:"counts"`
}

// Counts counts a surface's items.
type Counts struct {
	Tools     int `json:"tools"`
	Prompts   int `json:"prompts"`
	Resources int `json:"resources"`
	Templates int `json:"resource_templates"`
}

// ToolDigest is one tool's identity and hashes.
type ToolDigest struct {
	Name  string `json:"name"`
	Title string `json:"title,omitempty"`
	// Annotations are kept readable because a reviewer needs their values, not only their hash;
	// nil when the tool has none or they are not a JSON object.
	Annotations        map[string]any `json:"annotations,omitempty"`
	DescriptionSHA256  string         `json:"description_sha256"`
	InputSchemaSHA256  string         `json:"input_schema_sha256"`
	OutputSchemaSHA256 string         `json:"output_schema_sha256"`
	AnnotationsSHA256  string         `json:"annotations_sha256"`
	Hash               string         `json:"hash"`
}

// PromptDigest is one prompt's identity and hashes.
type PromptDigest struct {
	Name              string `json:"name"`
	Title             string `json:"title,omitempty"`
	DescriptionSHA256 string `json:"description_sha256"`
	ArgumentsSHA256   string `json:"arguments_sha256"`
	Hash              string `json:"hash"`
}

// ResourceDigest is one resource's identity and hashes.
type ResourceDigest struct {
	URI               string `json:"uri"`
	Name              string `json:"name"`
	Title             string `json:"title,omitempty"`
	MimeType          string `json:"mime_type,omitempty"`
	DescriptionSHA256 string `json:"description_sha256"`
	Hash              string `json:"hash"`
}

// TemplateDigest is one resource template's identity and hashes.
type TemplateDigest struct {
	URITemplate       string `json:"uri_template"`
	Name              string `json:"name"`
	Title             string `json:"title,omitempty"`
	MimeType          string `json:"mime_type,omitempty"`
	DescriptionSHA256 string `json:"description_sha256"`
	Hash              string `json:"hash"`
}

// Digest hashes l. Items come out sorted by name (resources by URI, templates by URI template),
// ties broken by hash, so equal listings give equal surfaces whatever their order.
func Digest(l Listing) *Surface {
	s := &Surface{
		Tools:     make([]ToolDigest, 0, len(l.Tools)),
		Prompts:   make([]PromptDigest, 0, len(l.Prompts)),
		Resources: make([]ResourceDigest, 0, len(l.Resources)),
		Templates: make([]TemplateDigest, 0, len(l.Templates)),
	}
	var hashes []string
	for _, t := range l.Tools {
		d := digestTool(t)
		s.Tools = append(s.Tools, d)
		hashes = append(hashes, d.Hash)
	}
	for _, p := range l.Prompts {
		d := PromptDigest{
			Name:              p.Name,
			Title:             p.Title,
			DescriptionSHA256: textHash(p.Description),
			ArgumentsSHA256:   jsonHash(p.Arguments),
		}
		d.Hash = itemHash(map[string]string{
			"kind": "prompt", "name": d.Name, "title": d.Title,
			"description_sha256": d.DescriptionSHA256,
			"arguments_sha256":   d.ArgumentsSHA256,
		})
		s.Prompts = append(s.Prompts, d)
		hashes = append(hashes, d.Hash)
	}
	for _, r := range l.Resources {
		d := ResourceDigest{
			URI:               r.URI,
			Name:              r.Name,
			Title:             r.Title,
			MimeType:          r.MimeType,
			DescriptionSHA256: textHash(r.Description),
		}
		d.Hash = itemHash(map[string]string{
			"kind": "resource", "uri": d.URI, "name": d.Name, "title": d.Title,
			"mime_type":          d.MimeType,
			"description_sha256": d.DescriptionSHA256,
		})
		s.Resources = append(s.Resources, d)
		hashes = append(hashes, d.Hash)
	}
	for _, r := range l.Templates {
		d := TemplateDigest{
			URITemplate:       r.URITemplate,
			Name:              r.Name,
			Title:             r.Title,
			MimeType:          r.MimeType,
			DescriptionSHA256: textHash(r.Description),
		}
		d.Hash = itemHash(map[string]string{
			"kind": "resource_template", "uri_template": d.URITemplate, "name": d.Name,
			"title": d.Title, "mime_type": d.MimeType,
			"description_sha256": d.DescriptionSHA256,
		})
		s.Templates = append(s.Templates, d)
		hashes = append(hashes, d.Hash)
	}

	sort.Slice(s.Tools, func(i, j int) bool {
		return less(s.Tools[i].Name, s.Tools[j].Name, s.Tools[i].Hash, s.Tools[j].Hash)
	})
	sort.Slice(s.Prompts, func(i, j int) bool {
		return less(s.Prompts[i].Name, s.Prompts[j].Name, s.Prompts[i].Hash, s.Prompts[j].Hash)
	})
	sort.Slice(s.Resources, func(i, j int) bool {
		return less(s.Resources[i].URI, s.Resources[j].URI, s.Resources[i].Hash, s.Resources[j].Hash)
	})
	sort.Slice(s.Templates, func(i, j int) bool {
		return less(s.Templates[i].URITemplate, s.Templates[j].URITemplate, s.Templates[i].Hash, s.Templates[j].Hash)
	})

	sort.Strings(hashes)
	s.Hash = sum([]byte(strings.Join(hashes, "\n")))
	s.Counts = Counts{Tools: len(s.Tools), Prompts: len(s.Prompts), Resources: len(s.Resources), Templates: len(s.Templates)}
	return s
}

func digestTool(t Tool) ToolDigest {
	d := ToolDigest{
		Name:               t.Name,
		Title:              t.Title,
		Annotations:        object(t.Annotations),
		DescriptionSHA256:  textHash(t.Description),
		InputSchemaSHA256:  jsonHash(t.InputSchema),
		OutputSchemaSHA256: jsonHash(t.OutputSchema),
		AnnotationsSHA256:  jsonHash(t.Annotations),
	}
	d.Hash = itemHash(map[string]string{
		"kind": "tool", "name": d.Name, "title": d.Title,
		"description_sha256":   d.DescriptionSHA256,
		"input_schema_sha256":  d.InputSchemaSHA256,
		"output_schema_sha256": d.OutputSchemaSHA256,
		"annotations_sha256":   d.AnnotationsSHA256,
	})
	return d
}

func less(a, b, ha, hb string) bool {
	if a != b {
		return a < b
	}
	return ha < hb
}

// itemHash hashes an item's fields as one canonical JSON object.
func itemHash(fields map[string]string) string {
	raw, err := json.Marshal(fields)
	if err != nil {
		// A map of strings always marshals; hashing nothing would silently merge items.
		panic("surface: " + err.Error())
	}
	return jsonHash(raw)
}

// object decodes raw when it is a JSON object, keeping numbers as sent.
func object(raw []byte) map[string]any {
	if absent(raw) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil
	}
	return m
}
