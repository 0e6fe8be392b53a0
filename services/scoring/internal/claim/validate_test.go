package claim

import (
	"bytes"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// payload returns a copy of w's example decoded as a request body would be, with edits applied: a nil
// value deletes the field, null{} sets it to JSON null.
func payload(t testing.TB, w Workflow, edits map[string]any) map[string]any {
	t.Helper()
	p := maps.Clone(Lookup(w).Example)
	for k, v := range edits {
		switch v.(type) {
		case nil:
			delete(p, k)
		case null:
			p[k] = nil
		default:
			p[k] = v
		}
	}
	return p
}

// null stands for a JSON null in edits, where nil means "delete".
type null struct{}

func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return m
}

func day(offset int) string {
	return time.Now().UTC().AddDate(0, 0, offset).Format(time.DateOnly)
}

// ruleTests edit a workflow's example to pass or break one rule. FuzzSchemaAgreement seeds from them.
var ruleTests = []struct {
	name     string
	workflow Workflow
	edits    map[string]any
	field    string // "" when the payload must validate
	rule     string
}{
	// required
	{"missing required", Denial, map[string]any{"cpt_code": nil}, "cpt_code", RuleRequired},
	{"null required", Denial, map[string]any{"icd10_code": null{}}, "icd10_code", RuleRequired},
	{"blank required", Denial, map[string]any{"external_claim_id": "   "}, "external_claim_id", RuleRequired},
	{"blank required id", Denial, map[string]any{"payer_id": " "}, "payer_id", RuleRequired},
	{"billed_amount optional for prior auth", PriorAuth, map[string]any{"billed_amount": nil}, "", ""},
	{"billed_amount required for reimbursement", Reimbursement, map[string]any{"billed_amount": nil}, "billed_amount", RuleRequired},
	{"service_date optional for reimbursement", Reimbursement, map[string]any{"service_date": nil}, "", ""},
	{"null optional", Denial, map[string]any{"place_of_service": null{}, "units": null{}}, "", ""},
	{"blank optional", Denial, map[string]any{"network_status": " ", "data_source": ""}, "", ""},

	// type, unknown fields, lengths
	{"string amount", Denial, map[string]any{"billed_amount": "185.00"}, "billed_amount", RuleType},
	{"numeric code", Denial, map[string]any{"cpt_code": 99214.0}, "cpt_code", RuleType},
	{"numeric place of service", Denial, map[string]any{"place_of_service": 11.0}, "place_of_service", RuleType},
	{"fractional id", Denial, map[string]any{"provider_id": 10.5}, "provider_id", RuleType},
	{"boolean id", Denial, map[string]any{"payer_id": true}, "payer_id", RuleType},
	{"numeric claim id", Denial, map[string]any{"external_claim_id": 123.0}, "external_claim_id", RuleType},
	{"unknown field", Denial, map[string]any{"cpt": "99214"}, "cpt", RuleUnknownField},
	{"too long", Denial, map[string]any{"external_claim_id": strings.Repeat("x", 65)}, "external_claim_id", RuleMaxLength},
	{"control character", Denial, map[string]any{"external_claim_id": "CLM\x001"}, "external_claim_id", RulePrintable},
	{"invalid UTF-8", Denial, map[string]any{"patient_id": "p\xff1"}, "patient_id", RulePrintable},

	// identifiers
	{"numeric string id", Denial, map[string]any{"provider_id": "1043"}, "", ""},
	{"zero id", Denial, map[string]any{"provider_id": 0.0}, "provider_id", RulePositiveInteger},
	{"negative id", Denial, map[string]any{"payer_id": -4.0}, "payer_id", RulePositiveInteger},
	{"zero string id", Denial, map[string]any{"payer_id": "000"}, "payer_id", RulePositiveInteger},
	{"id above 2^53-1", Denial, map[string]any{"payer_id": 9007199254740992.0}, "payer_id", RulePositiveInteger},
	{"largest id", Denial, map[string]any{"payer_id": "9007199254740991"}, "", ""},
	{"string id above 2^53-1", Denial, map[string]any{"payer_id": "9007199254740992"}, "payer_id", RulePositiveInteger},
	{"non-digit string id", Denial, map[string]any{"provider_id": "P-1043"}, "provider_id", RulePositiveInteger},
	{"signed string id", Denial, map[string]any{"provider_id": "+1043"}, "provider_id", RulePositiveInteger},

	// procedure codes
	{"cpt category I", Denial, map[string]any{"cpt_code": "99213"}, "", ""},
	{"cpt category II", Denial, map[string]any{"cpt_code": "1036F"}, "", ""},
	{"cpt category III", Denial, map[string]any{"cpt_code": "0042T"}, "", ""},
	{"cpt PLA", Denial, map[string]any{"cpt_code": "0001U"}, "", ""},
	{"cpt vaccine administration", Denial, map[string]any{"cpt_code": "0001A"}, "", ""},
	{"hcpcs level II", Denial, map[string]any{"cpt_code": "G0439"}, "", ""},
	{"hcpcs lower case", Denial, map[string]any{"cpt_code": "j3490"}, "", ""},
	{"cpt 4 digits", Denial, map[string]any{"cpt_code": "9921"}, "cpt_code", RuleCPTFormat},
	{"cpt 6 digits", Denial, map[string]any{"cpt_code": "992134"}, "cpt_code", RuleCPTFormat},
	{"hcpcs letter W", Denial, map[string]any{"cpt_code": "W1234"}, "cpt_code", RuleCPTFormat},
	{"cpt suffix X", Denial, map[string]any{"cpt_code": "0042X"}, "cpt_code", RuleCPTFormat},
	{"cpt with modifier", Denial, map[string]any{"cpt_code": "99213-25"}, "cpt_code", RuleCPTFormat},

	// diagnosis codes
	{"icd10 dotted", Denial, map[string]any{"icd10_code": "S72.001A"}, "", ""},
	{"icd10 without dot", Denial, map[string]any{"icd10_code": "S72001A"}, "", ""},
	{"icd10 category only", Denial, map[string]any{"icd10_code": "I10"}, "", ""},
	{"icd10 letter third", Denial, map[string]any{"icd10_code": "C4A.9"}, "", ""},
	{"icd10 U code", Denial, map[string]any{"icd10_code": "U07.1"}, "", ""},
	{"icd10 placeholder X", Denial, map[string]any{"icd10_code": "T36.0X1A"}, "", ""},
	{"icd10 too short", Denial, map[string]any{"icd10_code": "E1"}, "icd10_code", RuleICD10Format},
	{"icd10 digit first", Denial, map[string]any{"icd10_code": "111.9"}, "icd10_code", RuleICD10Format},
	{"icd10 letter second", Denial, map[string]any{"icd10_code": "EE1.9"}, "icd10_code", RuleICD10Format},
	{"icd10 trailing dot", Denial, map[string]any{"icd10_code": "E11."}, "icd10_code", RuleICD10Format},
	{"icd10 dot misplaced", Denial, map[string]any{"icd10_code": "E1.19"}, "icd10_code", RuleICD10Format},
	{"icd10 five after dot", Denial, map[string]any{"icd10_code": "S72.001AB"}, "icd10_code", RuleICD10Format},
	{"icd9 code", Denial, map[string]any{"icd10_code": "250.00"}, "icd10_code", RuleICD10Format},

	// dates
	{"date not padded", Denial, map[string]any{"service_date": "2025-3-14"}, "service_date", RuleDateFormat},
	{"date US order", Denial, map[string]any{"service_date": "03/14/2025"}, "service_date", RuleDateFormat},
	{"date with time", Denial, map[string]any{"service_date": "2025-03-14T10:00:00Z"}, "service_date", RuleDateFormat},
	{"not a calendar date", Denial, map[string]any{"service_date": "2025-02-29"}, "service_date", RuleDateFormat},
	{"leap day", Denial, map[string]any{"service_date": "2024-02-29"}, "", ""},
	{"first ICD-10 day", Denial, map[string]any{"service_date": "2015-10-01"}, "", ""},
	{"ICD-9 era", Denial, map[string]any{"service_date": "2015-09-30"}, "service_date", RuleDateRange},
	{"denial tomorrow", Denial, map[string]any{"service_date": day(1)}, "", ""},
	{"denial in two days", Denial, map[string]any{"service_date": day(2)}, "service_date", RuleDateRange},
	{"reimbursement in two days", Reimbursement, map[string]any{"service_date": day(2)}, "service_date", RuleDateRange},
	{"prior auth in 300 days", PriorAuth, map[string]any{"service_date": day(300)}, "", ""},
	{"prior auth in 400 days", PriorAuth, map[string]any{"service_date": day(400)}, "service_date", RuleDateRange},

	// amounts and units
	{"zero amount", Denial, map[string]any{"billed_amount": 0.0}, "", ""},
	{"cents", Denial, map[string]any{"billed_amount": 150.07}, "", ""},
	{"largest amount", Denial, map[string]any{"billed_amount": 10000000.0}, "", ""},
	{"negative amount", Denial, map[string]any{"billed_amount": -0.01}, "billed_amount", RuleAmountRange},
	{"amount above cap", Denial, map[string]any{"billed_amount": 10000000.01}, "billed_amount", RuleAmountRange},
	{"fraction of a cent", Denial, map[string]any{"billed_amount": 1.005}, "billed_amount", RuleAmountPrecision},
	{"fractional units", Reimbursement, map[string]any{"units": 0.125}, "", ""},
	{"largest units", Reimbursement, map[string]any{"units": 9999.0}, "", ""},
	{"zero units", Reimbursement, map[string]any{"units": 0.0}, "units", RuleUnitsRange},
	{"negative units", Reimbursement, map[string]any{"units": -1.0}, "units", RuleUnitsRange},
	{"units above cap", Reimbursement, map[string]any{"units": 10000.0}, "units", RuleUnitsRange},
	{"units 4 decimals", Reimbursement, map[string]any{"units": 1.0005}, "units", RuleUnitsPrecision},

	// place of service, network status
	{"place of service word", Denial, map[string]any{"place_of_service": "office"}, "place_of_service", RulePlaceOfService},
	{"place of service one digit", Denial, map[string]any{"place_of_service": "2"}, "place_of_service", RulePlaceOfService},
	{"place of service unassigned", Denial, map[string]any{"place_of_service": "28"}, "place_of_service", RulePlaceOfService},
	{"place of service 00", Denial, map[string]any{"place_of_service": "00"}, "place_of_service", RulePlaceOfService},
	{"telehealth in home", Denial, map[string]any{"place_of_service": "10"}, "", ""},
	{"other place", Denial, map[string]any{"place_of_service": "99"}, "", ""},
	{"network status words", Denial, map[string]any{"network_status": "Out-Of-Network"}, "", ""},
	{"network status unknown value", Denial, map[string]any{"network_status": "preferred"}, "network_status", RuleNetworkStatus},
}

func TestValidateRules(t *testing.T) {
	t.Parallel()
	for _, tt := range ruleTests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkRule(t, tt.workflow, payload(t, tt.workflow, tt.edits), tt.field, tt.rule)
		})
	}
}

func checkRule(t *testing.T, w Workflow, p map[string]any, field, rule string) {
	t.Helper()
	c, _, errs := Validate(w, p)
	if cc, cerrs := Check(w, Map(p)); !reflect.DeepEqual(cc, c) || !reflect.DeepEqual(cerrs, errs) {
		t.Fatalf("Check disagrees with Validate: %+v %v, want %+v %v", cc, cerrs, c, errs)
	}
	if field == "" {
		if len(errs) > 0 {
			t.Fatalf("Validate: got errors %v, want none", errs)
		}
		if c.ExternalClaimID == "" {
			t.Errorf("Validate: got an empty claim for a valid payload")
		}
		return
	}
	if len(errs) != 1 || errs[0].Field != field || errs[0].Rule != rule {
		t.Fatalf("Validate: got %#v, want one error with field %s and rule %s", errs, field, rule)
	}
	if !strings.HasPrefix(errs[0].Message, field+" ") {
		t.Errorf("message %q does not begin with the field %s", errs[0].Message, field)
	}
	if c != (Claim{}) {
		t.Errorf("claim: got %+v, want the zero value when there are errors", c)
	}
}

func TestPlaceOfServiceWord(t *testing.T) {
	t.Parallel()
	_, _, errs := Validate(Denial, payload(t, Denial, map[string]any{"place_of_service": "office"}))
	want := Errors{{
		Field:   "place_of_service",
		Rule:    "place_of_service_code",
		Message: `place_of_service must be a 2-digit CMS place-of-service code (got "office")`,
	}}
	if !reflect.DeepEqual(errs, want) {
		t.Fatalf("got %#v, want %#v", errs, want)
	}
	if got := errs.Error(); got != want[0].Message {
		t.Errorf("Error(): got %q, want %q", got, want[0].Message)
	}
}

func TestExamplesValidate(t *testing.T) {
	t.Parallel()
	for _, spec := range Specs() {
		// Through JSON, as the schema endpoint serves the example and a client sends it back.
		body, err := json.Marshal(spec.Example)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, errs := Validate(spec.Workflow, decode(t, string(body))); len(errs) > 0 {
			t.Errorf("%s example: got errors %v, want none", spec.Workflow, errs)
		}
	}
}

func TestNormalisation(t *testing.T) {
	t.Parallel()
	in := decode(t, `{
		"external_claim_id": "  CLM-7 ", "service_date": " 2025-03-14 ", "provider_id": " 0001043 ",
		"payer_id": 7001, "cpt_code": " g0439 ", "icd10_code": "s72001a", "billed_amount": 185,
		"place_of_service": " 11", "network_status": "In Network", "data_source": " CMS_Export ",
		"patient_id": " tok-9 "}`)
	c, norm, errs := Validate(Denial, in)
	if len(errs) > 0 {
		t.Fatalf("Validate: got errors %v", errs)
	}
	wantNorm := map[string]any{
		"external_claim_id": "CLM-7", "service_date": "2025-03-14", "provider_id": int64(1043),
		"payer_id": int64(7001), "cpt_code": "G0439", "icd10_code": "S72.001A", "billed_amount": 185.0,
		"units": 1.0, "place_of_service": "11", "network_status": "in_network", "data_source": "cms_export",
		"patient_id": "tok-9",
	}
	if !reflect.DeepEqual(norm, wantNorm) {
		t.Errorf("normalised payload:\n got %#v\nwant %#v", norm, wantNorm)
	}
	wantClaim := Claim{
		ExternalClaimID: "CLM-7", ServiceDate: time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC), ProviderID: 1043,
		PayerID: 7001, CPTCode: "G0439", ICD10Code: "S72.001A", BilledAmount: 185, Units: 1,
		PlaceOfService: "11", NetworkStatus: "in_network", DataSource: "cms_export", PatientID: "tok-9",
	}
	if c != wantClaim {
		t.Errorf("claim:\n got %+v\nwant %+v", c, wantClaim)
	}

	// The normalised payload is a fixed point.
	c2, norm2, errs := Validate(Denial, norm)
	if len(errs) > 0 || c2 != c || !reflect.DeepEqual(norm2, norm) {
		t.Errorf("re-validating the normalised payload: got %+v, %#v, %v; want the same claim and payload", c2, norm2, errs)
	}
}

func TestNormalisedPayloadKeepsValidFieldsOnError(t *testing.T) {
	t.Parallel()
	_, norm, errs := Validate(Denial, payload(t, Denial, map[string]any{"cpt_code": "bad", "network_status": "maybe", "units": 0.0}))
	if len(errs) != 3 {
		t.Fatalf("got %v, want 3 errors", errs)
	}
	for _, f := range []string{"cpt_code", "network_status", "units"} {
		if _, ok := norm[f]; ok {
			t.Errorf("normalised payload holds the invalid field %s (and no default for it)", f)
		}
	}
	if norm["icd10_code"] != "E11.9" {
		t.Errorf("normalised icd10_code: got %v, want E11.9", norm["icd10_code"])
	}
}

func TestUseNumberValidatesAlike(t *testing.T) {
	t.Parallel()
	for _, spec := range Specs() {
		body, _ := json.Marshal(spec.Example)
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var p map[string]any
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		c1, n1, errs1 := Validate(spec.Workflow, decode(t, string(body)))
		c2, n2, errs2 := Validate(spec.Workflow, p)
		if c1 != c2 || !reflect.DeepEqual(n1, n2) || len(errs1)+len(errs2) > 0 {
			t.Errorf("%s: float64 decoding gave %+v %v %v; UseNumber gave %+v %v %v", spec.Workflow, c1, n1, errs1, c2, n2, errs2)
		}
	}
	p := payload(t, Denial, map[string]any{"billed_amount": json.Number("1.005"), "units": json.Number("2")})
	if _, _, errs := Validate(Denial, p); len(errs) != 1 || errs[0].Rule != RuleAmountPrecision {
		t.Errorf("json.Number 1.005: got %v, want one %s error", errs, RuleAmountPrecision)
	}
}

func TestRequiredness(t *testing.T) {
	t.Parallel()
	want := map[Workflow][]string{
		Denial:        {"external_claim_id", "service_date", "provider_id", "payer_id", "cpt_code", "icd10_code", "billed_amount"},
		PriorAuth:     {"external_claim_id", "service_date", "provider_id", "payer_id", "cpt_code", "icd10_code"},
		Reimbursement: {"external_claim_id", "provider_id", "payer_id", "cpt_code", "icd10_code", "billed_amount"},
	}
	for w, required := range want {
		spec := Lookup(w)
		if !reflect.DeepEqual(spec.Required, required) {
			t.Errorf("%s required: got %v, want %v", w, spec.Required, required)
		}
		if len(spec.Required)+len(spec.Optional) != int(numFields) {
			t.Errorf("%s: %d required + %d optional fields, want %d", w, len(spec.Required), len(spec.Optional), numFields)
		}
		_, _, errs := Validate(w, map[string]any{})
		var got []string
		for _, e := range errs {
			if e.Rule != RuleRequired {
				t.Errorf("%s empty payload: unexpected %v", w, e)
			}
			got = append(got, e.Field)
		}
		wantSorted := slices.Sorted(slices.Values(required))
		if !reflect.DeepEqual(got, wantSorted) {
			t.Errorf("%s empty payload: required errors for %v, want %v", w, got, wantSorted)
		}
		// Every optional field may be left out.
		p := maps.Clone(spec.Example)
		for _, f := range spec.Optional {
			delete(p, f)
		}
		if _, norm, errs := Validate(w, p); len(errs) > 0 || norm["units"] != 1.0 || norm["network_status"] != "unknown" {
			t.Errorf("%s without optional fields: got %v %v, want no errors and the defaults", w, norm, errs)
		}
	}
}

func TestValidateAppealClaim(t *testing.T) {
	t.Parallel()
	_, _, errs := ValidateAppealClaim(map[string]any{})
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	want := []string{"cpt_code", "external_claim_id", "icd10_code", "payer_id", "service_date"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("required: got %v, want %v", got, want)
	}
	c, _, errs := ValidateAppealClaim(map[string]any{
		"external_claim_id": "CLM-1", "service_date": "2025-01-02", "payer_id": 7001.0, "cpt_code": "99214", "icd10_code": "E119",
	})
	if len(errs) > 0 || c.ICD10Code != "E11.9" {
		t.Errorf("got %+v %v, want a valid claim", c, errs)
	}
}

func TestUnknownFieldSuggestions(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"cpt":              "cpt_code",
		"CPT_Code":         "cpt_code",
		"place_of_servce":  "place_of_service",
		"pos":              "place_of_service",
		"icd10":            "icd10_code",
		"unit":             "units",
		"favourite_colour": "",
	}
	for name, guess := range tests {
		e := unknownField(name)
		if e.Field != name || e.Rule != RuleUnknownField || !strings.HasPrefix(e.Message, name+" ") {
			t.Errorf("%s: got %#v", name, e)
		}
		if hint := "(did you mean " + guess + "?)"; (guess != "") != strings.Contains(e.Message, hint) || (guess == "" && strings.Contains(e.Message, "did you mean")) {
			t.Errorf("%s: message %q, want suggestion %q", name, e.Message, guess)
		}
	}
}

func TestErrorsSortedAndDeterministic(t *testing.T) {
	t.Parallel()
	p := decode(t, `{"zeta": 1, "alpha": 2, "cpt_code": "x", "icd10_code": "y", "units": -1, "billed_amount": "1"}`)
	_, _, first := Validate(Denial, p)
	for range 20 {
		_, _, again := Validate(Denial, p)
		if !reflect.DeepEqual(first, again) {
			t.Fatalf("errors differ between runs:\n%v\n%v", first, again)
		}
	}
	for i := 1; i < len(first); i++ {
		a, b := first[i-1], first[i]
		if a.Field > b.Field || (a.Field == b.Field && a.Rule > b.Rule) {
			t.Errorf("errors not sorted: %v before %v", a, b)
		}
	}
	if first.Error() == "" || !strings.Contains(first.Error(), "; ") {
		t.Errorf("Error(): got %q, want messages joined with \"; \"", first.Error())
	}
}

func TestUnknownWorkflow(t *testing.T) {
	t.Parallel()
	_, _, errs := Validate("healthcare.appeal", map[string]any{})
	if len(errs) != 1 || errs[0].Field != "workflow" || errs[0].Rule != RuleWorkflow {
		t.Errorf("got %v, want one workflow error", errs)
	}
}

func TestUnsupportedGoValue(t *testing.T) {
	t.Parallel()
	p := payload(t, Denial, map[string]any{"billed_amount": struct{}{}, "units": float32(2)})
	_, _, errs := Validate(Denial, p)
	if len(errs) != 2 || errs[0].Rule != RuleType || errs[1].Rule != RuleType {
		t.Errorf("got %v, want type errors for billed_amount and units", errs)
	}
}

func BenchmarkValidate(b *testing.B) {
	valid := payload(b, Denial, nil)
	invalid := payload(b, Denial, map[string]any{"place_of_service": "office", "cpt_code": "9921", "billed_amount": -1.0})
	b.Run("valid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, errs := Validate(Denial, valid); errs != nil {
				b.Fatal(errs)
			}
		}
	})
	// The JSON Schema library on the published schema, which Validate ran per payload until the Go
	// rules took over what it checked: the cost the request path no longer pays.
	schema := publishedSchema(b, string(Denial)+".json")
	b.Run("schema_library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := schema.Validate(valid); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("invalid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, errs := Validate(Denial, invalid); len(errs) != 3 {
				b.Fatal(errs)
			}
		}
	})
}

// TestMessages pins the wording VALIDATION.md documents.
func TestMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		edits map[string]any
		want  string
	}{
		{map[string]any{"cpt_code": nil}, "cpt_code is required"},
		{map[string]any{"billed_amount": "185.00"}, `billed_amount must be a number (got "185.00")`},
		{map[string]any{"cpt": "99214"}, "cpt is not a field of this payload (did you mean cpt_code?)"},
		{map[string]any{"provider_id": "P-1043"}, `provider_id must be an integer between 1 and 9007199254740991, or a string of its digits (got "P-1043")`},
		{map[string]any{"cpt_code": "9921"}, `cpt_code must be a CPT code (5 digits, or 4 digits and F, T, U, M or A) or a HCPCS Level II code (a letter A-V and 4 digits) (got "9921")`},
		{map[string]any{"icd10_code": "250.00"}, `icd10_code must be an ICD-10-CM code: a letter, a digit, a letter or digit, then optionally a dot and 1 to 4 letters or digits (got "250.00")`},
		{map[string]any{"billed_amount": -1.0}, "billed_amount must be between 0 and 10000000 (got -1)"},
		{map[string]any{"units": 0.0}, "units must be greater than 0 and at most 9999 (got 0)"},
		{map[string]any{"service_date": "2014-06-01"}, `service_date must be on or after 2015-10-01, the ICD-10-CM compliance date (got "2014-06-01")`},
		{map[string]any{"service_date": "2099-01-01"}, `service_date must be no later than tomorrow (UTC) for this workflow (got "2099-01-01")`},
		{map[string]any{"network_status": "preferred"}, `network_status must be in_network, out_of_network or unknown (got "preferred")`},
		{map[string]any{"external_claim_id": strings.Repeat("é", 70)}, "external_claim_id must be at most 64 characters (got 70)"},
	}
	for _, tt := range tests {
		_, _, errs := Validate(Denial, payload(t, Denial, tt.edits))
		if len(errs) != 1 || errs[0].Message != tt.want {
			t.Errorf("got %v, want the one message %q", errs, tt.want)
		}
	}
}
