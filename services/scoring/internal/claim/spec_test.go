package claim

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

func TestSpecs(t *testing.T) {
	t.Parallel()
	specs := Specs()
	if len(specs) != len(Workflows) {
		t.Fatalf("Specs: got %d, want %d", len(specs), len(Workflows))
	}
	for i, w := range Workflows {
		s := specs[i]
		if s.Workflow != w || Lookup(w) != s {
			t.Errorf("Specs()[%d] is %s, want %s and the same spec as Lookup", i, s.Workflow, w)
		}
		if s.Title == "" || s.Description == "" || s.Example == nil || !json.Valid(s.Schema) {
			t.Errorf("%s: incomplete spec %+v", w, s)
		}
		if got, ok := ParseWorkflow(string(w)); !ok || got != w {
			t.Errorf("ParseWorkflow(%q): got %q, %v", w, got, ok)
		}
	}
	for _, s := range []string{"", "denial", "HEALTHCARE.DENIAL", " healthcare.denial", "healthcare.appeal"} {
		if _, ok := ParseWorkflow(s); ok {
			t.Errorf("ParseWorkflow(%q): got ok, want not a workflow", s)
		}
	}
	if Lookup("healthcare.appeal") != nil {
		t.Errorf("Lookup of an unknown workflow: got a spec, want nil")
	}
	specs[0] = nil
	if Specs()[0] == nil {
		t.Errorf("Specs returned the package's own slice")
	}
}

// TestSchemasAgree keeps the four schema files in step: they define the same properties alike, and
// differ only in which are required (a required property does not accept null, an optional one does).
func TestSchemasAgree(t *testing.T) {
	t.Parallel()
	type property map[string]any
	read := func(name string) (map[string]property, []string) {
		raw, err := schemaFiles.ReadFile("schemas/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Required             []string            `json:"required"`
			AdditionalProperties *bool               `json:"additionalProperties"`
			Properties           map[string]property `json:"properties"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.AdditionalProperties == nil || *doc.AdditionalProperties {
			t.Errorf("%s: additionalProperties must be false", name)
		}
		return doc.Properties, doc.Required
	}
	// withoutNull returns a property's type list without "null", and whether it had it.
	withoutNull := func(p property) (property, bool) {
		q := property{}
		for k, v := range p {
			q[k] = v
		}
		types, ok := p["type"].([]any)
		if !ok {
			return q, false
		}
		i := slices.Index(types, any("null"))
		if i < 0 {
			return q, false
		}
		rest := slices.Delete(slices.Clone(types), i, i+1)
		if len(rest) == 1 {
			q["type"] = rest[0]
		} else {
			q["type"] = rest
		}
		return q, true
	}
	base, _ := read("healthcare.denial.json")
	for _, name := range []string{"healthcare.denial.json", "healthcare.prior_auth.json", "healthcare.reimbursement.json", "appeal_claim.json"} {
		props, required := read(name)
		for _, f := range fieldNames {
			p, nullable := withoutNull(props[f])
			b, _ := withoutNull(base[f])
			if !reflect.DeepEqual(p, b) {
				t.Errorf("%s: property %s is %v, want %v as in healthcare.denial.json", name, f, p, b)
			}
			if nullable == slices.Contains(required, f) {
				t.Errorf("%s: property %s: nullable %v, want nullable exactly when optional", name, f, nullable)
			}
		}
	}
}

// TestParseSchemaRejects checks that a schema file fails at start when it is not valid JSON Schema,
// when its example fails, or when it states what the Go rules would not enforce.
func TestParseSchemaRejects(t *testing.T) {
	t.Parallel()
	raw, err := schemaFiles.ReadFile("schemas/healthcare.denial.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := parseSchema("healthcare.denial.json", raw, 1); err != nil {
		t.Fatalf("unedited schema: got %v, want no error", err)
	}
	prop := func(doc map[string]any, name string) map[string]any {
		return doc["properties"].(map[string]any)[name].(map[string]any)
	}
	tests := map[string]func(doc map[string]any){
		"keyword Go does not enforce": func(doc map[string]any) { prop(doc, "cpt_code")["pattern"] = "^[0-9]{5}$" },
		"type Go does not read":       func(doc map[string]any) { prop(doc, "billed_amount")["type"] = []any{"number", "string"} },
		"narrower type":               func(doc map[string]any) { prop(doc, "provider_id")["type"] = "integer" },
		"unknown fields allowed":      func(doc map[string]any) { doc["additionalProperties"] = true },
		"bound missing":               func(doc map[string]any) { delete(prop(doc, "units"), "maximum") },
		"bound on a code":             func(doc map[string]any) { prop(doc, "cpt_code")["minimum"] = 1 },
		"property missing":            func(doc map[string]any) { delete(doc["properties"].(map[string]any), "patient_id") },
		"required unknown field":      func(doc map[string]any) { doc["required"] = append(doc["required"].([]any), "cpt") },
		"invalid JSON Schema":         func(doc map[string]any) { prop(doc, "cpt_code")["maxLength"] = -1 },
		"example the schema rejects":  func(doc map[string]any) { doc["examples"].([]any)[0].(map[string]any)["units"] = 0 },
	}
	for name, edit := range tests {
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		edit(doc)
		edited, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := parseSchema("edited.json", edited, 1); err == nil {
			t.Errorf("%s: got no error, want the schema rejected", name)
		}
	}
}

// TestPublishedBounds checks that the published schema states the bounds Go enforces.
func TestPublishedBounds(t *testing.T) {
	t.Parallel()
	var doc struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(Lookup(Denial).Schema, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"provider_id": {"minimum", "maximum"}, "payer_id": {"minimum", "maximum"},
		"billed_amount": {"minimum", "maximum"}, "units": {"exclusiveMinimum", "maximum"},
	}
	for f, kws := range want {
		for _, kw := range kws {
			if _, ok := doc.Properties[f][kw]; !ok {
				t.Errorf("published schema: %s has no %s", f, kw)
			}
		}
	}
	got := workflowProfiles[0].bounds
	if b := got[fieldBilledAmount]; b != (bound{min: 0, max: 10_000_000}) {
		t.Errorf("billed_amount bound: got %+v", b)
	}
	if b := got[fieldUnits]; b != (bound{min: 0, max: 9999, exclusiveMin: true}) {
		t.Errorf("units bound: got %+v", b)
	}
	if b := got[fieldPayerID]; b != (bound{min: 1, max: 1<<53 - 1}) {
		t.Errorf("payer_id bound: got %+v", b)
	}
}

func TestPlaceOfServiceName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code, name string
		ok         bool
	}{
		{"11", "Office", true},
		{"02", "Telehealth Provided Other than in Patient's Home", true},
		{"10", "Telehealth Provided in Patient's Home", true},
		{"23", "Emergency Room - Hospital", true},
		{"27", "Outreach Site/Street", true},
		{"66", "Programs of All-Inclusive Care for the Elderly (PACE) Center", true},
		{"81", "Independent Laboratory", true},
		{"99", "Other Place of Service", true},
		{"00", "", false},
		{"28", "", false},
		{"59", "", false},
		{"98", "", false},
		{"1", "", false},
		{"011", "", false},
		{" 11", "", false},
		{"1a", "", false},
	}
	for _, tt := range tests {
		name, ok := PlaceOfServiceName(tt.code)
		if name != tt.name || ok != tt.ok {
			t.Errorf("PlaceOfServiceName(%q): got %q, %v; want %q, %v", tt.code, name, ok, tt.name, tt.ok)
		}
	}
	assigned := 0
	for _, n := range placesOfService {
		if n != "" {
			assigned++
		}
	}
	if assigned != 52 {
		t.Errorf("assigned place-of-service codes: got %d, want the 52 of the CMS code set", assigned)
	}
}
