package gate

import (
	"encoding/json"
	"testing"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
)

// FuzzDiff feeds Diff tool listings a target controls (schemas and annotations are its JSON): Diff
// never panics, a summary against itself has no changes, and every change has a known kind and risk.
func FuzzDiff(f *testing.F) {
	f.Add("t", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"readOnlyHint":true}`, `{"type":"object"}`, `{"destructiveHint":false}`)
	f.Add("t", `{"type":"object","properties":{"a":{"type":"string","maxLength":3}},"required":["a"]}`, ``, `{"type":["object","null"],"additionalProperties":true}`, `null`)
	f.Add("", `[]`, `"x"`, `{"properties":{"a":{"enum":[1,2]}}}`, `{"openWorldHint":1}`)
	f.Fuzz(func(t *testing.T, name, schemaA, annA, schemaB, annB string) {
		a := Summary{Listed: true, Tools: []surface.Tool{{Name: name, Description: "d", InputSchema: json.RawMessage(schemaA), Annotations: json.RawMessage(annA)}}}
		b := Summary{Listed: true, Tools: []surface.Tool{{Name: name, Description: "e", InputSchema: json.RawMessage(schemaB), Annotations: json.RawMessage(annB)}}}
		if same := Diff(a, a); len(same) != 0 {
			t.Fatalf("a summary against itself: %v", same)
		}
		for _, c := range Diff(a, b) {
			known := false
			for _, k := range reliability.ChangeKinds {
				known = known || k == c.Kind
			}
			if !known || !c.Risk.AtLeast(reliability.RiskLow) || c.Risk == "" {
				t.Fatalf("change %+v", c)
			}
		}
		_ = Evaluate(reliability.DefaultPolicy(), Diff(a, b))
	})
}
