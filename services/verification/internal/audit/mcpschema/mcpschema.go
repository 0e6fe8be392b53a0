// Package mcpschema validates MCP messages against the published JSON schemas of the protocol
// revisions an audit probes. The schemas are embedded (see schemas/README.md for their source and
// licence) so that validation needs no network and cannot change under a running service.
package mcpschema

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The protocol revisions whose schemas are embedded.
const (
	V20251125 = "2025-11-25"
	V20260728 = "2026-07-28"
)

//go:embed schemas/2025-11-25.schema.json schemas/2026-07-28.schema.json
var files embed.FS

// ErrUnknownDefinition is returned for a version or $defs name the embedded schemas lack; it is
// distinct from a validation failure so that callers never blame a server for a gap in the set.
var ErrUnknownDefinition = errors.New("mcpschema: unknown version or definition")

// Versions lists the embedded revisions, oldest first.
func Versions() []string { return []string{V20251125, V20260728} }

// Set is the compiled schemas of every embedded revision. It is immutable once loaded, so one Set
// serves any number of goroutines.
type Set struct {
	defs map[string]map[string]*jsonschema.Schema // version -> $defs name -> schema
}

// Load compiles every definition of every embedded revision. Compiling all of them up front
// (about 70 ms for the ~300 definitions) keeps Validate lock-free and surfaces a broken schema
// file at start rather than in the middle of an audit.
func Load() (*Set, error) {
	s := &Set{defs: map[string]map[string]*jsonschema.Schema{}}
	for _, v := range Versions() {
		defs, err := compile(v)
		if err != nil {
			return nil, fmt.Errorf("mcpschema: %s: %w", v, err)
		}
		s.defs[v] = defs
	}
	return s, nil
}

func compile(version string) (map[string]*jsonschema.Schema, error) {
	raw, err := files.ReadFile("schemas/" + version + ".schema.json")
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	var top struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, err
	}
	// The published files carry no $id; this made-up one (the .invalid TLD never resolves) only
	// anchors the $refs, and no loader is configured, so nothing is ever fetched.
	url := "https://mcp-schema.invalid/" + version + "/schema.json"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	defs := make(map[string]*jsonschema.Schema, len(top.Defs))
	for name := range top.Defs {
		sch, err := c.Compile(url + "#/$defs/" + name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defs[name] = sch
	}
	return defs, nil
}

// Has reports whether version's schema defines definition.
func (s *Set) Has(version, definition string) bool {
	_, ok := s.defs[version][definition]
	return ok
}

// Definitions lists version's $defs names, sorted; nil for an unknown version.
func (s *Set) Definitions(version string) []string {
	defs, ok := s.defs[version]
	if !ok {
		return nil
	}
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Validate checks that message is a JSON instance of definition (a $defs name such as
// "InitializeResult") of version. It returns nil, an error wrapping ErrUnknownDefinition, or an
// *InvalidError that reads well in a report.
func (s *Set) Validate(version, definition string, message []byte) error {
	sch, ok := s.defs[version][definition]
	if !ok {
		return fmt.Errorf("%w: %q in %q", ErrUnknownDefinition, definition, version)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(message))
	if err != nil {
		return &InvalidError{Definition: definition, Causes: []string{"not JSON: " + err.Error()}}
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &InvalidError{Definition: definition, Causes: []string{err.Error()}}
	}
	return invalid(definition, ve)
}
