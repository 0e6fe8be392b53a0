package claim

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
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
	// it, the numeric bounds in Go (see takeBounds), and more: code formats, dates, decimal places.
	Schema json.RawMessage
	// Example is a payload that validates, decoded the way encoding/json decodes a request body.
	Example map[string]any
}

// schemaFiles holds one payload schema per workflow plus the appeal claim's. Each file is the single
// source of its workflow's requiredness, field types, numeric bounds and example.
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

// load compiles one embedded schema. The schemas are part of the binary, so an error is a programming
// error that the package's tests catch; init panics on it.
func load(name string, lead int) (*Spec, *profile, error) {
	raw, err := schemaFiles.ReadFile("schemas/" + name)
	if err != nil {
		return nil, nil, err
	}
	var doc struct {
		Title       string                     `json:"title"`
		Description string                     `json:"description"`
		Required    []string                   `json:"required"`
		Properties  map[string]json.RawMessage `json:"properties"`
		Examples    []map[string]any           `json:"examples"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, fmt.Errorf("claim: schema %s: %w", name, err)
	}
	if len(doc.Properties) != int(numFields) {
		return nil, nil, fmt.Errorf("claim: schema %s: %d properties, want the %d claim fields", name, len(doc.Properties), numFields)
	}
	p := &profile{serviceDateLead: lead}
	for _, r := range doc.Required {
		f, ok := fieldByName(r)
		if !ok {
			return nil, nil, fmt.Errorf("claim: schema %s: required field %q is not a claim field", name, r)
		}
		p.required.add(f)
	}
	spec := &Spec{Title: doc.Title, Description: doc.Description, Schema: raw}
	for f, fname := range fieldNames {
		if _, ok := doc.Properties[fname]; !ok {
			return nil, nil, fmt.Errorf("claim: schema %s: no property %q", name, fname)
		}
		if p.required.has(field(f)) {
			spec.Required = append(spec.Required, fname)
		} else {
			spec.Optional = append(spec.Optional, fname)
		}
	}
	if len(doc.Examples) > 0 {
		spec.Example = doc.Examples[0]
	}

	// The library decodes numbers as json.Number so that bounds such as 2^53-1 compare exactly.
	schemaDoc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("claim: schema %s: %w", name, err)
	}
	if err := p.takeBounds(schemaDoc); err != nil {
		return nil, nil, fmt.Errorf("claim: schema %s: %w", name, err)
	}
	url := "mem:///claim/schemas/" + name
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(url, schemaDoc); err != nil {
		return nil, nil, fmt.Errorf("claim: schema %s: %w", name, err)
	}
	if p.schema, err = c.Compile(url); err != nil {
		return nil, nil, fmt.Errorf("claim: schema %s: %w", name, err)
	}
	return spec, p, nil
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

// takeBounds moves the numeric bounds (minimum or exclusiveMinimum, and maximum) of the schema's
// properties out of the copy that gets compiled and into the profile, where Go enforces them. The
// schema library checks a bound through fmt and math/big: on the denial example that was 45 of the
// schema pass's 103 allocations and half its 7 µs (BenchmarkValidate, see VALIDATION.md). The
// published schema keeps the bounds, so they are still stated once, in the schema file.
func (p *profile) takeBounds(schemaDoc any) error {
	root, _ := schemaDoc.(map[string]any)
	props, _ := root["properties"].(map[string]any)
	for name, prop := range props {
		prop, _ := prop.(map[string]any)
		f, ok := fieldByName(name)
		if !ok || prop == nil {
			return fmt.Errorf("property %q is not a claim field", name)
		}
		var b bound
		var set [3]bool
		for i, kw := range [...]string{"minimum", "exclusiveMinimum", "maximum"} {
			n, ok := prop[kw].(json.Number)
			if !ok {
				continue
			}
			x, err := n.Float64()
			if err != nil {
				return fmt.Errorf("property %q: %s: %w", name, kw, err)
			}
			set[i] = true
			if i == 2 {
				b.max = x
			} else {
				b.min, b.exclusiveMin = x, i == 1
			}
			delete(prop, kw)
		}
		// Messages word a range with both ends, so each numeric field needs exactly one lower bound and an
		// upper one, and the other fields none.
		numeric := f == fieldProviderID || f == fieldPayerID || f == fieldBilledAmount || f == fieldUnits
		bounded := set[0] != set[1] && set[2]
		if (numeric && !bounded) || (!numeric && set != [3]bool{}) {
			return fmt.Errorf("property %q: want one lower and one upper bound on exactly provider_id, payer_id, billed_amount and units", name)
		}
		p.bounds[f] = b
	}
	return nil
}
