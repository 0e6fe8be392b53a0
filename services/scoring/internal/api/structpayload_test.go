package api

import (
	"maps"
	"reflect"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

// The scoring path reads the gateway's structpb payload in place; it must judge every payload exactly
// as the validation of the same JSON decoded into a map does.
func TestStructPayloadChecksLikeAMap(t *testing.T) {
	valid := map[string]any{
		"external_claim_id": "CLM-1001", "service_date": "2026-10-01", "provider_id": 1234567.0, "payer_id": 60054.0,
		"cpt_code": "99214", "icd10_code": "E11.9", "billed_amount": 245.0, "place_of_service": "11", "network_status": "in_network",
	}
	with := func(kv ...any) map[string]any {
		m := maps.Clone(valid)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
				continue
			}
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		workflow claim.Workflow
		payload  map[string]any
	}{
		{"valid denial", "healthcare.denial", valid},
		{"valid prior auth", "healthcare.prior_auth", valid},
		{"place of service by name", "healthcare.denial", with("place_of_service", "office")},
		{"missing required field", "healthcare.denial", with("cpt_code", nil)},
		{"unknown fields", "healthcare.denial", with("patient_name", "x", "ssn", "y")},
		{"nested object and list", "healthcare.denial", with("modifiers", []any{"25", map[string]any{"a": 1.0}})},
		{"wrong types", "healthcare.reimbursement", with("billed_amount", "245", "provider_id", true)},
		{"empty payload", "healthcare.denial", map[string]any{}},
		{"unknown workflow", "healthcare.dental", valid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := structpb.NewStruct(tc.payload)
			if err != nil {
				t.Fatal(err)
			}
			gotClaim, gotErrs := claim.Check(tc.workflow, structPayload{s})
			wantClaim, wantErrs := claim.Check(tc.workflow, claim.Map(tc.payload))
			if !reflect.DeepEqual(gotClaim, wantClaim) || !reflect.DeepEqual(gotErrs, wantErrs) {
				t.Fatalf("structpb: %+v %v\nmap:     %+v %v", gotClaim, gotErrs, wantClaim, wantErrs)
			}
		})
	}
	// A request without a payload is an empty object, not a crash.
	if _, errs := claim.Check("healthcare.denial", structPayload{nil}); len(errs) == 0 {
		t.Fatal("a nil payload passed validation")
	}
}
