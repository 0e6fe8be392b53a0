package claim

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// fuzzSeeds are payloads that exercise normalisation and each kind of error.
var fuzzSeeds = []string{
	`{}`,
	`{"external_claim_id":" c1 ","service_date":"2024-02-29","provider_id":"0001","payer_id":"7","cpt_code":"0001u","icd10_code":"t360x1a","billed_amount":0,"units":0.125,"place_of_service":" 02 ","network_status":"OUT OF NETWORK","data_source":" X ","patient_id":" p "}`,
	`{"external_claim_id":"c","service_date":"2025-02-30","provider_id":1e20,"payer_id":-1,"cpt_code":"99213-25","icd10_code":"E11.","billed_amount":1.005,"place_of_service":"office"}`,
	`{"external_claim_id":null,"provider_id":true,"payer_id":[1],"cpt_code":{"a":1},"billed_amount":"12","cpt":"99213"}`,
	`{"external_claim_id":"\u0000","patient_id":"\u0085","data_source":"\ud800"}`,
}

// FuzzValidate checks that Validate never panics on a decoded JSON object and that normalisation is a
// fixed point: a payload that validates re-validates to the same claim and payload, both as it is and
// after a trip through JSON (what a client echoing the normalised payload sends).
func FuzzValidate(f *testing.F) {
	for _, spec := range Specs() {
		body, _ := json.Marshal(spec.Example)
		f.Add(string(spec.Workflow), string(body))
	}
	for _, s := range fuzzSeeds {
		for _, w := range Workflows {
			f.Add(string(w), s)
		}
	}
	f.Fuzz(func(t *testing.T, workflow, body string) {
		var p map[string]any
		if json.Unmarshal([]byte(body), &p) != nil {
			return
		}
		w := Workflow(workflow)
		c, norm, errs := Validate(w, p)
		if cc, cerrs := Check(w, Map(p)); !reflect.DeepEqual(cc, c) || !reflect.DeepEqual(cerrs, errs) {
			t.Fatalf("Check disagrees with Validate: %+v %v, want %+v %v", cc, cerrs, c, errs)
		}
		for _, e := range errs {
			if (e.Field == "" && e.Rule != RuleUnknownField) || e.Rule == "" || !strings.HasPrefix(e.Message, e.Field) {
				t.Fatalf("malformed error %#v", e)
			}
		}
		if len(errs) > 0 {
			return
		}
		c2, norm2, errs2 := Validate(w, norm)
		if len(errs2) > 0 || c2 != c || !reflect.DeepEqual(norm2, norm) {
			t.Fatalf("re-validating %v: got %+v %v %v, want %+v %v", norm, c2, norm2, errs2, c, norm)
		}
		echoed, err := json.Marshal(norm)
		if err != nil {
			t.Fatal(err)
		}
		var p3 map[string]any
		if err := json.Unmarshal(echoed, &p3); err != nil {
			t.Fatal(err)
		}
		if c3, _, errs3 := Validate(w, p3); len(errs3) > 0 || c3 != c {
			t.Fatalf("re-validating %s: got %+v %v, want %+v", echoed, c3, errs3, c)
		}
	})
}
