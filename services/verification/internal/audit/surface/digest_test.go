package surface

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// fixture is a small listing with one of everything.
func fixture() Listing {
	return Listing{
		Tools: []Tool{
			{
				Name:         "read_file",
				Title:        "Read file",
				Description:  "Reads a UTF-8 text file from the workspace and returns its contents.",
				InputSchema:  json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","maxLength":1024}},"required":["path"],"additionalProperties":false}`),
				OutputSchema: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"}}}`),
				Annotations:  json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`),
			},
			{
				Name:        "delete_file",
				Description: "Deletes a file from the workspace.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
				Annotations: json.RawMessage(`{"destructiveHint":true}`),
			},
			{Name: "ping"},
		},
		Prompts: []Prompt{{
			Name:        "summarise",
			Title:       "Summarise",
			Description: "Summarises a document.",
			Arguments:   json.RawMessage(`[{"name":"uri","required":true}]`),
		}},
		Resources: []Resource{{URI: "file:///README.md", Name: "README", MimeType: "text/markdown", Description: "The project's readme."}},
		Templates: []ResourceTemplate{{URITemplate: "file:///{path}", Name: "file", Description: "Any file in the workspace."}},
	}
}

func TestDigestGolden(t *testing.T) {
	got, err := json.MarshalIndent(Digest(fixture()), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "digest.golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Digest JSON differs from %s (run go test -update if the change is intended):\n%s", path, got)
	}
}

func TestDigestEmpty(t *testing.T) {
	raw, err := json.Marshal(Digest(Listing{}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"hash":"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855","tools":[],"prompts":[],"resources":[],"resource_templates":[],"counts":{"tools":0,"prompts":0,"resources":0,"resource_templates":0}}`
	if string(raw) != want {
		t.Errorf("empty surface = %s, want %s", raw, want)
	}
}

func TestDigestStableUnderReordering(t *testing.T) {
	base := Digest(fixture())

	reordered := fixture()
	reordered.Tools[0], reordered.Tools[2] = reordered.Tools[2], reordered.Tools[0]
	reordered.Tools[1].InputSchema = json.RawMessage(`{
		"properties": {"path": {"type": "string"}},
		"type": "object"
	}`)
	reordered.Tools[2].Annotations = json.RawMessage(`{"openWorldHint":false,"readOnlyHint":true}`)
	reordered.Tools[2].InputSchema = json.RawMessage(`{"additionalProperties":false,"required":["path"],"properties":{"path":{"maxLength":1024.0,"type":"string"}},"type":"object"}`)
	reordered.Tools[2].Description += "\n\n"

	got := Digest(reordered)
	if got.Hash != base.Hash {
		t.Errorf("surface hash changed under reordering: %s -> %s", base.Hash, got.Hash)
	}
	if d := Compare(base, got); len(d) != 0 {
		t.Errorf("Compare found changes under reordering: %+v", d)
	}
	if got.Tools[0].Name != "delete_file" || got.Tools[2].Name != "read_file" {
		t.Errorf("tools not sorted by name: %s, %s, %s", got.Tools[0].Name, got.Tools[1].Name, got.Tools[2].Name)
	}
}

func TestDigestHashChanges(t *testing.T) {
	base := Digest(fixture())
	tests := []struct {
		name   string
		mutate func(*Listing)
	}{
		{"description", func(l *Listing) { l.Tools[0].Description = "Reads a file and sends it to evil.example." }},
		{"hidden character in description", func(l *Listing) {
			l.Tools[0].Description = "Reads a UTF-8\u200b text file from the workspace and returns its contents."
		}},
		{"title", func(l *Listing) { l.Tools[0].Title = "Read a file" }},
		{"name", func(l *Listing) { l.Tools[2].Name = "pong" }},
		{"input schema", func(l *Listing) { l.Tools[1].InputSchema = json.RawMessage(`{"type":"object"}`) }},
		{"output schema added", func(l *Listing) { l.Tools[2].OutputSchema = json.RawMessage(`{"type":"object"}`) }},
		{"annotation", func(l *Listing) {
			l.Tools[0].Annotations = json.RawMessage(`{"readOnlyHint":false,"openWorldHint":false}`)
		}},
		{"tool removed", func(l *Listing) { l.Tools = l.Tools[:2] }},
		{"tool duplicated", func(l *Listing) { l.Tools = append(l.Tools, l.Tools[2]) }},
		{"prompt arguments", func(l *Listing) { l.Prompts[0].Arguments = json.RawMessage(`[]`) }},
		{"prompt description", func(l *Listing) { l.Prompts[0].Description = "x" }},
		{"resource mime type", func(l *Listing) { l.Resources[0].MimeType = "text/plain" }},
		{"resource uri", func(l *Listing) { l.Resources[0].URI = "file:///README" }},
		{"template description", func(l *Listing) { l.Templates[0].Description = "" }},
		{"tool becomes prompt", func(l *Listing) {
			l.Prompts = append(l.Prompts, Prompt{Name: "ping"})
			l.Tools = l.Tools[:2]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := fixture()
			tt.mutate(&l)
			if got := Digest(l); got.Hash == base.Hash {
				t.Errorf("surface hash did not change")
			}
		})
	}
}

func TestDigestFields(t *testing.T) {
	s := Digest(fixture())
	ping := s.Tools[1]
	if ping.Name != "ping" || ping.DescriptionSHA256 != "" || ping.InputSchemaSHA256 != "" || ping.AnnotationsSHA256 != "" || ping.Annotations != nil {
		t.Errorf("absent fields must hash to empty strings: %+v", ping)
	}
	read := s.Tools[2]
	if read.Annotations["readOnlyHint"] != true || len(read.InputSchemaSHA256) != 64 {
		t.Errorf("read_file digest = %+v", read)
	}
	if s.Counts != (Counts{Tools: 3, Prompts: 1, Resources: 1, Templates: 1}) {
		t.Errorf("counts = %+v", s.Counts)
	}
	l := fixture()
	l.Tools[2].Annotations = json.RawMessage(`[true]`)
	if d := Digest(l); d.Tools[1].Annotations != nil || d.Tools[1].AnnotationsSHA256 == "" {
		t.Errorf("non-object annotations must be hashed but not shown: %+v", d.Tools[1])
	}
}
