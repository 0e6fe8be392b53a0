package surface

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestCompare(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Listing)
		want   []Change
	}{
		{
			name:   "tool added",
			mutate: func(l *Listing) { l.Tools = append(l.Tools, Tool{Name: "write_file"}) },
			want:   []Change{{Kind: ToolAdded, Item: "write_file"}},
		},
		{
			name:   "tool removed",
			mutate: func(l *Listing) { l.Tools = l.Tools[1:] },
			want:   []Change{{Kind: ToolRemoved, Item: "read_file"}},
		},
		{
			name:   "duplicate tool added",
			mutate: func(l *Listing) { l.Tools = append(l.Tools, Tool{Name: "ping"}) },
			want:   []Change{{Kind: ToolAdded, Item: "ping"}},
		},
		{
			name:   "description changed",
			mutate: func(l *Listing) { l.Tools[2].Description = "Checks the server is alive." },
			want:   []Change{{Kind: DescriptionChanged, Item: "ping", Field: "description", Detail: "description added"}},
		},
		{
			name:   "input schema changed",
			mutate: func(l *Listing) { l.Tools[2].InputSchema = json.RawMessage(`{"type":"object"}`) },
			want:   []Change{{Kind: InputSchemaChanged, Item: "ping", Field: "inputSchema", Detail: "inputSchema added"}},
		},
		{
			name:   "output schema changed",
			mutate: func(l *Listing) { l.Tools[0].OutputSchema = nil },
			want:   []Change{{Kind: OutputSchemaChanged, Item: "read_file", Field: "outputSchema", Detail: "outputSchema removed"}},
		},
		{
			name: "annotation changed",
			mutate: func(l *Listing) {
				l.Tools[0].Annotations = json.RawMessage(`{"readOnlyHint":false,"openWorldHint":false,"title":"x"}`)
			},
			want: []Change{
				{Kind: AnnotationChanged, Item: "read_file", Field: "annotations.readOnlyHint", Detail: "true -> false"},
				{Kind: AnnotationChanged, Item: "read_file", Field: "annotations.title", Detail: `absent -> "x"`},
			},
		},
		{
			name:   "title changed",
			mutate: func(l *Listing) { l.Tools[0].Title = "Read" },
			want:   []Change{{Kind: TitleChanged, Item: "read_file", Field: "title", Detail: `"Read file" -> "Read"`}},
		},
		{
			name:   "prompt added",
			mutate: func(l *Listing) { l.Prompts = append(l.Prompts, Prompt{Name: "review"}) },
			want:   []Change{{Kind: PromptAdded, Item: "review"}},
		},
		{
			name:   "prompt removed",
			mutate: func(l *Listing) { l.Prompts = nil },
			want:   []Change{{Kind: PromptRemoved, Item: "summarise"}},
		},
		{
			name:   "prompt changed",
			mutate: func(l *Listing) { l.Prompts[0].Arguments = nil; l.Prompts[0].Title = "" },
			want: []Change{
				{Kind: PromptChanged, Item: "summarise", Field: "title", Detail: `"Summarise" -> ""`},
				{Kind: PromptChanged, Item: "summarise", Field: "arguments", Detail: "arguments removed"},
			},
		},
		{
			name:   "resource added",
			mutate: func(l *Listing) { l.Resources = append(l.Resources, Resource{URI: "file:///LICENSE", Name: "LICENSE"}) },
			want:   []Change{{Kind: ResourceAdded, Item: "file:///LICENSE"}},
		},
		{
			name:   "resource removed",
			mutate: func(l *Listing) { l.Resources = nil },
			want:   []Change{{Kind: ResourceRemoved, Item: "file:///README.md"}},
		},
		{
			name:   "resource changed",
			mutate: func(l *Listing) { l.Resources[0].MimeType = "text/plain" },
			want:   []Change{{Kind: ResourceChanged, Item: "file:///README.md", Field: "mime_type", Detail: `"text/markdown" -> "text/plain"`}},
		},
		{
			name:   "template removed",
			mutate: func(l *Listing) { l.Templates = nil },
			want:   []Change{{Kind: ResourceRemoved, Item: "file:///{path}", Detail: "resource template"}},
		},
		{
			name:   "template changed",
			mutate: func(l *Listing) { l.Templates[0].Name = "files" },
			want:   []Change{{Kind: ResourceChanged, Item: "file:///{path}", Field: "name", Detail: `"file" -> "files"`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := fixture()
			tt.mutate(&l)
			got := Compare(Digest(fixture()), Digest(l))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Compare:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestCompareNil(t *testing.T) {
	s := Digest(fixture())
	if got := Compare(nil, s); len(got) != 6 || got[0].Kind != ToolAdded {
		t.Errorf("Compare(nil, s) = %+v, want everything added", got)
	}
	if got := Compare(s, nil); len(got) != 6 || got[0].Kind != ToolRemoved {
		t.Errorf("Compare(s, nil) = %+v, want everything removed", got)
	}
	if got := Compare(s, s); got != nil {
		t.Errorf("Compare(s, s) = %+v, want nothing", got)
	}
}

// schemaTool is a tool whose input schema and annotations the rows below vary.
func schemaTool(schema, annotations string) Listing {
	t := Tool{Name: "search", Description: "Searches the index."}
	if schema != "" {
		t.InputSchema = json.RawMessage(schema)
	}
	if annotations != "" {
		t.Annotations = json.RawMessage(annotations)
	}
	return Listing{Tools: []Tool{t}}
}

func TestCompareListings(t *testing.T) {
	const base = `{"type":"object","additionalProperties":false,"required":["q"],"properties":{
		"q":{"type":"string","maxLength":200,"minLength":1},
		"limit":{"type":"integer","minimum":1,"maximum":50},
		"mode":{"type":"string","enum":["fast","exact"]},
		"tags":{"type":"array","maxItems":5,"items":{"type":"string","pattern":"^[a-z]+$"}}}}`
	tests := []struct {
		name           string
		schema, annots string
		want           []Change
	}{
		{
			name: "parameter added",
			schema: `{"type":"object","additionalProperties":false,"required":["q","scope"],"properties":{
				"q":{"type":"string","maxLength":200,"minLength":1},
				"limit":{"type":"integer","minimum":1,"maximum":50},
				"mode":{"type":"string","enum":["fast","exact"]},
				"scope":{"type":"string","maxLength":10},
				"tags":{"type":"array","maxItems":5,"items":{"type":"string","pattern":"^[a-z]+$"}}}}`,
			want: []Change{{Kind: ParameterAdded, Item: "search", Field: "inputSchema.properties.scope", Detail: "required"}},
		},
		{
			name: "parameter removed",
			schema: `{"type":"object","additionalProperties":false,"required":["q"],"properties":{
				"q":{"type":"string","maxLength":200,"minLength":1},
				"mode":{"type":"string","enum":["fast","exact"]},
				"tags":{"type":"array","maxItems":5,"items":{"type":"string","pattern":"^[a-z]+$"}}}}`,
			want: []Change{{Kind: ParameterRemoved, Item: "search", Field: "inputSchema.properties.limit"}},
		},
		{
			name: "parameter now required",
			schema: `{"type":"object","additionalProperties":false,"required":["q","limit"],"properties":{
				"q":{"type":"string","maxLength":200,"minLength":1},
				"limit":{"type":"integer","minimum":1,"maximum":50},
				"mode":{"type":"string","enum":["fast","exact"]},
				"tags":{"type":"array","maxItems":5,"items":{"type":"string","pattern":"^[a-z]+$"}}}}`,
			want: []Change{{Kind: ParameterNowRequired, Item: "search", Field: "inputSchema.properties.limit"}},
		},
		{
			name: "parameter no longer required",
			schema: `{"type":"object","additionalProperties":false,"properties":{
				"q":{"type":"string","maxLength":200,"minLength":1},
				"limit":{"type":"integer","minimum":1,"maximum":50},
				"mode":{"type":"string","enum":["fast","exact"]},
				"tags":{"type":"array","maxItems":5,"items":{"type":"string","pattern":"^[a-z]+$"}}}}`,
			want: []Change{{Kind: ParameterNoLongerRequired, Item: "search", Field: "inputSchema.properties.q"}},
		},
		{
			name: "additionalProperties opened",
			schema: `{"type":"object","required":["q"],"properties":{
				"q":{"type":"string","maxLength":200,"minLength":1},
				"limit":{"type":"integer","minimum":1,"maximum":50},
				"mode":{"type":"string","enum":["fast","exact"]},
				"tags":{"type":"array","maxItems":5,"items":{"type":"string","pattern":"^[a-z]+$"}}}}`,
			want: []Change{{Kind: SchemaWidened, Item: "search", Field: "inputSchema", Detail: "additionalProperties false -> absent (open)"}},
		},
		{
			name: "enum grew and maxLength raised",
			schema: `{"type":"object","additionalProperties":false,"required":["q"],"properties":{
				"q":{"type":"string","maxLength":2000,"minLength":1},
				"limit":{"type":"integer","minimum":1,"maximum":50},
				"mode":{"type":"string","enum":["fast","exact","raw"]},
				"tags":{"type":"array","maxItems":5,"items":{"type":"string","pattern":"^[a-z]+$"}}}}`,
			want: []Change{
				{Kind: SchemaWidened, Item: "search", Field: "inputSchema.properties.mode", Detail: `enum grew: added "raw"`},
				{Kind: SchemaWidened, Item: "search", Field: "inputSchema.properties.q", Detail: "maxLength 200 -> 2000"},
			},
		},
		{
			name: "enum removed, bounds dropped, type widened, nested pattern dropped",
			schema: `{"type":"object","additionalProperties":false,"required":["q"],"properties":{
				"q":{"type":"string","maxLength":200,"minLength":0},
				"limit":{"type":"number","minimum":1},
				"mode":{"type":["string","null"]},
				"tags":{"type":"array","items":{"type":"string"}}}}`,
			want: []Change{
				{Kind: SchemaWidened, Item: "search", Field: "inputSchema.properties.limit", Detail: "type widened: integer -> number"},
				{Kind: SchemaWidened, Item: "search", Field: "inputSchema.properties.limit", Detail: "maximum 50 removed"},
				{Kind: SchemaWidened, Item: "search", Field: "inputSchema.properties.mode", Detail: "type widened: string -> null|string"},
				{Kind: SchemaWidened, Item: "search", Field: "inputSchema.properties.mode", Detail: "enum removed"},
				{Kind: SchemaWidened, Item: "search", Field: "inputSchema.properties.q", Detail: "minLength 1 -> 0"},
				{Kind: SchemaWidened, Item: "search", Field: "inputSchema.properties.tags", Detail: "maxItems 5 removed"},
				{Kind: SchemaWidened, Item: "search", Field: "inputSchema.properties.tags.items", Detail: "pattern removed"},
			},
		},
		{
			name:   "annotation flipped",
			schema: base,
			annots: `{"readOnlyHint":false,"destructiveHint":false}`,
			want: []Change{
				{Kind: AnnotationChanged, Item: "search", Field: "annotations.destructiveHint", Detail: "absent -> false"},
				{Kind: AnnotationChanged, Item: "search", Field: "annotations.readOnlyHint", Detail: "true -> false"},
				{Kind: AnnotationFlipped, Item: "search", Field: "annotations.readOnlyHint", Detail: "readOnlyHint true -> false"},
				{Kind: AnnotationFlipped, Item: "search", Field: "annotations.destructiveHint", Detail: "destructiveHint true (default) -> false"},
			},
		},
		{
			name:   "hint made explicit at its default is no flip",
			schema: base,
			annots: `{"readOnlyHint":true,"openWorldHint":true}`,
			want:   []Change{{Kind: AnnotationChanged, Item: "search", Field: "annotations.openWorldHint", Detail: "absent -> true"}},
		},
	}
	old := schemaTool(base, `{"readOnlyHint":true}`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			annots := tt.annots
			if annots == "" {
				annots = `{"readOnlyHint":true}`
			}
			got := CompareListings(old, schemaTool(tt.schema, annots))
			var want []Change
			if tt.schema != base {
				want = append(want, Change{Kind: InputSchemaChanged, Item: "search", Field: "inputSchema"})
			}
			want = append(want, tt.want...)
			for i := range got {
				if got[i].Kind == InputSchemaChanged {
					got[i].Detail = ""
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("CompareListings:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestCompareListingsUnchangedAndMissing(t *testing.T) {
	l := fixture()
	if got := CompareListings(l, fixture()); got != nil {
		t.Errorf("equal listings: %+v", got)
	}
	// A schema that is absent or not an object yields only the coarse change.
	got := CompareListings(schemaTool("", ""), schemaTool(`[1]`, ""))
	if len(got) != 1 || got[0].Kind != InputSchemaChanged {
		t.Errorf("got %+v", got)
	}
}
