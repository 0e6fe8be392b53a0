package claim

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Spec describes one workflow's payload for discovery (GET /v1/workflows and
// /v1/workflows/{workflow}/schema). Specs are shared: callers must not modify them.
type Spec struct {
	Workflow    Workflow
	Title       string
	Description string
	// Required and Optional list the payload fields in the order of the claim fields.
	Required []string
	Optional []string
	// Schema is the JSON Schema (draft 2020-12) of the payload as published. Validate enforces all of
	// it in Go, and more: code formats, dates, decimal places.
	Schema json.RawMessage
	// Example is a payload that validates, decoded the way encoding/json decodes a request body.
	Example map[string]any
}

// schemaFiles holds one payload schema per workflow plus the appeal claim's. Each file is the single
// source of its workflow's requiredness, nullability, string lengths, numeric bounds and example;
// the field types it states must be the ones the Go rules read (see wantTypes).
//
//go:embed schemas/*.json
var schemaFiles embed.FS

// serviceDateLead is how many days after today (UTC) a service date may fall. A claim is billed after
// the service, and one day covers the widest gap between a local calendar and UTC (UTC+14); a prior
// authorization is requested before the service, and payers issue authorizations valid for up to a
// year, so a year and a day.
var serviceDateLead = map[Workflow]int{Denial: 1, PriorAuth: 366, Reimbursement: 1}

var (
	specs            [3]*Spec
	workflowProfiles [3]*profile
	appealProfile    *profile
)

func init() {
	for _, w := range Workflows {
		spec, p, err := load(string(w)+".json", serviceDateLead[w])
		if err != nil {
			panic(err)
		}
		spec.Workflow = w
		i, _ := workflowIndex(w)
		specs[i], workflowProfiles[i] = spec, p
	}
	var err error
	if _, appealProfile, err = load("appeal_claim.json", 1); err != nil {
		panic(err)
	}
}

// load reads one embedded schema. The schemas are part of the binary, so an error is a programming
// error that the package's tests catch; init panics on it.
func load(name string, lead int) (*Spec, *profile, error) {
	raw, err := schemaFiles.ReadFile("schemas/" + name)
	if err != nil {
		return nil, nil, err
	}
	return parseSchema(name, raw, lead)
}

// parseSchema reads a schema file into the spec served to clients and the profile Validate enforces.
// It also compiles the schema with the JSON Schema library, which Validate does not run, so that a
// file that is not valid JSON Schema, or whose examples it rejects, fails at start.
func parseSchema(name string, raw []byte, lead int) (*Spec, *profile, error) {
	var doc schemaDoc
	dec := json.NewDecoder(bytes.NewReader(raw))
	// A keyword the Go rules do not read (pattern, enum, minLength) would be published as a rule and
	// not enforced, so it fails here until Go enforces it.
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, fmt.Errorf("claim: schema %s: %w", name, err)
	}
	p, err := doc.profile(lead)
	if err != nil {
		return nil, nil, fmt.Errorf("claim: schema %s: %w", name, err)
	}
	spec := &Spec{Title: doc.Title, Description: doc.Description, Schema: raw}
	for f, fname := range fieldNames {
		if p.required.has(field(f)) {
			spec.Required = append(spec.Required, fname)
		} else {
			spec.Optional = append(spec.Optional, fname)
		}
	}
	if len(doc.Examples) > 0 {
		spec.Example = doc.Examples[0]
	}
	schema, err := compileSchema(name, raw)
	if err != nil {
		return nil, nil, err
	}
	for i, example := range doc.Examples {
		if err := schema.Validate(example); err != nil {
			return nil, nil, fmt.Errorf("claim: schema %s: example %d: %w", name, i, err)
		}
	}
	return spec, p, nil
}

// compileSchema compiles an embedded schema file as published, numeric bounds included.
func compileSchema(name string, raw []byte) (*jsonschema.Schema, error) {
	// The library decodes numbers as json.Number so that bounds such as 2^53-1 compare exactly.
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("claim: schema %s: %w", name, err)
	}
	url := "mem:///claim/schemas/" + name
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("claim: schema %s: %w", name, err)
	}
	schema, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("claim: schema %s: %w", name, err)
	}
	return schema, nil
}

// schemaDoc is a payload schema file: every keyword the files use, and no other (see parseSchema).
type schemaDoc struct {
	Dialect              string                    `json:"$schema"`
	Title                string                    `json:"title"`
	Description          string                    `json:"description"`
	Type                 string                    `json:"type"`
	Required             []string                  `json:"required"`
	AdditionalProperties *bool                     `json:"additionalProperties"`
	Properties           map[string]schemaProperty `json:"properties"`
	Examples             []map[string]any          `json:"examples"`
}

type schemaProperty struct {
	Type        schemaTypes `json:"type"`
	Description string      `json:"description"`
	// Format is an annotation in draft 2020-12, which the library does not assert; Go checks dates
	// more strictly than "date" would.
	Format           string   `json:"format"`
	MaxLength        *int     `json:"maxLength"`
	Minimum          *float64 `json:"minimum"`
	ExclusiveMinimum *float64 `json:"exclusiveMinimum"`
	Maximum          *float64 `json:"maximum"`
}

// schemaTypes is a property's "type", which the files write as a string or an array of strings.
type schemaTypes []string

func (t *schemaTypes) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*t = schemaTypes{one}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(t))
}

// wantTypes is the JSON Schema type, null aside, of the values the Go rules read for f.
func wantTypes(f field) []string {
	switch f {
	case fieldProviderID, fieldPayerID:
		return []string{"integer", "string"}
	case fieldBilledAmount, fieldUnits:
		return []string{"number"}
	}
	return []string{"string"}
}

// profile reads what Validate enforces from the schema, checking that the schema states nothing
// the Go rules would not enforce.
func (doc *schemaDoc) profile(lead int) (*profile, error) {
	if doc.Type != "object" || doc.AdditionalProperties == nil || *doc.AdditionalProperties {
		return nil, errors.New(`want "type": "object" and "additionalProperties": false, as Validate rejects unknown fields`)
	}
	if len(doc.Properties) != int(numFields) {
		return nil, fmt.Errorf("%d properties, want the %d claim fields", len(doc.Properties), numFields)
	}
	p := &profile{serviceDateLead: lead}
	for _, r := range doc.Required {
		f, ok := fieldByName(r)
		if !ok {
			return nil, fmt.Errorf("required field %q is not a claim field", r)
		}
		p.required.add(f)
	}
	for f, name := range fieldNames {
		prop, ok := doc.Properties[name]
		if !ok {
			return nil, fmt.Errorf("no property %q", name)
		}
		types := slices.Sorted(slices.Values(prop.Type))
		if i, found := slices.BinarySearch(types, "null"); found {
			p.nullable.add(field(f))
			types = slices.Delete(types, i, i+1)
		}
		if want := wantTypes(field(f)); !slices.Equal(types, want) {
			return nil, fmt.Errorf("property %q: type %v, want %v with or without null", name, prop.Type, want)
		}
		p.maxLength[f] = math.MaxInt
		if prop.MaxLength != nil {
			p.maxLength[f] = *prop.MaxLength
		}
		b, err := prop.bound(field(f))
		if err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		p.bounds[f] = b
	}
	return p, nil
}

// bound reads a property's numeric bounds. Messages word a range with both ends, so each numeric
// field needs exactly one lower bound and an upper one, and the other fields none.
func (prop *schemaProperty) bound(f field) (bound, error) {
	numeric := f == fieldProviderID || f == fieldPayerID || f == fieldBilledAmount || f == fieldUnits
	lower := prop.Minimum
	if prop.ExclusiveMinimum != nil {
		lower = prop.ExclusiveMinimum
	}
	bounded := (prop.Minimum == nil) != (prop.ExclusiveMinimum == nil) && prop.Maximum != nil
	stated := prop.Minimum != nil || prop.ExclusiveMinimum != nil || prop.Maximum != nil
	if (numeric && !bounded) || (!numeric && stated) {
		return bound{}, errors.New("want one lower and one upper bound on exactly provider_id, payer_id, billed_amount and units")
	}
	if !numeric {
		return bound{}, nil
	}
	return bound{min: *lower, max: *prop.Maximum, exclusiveMin: prop.ExclusiveMinimum != nil}, nil
}

// ParseWorkflow returns the workflow with the id s ("healthcare.denial"). Only exact ids match, so
// logs, metrics and feedback records carry one spelling per workflow.
func ParseWorkflow(s string) (Workflow, bool) {
	if _, ok := workflowIndex(Workflow(s)); !ok {
		return "", false
	}
	return Workflow(s), true
}

// Lookup returns the spec of w, or nil when w is not a workflow.
func Lookup(w Workflow) *Spec {
	i, ok := workflowIndex(w)
	if !ok {
		return nil
	}
	return specs[i]
}

// Specs returns every workflow's spec in the order of Workflows.
func Specs() []*Spec {
	return slices.Clone(specs[:])
}

func workflowIndex(w Workflow) (int, bool) {
	switch w {
	case Denial:
		return 0, true
	case PriorAuth:
		return 1, true
	case Reimbursement:
		return 2, true
	}
	return 0, false
}
