package claim

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// field indexes the claim fields every payload schema defines.
type field uint8

const (
	fieldExternalClaimID field = iota
	fieldServiceDate
	fieldProviderID
	fieldPayerID
	fieldCPTCode
	fieldICD10Code
	fieldBilledAmount
	fieldUnits
	fieldPlaceOfService
	fieldNetworkStatus
	fieldDataSource
	fieldPatientID
	numFields
)

var fieldNames = [numFields]string{
	"external_claim_id", "service_date", "provider_id", "payer_id", "cpt_code", "icd10_code",
	"billed_amount", "units", "place_of_service", "network_status", "data_source", "patient_id",
}

// fieldTypes completes "<field> must be ..." in type errors.
var fieldTypes = [numFields]string{
	"a string", "a string in YYYY-MM-DD form", "an integer or a string of digits",
	"an integer or a string of digits", "a string", "a string", "a number", "a number", "a string",
	"a string", "a string", "a string",
}

func fieldByName(name string) (field, bool) {
	for f, n := range fieldNames {
		if n == name {
			return field(f), true
		}
	}
	return 0, false
}

type fieldSet uint16

func (s fieldSet) has(f field) bool { return s&(1<<f) != 0 }
func (s *fieldSet) add(f field)     { *s |= 1 << f }

// earliestServiceDate is the ICD-10-CM compliance date: a claim with an earlier service date is coded
// in ICD-9-CM, so an ICD-10 code on it is itself a coding error.
var earliestServiceDate = time.Date(2015, time.October, 1, 0, 0, 0, 0, time.UTC)

// The network_status values; unknown is the default.
const (
	networkIn      = "in_network"
	networkOut     = "out_of_network"
	networkUnknown = "unknown"
)

// profile is what validation needs of one payload schema, read from its file at start (see
// parseSchema).
type profile struct {
	required        fieldSet
	nullable        fieldSet         // fields whose schema type admits null
	maxLength       [numFields]int   // in characters; math.MaxInt where the schema states none
	bounds          [numFields]bound // numeric bounds: provider_id, payer_id, billed_amount, units
	serviceDateLead int              // days after today (UTC) service_date may fall
}

// bound is the range a schema states for a numeric field: provider_id, payer_id, billed_amount, units.
type bound struct {
	min, max     float64
	exclusiveMin bool
}

func (b bound) contains(x float64) bool {
	return (x > b.min || (x == b.min && !b.exclusiveMin)) && x <= b.max
}

// String words the range for messages: "between 0 and 10000000", "greater than 0 and at most 9999".
func (b bound) String() string {
	if b.exclusiveMin {
		return "greater than " + formatNumber(b.min) + " and at most " + formatNumber(b.max)
	}
	return "between " + formatNumber(b.min) + " and " + formatNumber(b.max)
}

func formatNumber(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// Validate checks a workflow's payload and normalises it. It returns the claim, the normalised payload
// (what the caller should have sent: trimmed strings, upper-case codes, the ICD-10 dot, defaults
// applied, identifiers as int64 and amounts as float64) and the errors, sorted by field then rule.
//
// Go rules check everything the workflow's JSON Schema states (required fields, JSON types, unknown
// fields, string lengths, numeric bounds, all read from the schema file at start) and what a schema
// states badly or not at all: code formats, the CMS place-of-service list, calendar dates, decimal
// places. No JSON Schema library runs per payload: it was 58 of the 65 allocations and most of the
// time of a valid claim (BenchmarkValidate, see VALIDATION.md). FuzzSchemaAgreement checks that the
// library accepts a payload exactly when Validate finds no error the schema expresses. A field fails
// with at most one error.
//
// When there are errors the claim is the zero value and the normalised payload holds the fields that
// passed, for the validate endpoint to show. Numbers may be float64, json.Number, int or int64, so a
// payload decoded with or without json.Decoder.UseNumber validates alike.
func Validate(w Workflow, payload map[string]any) (Claim, map[string]any, Errors) {
	i, ok := workflowIndex(w)
	if !ok {
		return Claim{}, nil, Errors{unknownWorkflow(w)}
	}
	return workflowProfiles[i].validate(Map(payload), time.Now(), true)
}

// Payload is a claim's JSON object as validation reads it: each field's value as encoding/json
// decodes into any, the number of fields and their names.
type Payload interface {
	Field(name string) (any, bool)
	Len() int
	Names() iter.Seq[string]
}

// Map is a Payload decoded into a map.
type Map map[string]any

// Field returns the named field's value.
func (m Map) Field(name string) (any, bool) {
	v, ok := m[name]
	return v, ok
}

// Len returns the number of fields.
func (m Map) Len() int { return len(m) }

// Names returns the fields' names.
func (m Map) Names() iter.Seq[string] { return maps.Keys(m) }

// Check is Validate without the normalised payload, for the scoring path: building that map is most
// of the allocations of a valid claim, and scoring reads only the Claim. The payload is read field by
// field, so that a caller holding it in another form (the gateway's structpb) need not copy it into a
// map first.
func Check(w Workflow, payload Payload) (Claim, Errors) {
	i, ok := workflowIndex(w)
	if !ok {
		return Claim{}, Errors{unknownWorkflow(w)}
	}
	c, _, errs := workflowProfiles[i].validate(payload, time.Now(), false)
	return c, errs
}

func unknownWorkflow(w Workflow) FieldError {
	return FieldError{
		Field:   "workflow",
		Rule:    RuleWorkflow,
		Message: fmt.Sprintf("workflow must be healthcare.denial, healthcare.prior_auth or healthcare.reimbursement (got %s)", describe(string(w))),
	}
}

// ValidateAppealClaim is Validate for the claim of an appeal (package appeals). An appeal identifies an
// already denied claim to its payer, so only external_claim_id, service_date, payer_id, cpt_code and
// icd10_code are required, and service_date may not be after tomorrow (UTC).
func ValidateAppealClaim(payload map[string]any) (Claim, map[string]any, Errors) {
	return appealProfile.validate(Map(payload), time.Now(), true)
}

// validation carries one pass's state.
type validation struct {
	profile *profile
	now     time.Time
	claim   Claim
	norm    map[string]any // nil when the caller does not want the normalised payload
	set     fieldSet       // fields with a normalised value
	errs    Errors
	failed  fieldSet // fields with an error, which get no further rule and no default
}

func (p *profile) validate(payload Payload, now time.Time, normalise bool) (Claim, map[string]any, Errors) {
	v := validation{
		profile: p,
		now:     now,
		claim:   Claim{Units: 1, NetworkStatus: networkUnknown},
	}
	if normalise {
		v.norm = make(map[string]any, numFields)
	}
	known := 0
	for f := range numFields {
		raw, ok := payload.Field(fieldNames[f])
		if !ok {
			if p.required.has(f) {
				name := fieldNames[f]
				v.failed.add(f)
				v.errs = append(v.errs, FieldError{Field: name, Rule: RuleRequired, Message: name + " is required"})
			}
			continue
		}
		known++
		v.check(f, raw)
	}
	// Counting the known fields spares a valid payload a lookup of each of its names.
	if known < payload.Len() {
		for name := range payload.Names() {
			if _, ok := fieldByName(name); !ok {
				v.errs = append(v.errs, unknownField(name))
			}
		}
	}
	v.setDefault(fieldUnits, 1.0)
	v.setDefault(fieldNetworkStatus, networkUnknown)
	if len(v.errs) > 0 {
		v.errs.Sort()
		return Claim{}, v.norm, v.errs
	}
	return v.claim, v.norm, nil
}

// setDefault fills an optional field the caller left out (absent, null or blank), so the normalised
// payload shows the value the models read.
func (v *validation) setDefault(f field, value any) {
	if !v.set.has(f) && !v.failed.has(f) {
		v.put(f, value)
	}
}

// put records a field's normalised value.
func (v *validation) put(f field, value any) {
	v.set.add(f)
	if v.norm != nil {
		v.norm[fieldNames[f]] = value
	}
}

// check applies the rules to one field the payload holds: first what the schema states (type, null,
// length), then the rest.
func (v *validation) check(f field, raw any) {
	name := fieldNames[f]
	if raw == nil {
		switch {
		case v.profile.nullable.has(f): // null means "not given"
		case v.profile.required.has(f):
			v.fail(f, RuleRequired, "%s is required (got null)", name)
		default:
			v.typeError(f, raw)
		}
		return
	}
	switch f {
	case fieldProviderID, fieldPayerID:
		v.checkID(f, raw)
		return
	case fieldBilledAmount, fieldUnits:
		v.checkNumber(f, raw)
		return
	}
	s, ok := raw.(string)
	if !ok {
		v.typeError(f, raw)
		return
	}
	if !v.checkLength(f, s) {
		return
	}
	t := strings.TrimSpace(s)
	if t == "" {
		if v.profile.required.has(f) {
			v.fail(f, RuleRequired, "%s is required (got a blank string)", name)
		}
		return
	}
	switch f {
	case fieldServiceDate:
		v.checkDate(raw, t)
	case fieldCPTCode:
		code, ok := procedureCode(t)
		if !ok {
			v.fail(f, RuleCPTFormat, "%s must be a CPT code (5 digits, or 4 digits and F, T, U, M or A) or a HCPCS Level II code (a letter A-V and 4 digits) (got %s)", name, describe(s))
			return
		}
		v.claim.CPTCode = code
		v.setString(f, raw, code)
	case fieldICD10Code:
		code, ok := diagnosisCode(t)
		if !ok {
			v.fail(f, RuleICD10Format, "%s must be an ICD-10-CM code: a letter, a digit, a letter or digit, then optionally a dot and 1 to 4 letters or digits (got %s)", name, describe(s))
			return
		}
		v.claim.ICD10Code = code
		v.setString(f, raw, code)
	case fieldPlaceOfService:
		if _, ok := PlaceOfServiceName(t); !ok {
			v.fail(f, RulePlaceOfService, "%s must be a 2-digit CMS place-of-service code (got %s)", name, describe(s))
			return
		}
		v.claim.PlaceOfService = t
		v.setString(f, raw, t)
	case fieldNetworkStatus:
		status, ok := networkStatus(t)
		if !ok {
			v.fail(f, RuleNetworkStatus, "%s must be in_network, out_of_network or unknown (got %s)", name, describe(s))
			return
		}
		v.claim.NetworkStatus = status
		v.setString(f, raw, status)
	default: // free text: external_claim_id, data_source, patient_id
		if !utf8.ValidString(t) || strings.IndexFunc(t, unicode.IsControl) >= 0 {
			v.fail(f, RulePrintable, "%s must be printable text without control characters", name)
			return
		}
		switch f {
		case fieldExternalClaimID:
			v.claim.ExternalClaimID = t
		case fieldDataSource:
			t = strings.ToLower(t)
			v.claim.DataSource = t
		case fieldPatientID:
			v.claim.PatientID = t
		}
		v.setString(f, raw, t)
	}
}

// checkDate takes a trimmed service_date. Only YYYY-MM-DD is accepted: a timestamp's calendar date
// depends on a time zone the payload does not carry.
func (v *validation) checkDate(raw any, s string) {
	name := fieldNames[fieldServiceDate]
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		v.fail(fieldServiceDate, RuleDateFormat, "%s must be a calendar date in YYYY-MM-DD form (got %s)", name, describe(s))
		return
	}
	if d.Before(earliestServiceDate) {
		v.fail(fieldServiceDate, RuleDateRange, "%s must be on or after 2015-10-01, the ICD-10-CM compliance date (got %s)", name, describe(s))
		return
	}
	y, m, day := v.now.UTC().Date()
	if lead := v.profile.serviceDateLead; d.After(time.Date(y, m, day+lead, 0, 0, 0, 0, time.UTC)) {
		latest := "tomorrow"
		if lead != 1 {
			latest = strconv.Itoa(lead) + " days after today"
		}
		v.fail(fieldServiceDate, RuleDateRange, "%s must be no later than %s (UTC) for this workflow (got %s)", name, latest, describe(s))
		return
	}
	v.claim.ServiceDate = d
	v.setString(fieldServiceDate, raw, s)
}

// checkLength applies the schema's maxLength, which counts characters (code points), not bytes.
func (v *validation) checkLength(f field, s string) bool {
	limit := v.profile.maxLength[f]
	if len(s) <= limit { // no string has more characters than bytes
		return true
	}
	if n := utf8.RuneCountInString(s); n > limit {
		v.fail(f, RuleMaxLength, "%s must be at most %d characters (got %d)", fieldNames[f], limit, n)
		return false
	}
	return true
}

func (v *validation) checkID(f field, raw any) {
	name := fieldNames[f]
	if s, ok := raw.(string); ok {
		if !v.checkLength(f, s) {
			return
		}
		if strings.TrimSpace(s) == "" {
			if v.profile.required.has(f) {
				v.fail(f, RuleRequired, "%s is required (got a blank string)", name)
			}
			return
		}
	} else if !isInteger(raw) {
		v.typeError(f, raw)
		return
	}
	id, ok := parseID(raw)
	if !ok || !v.profile.bounds[f].contains(float64(id)) {
		v.idError(f, raw)
		return
	}
	if f == fieldProviderID {
		v.claim.ProviderID = id
	} else {
		v.claim.PayerID = id
	}
	v.put(f, id)
}

// parseID reads an integer identifier from a JSON integer or a string of at most 16 digits. Strings
// are accepted because EHR and spreadsheet exports quote identifiers; 16 digits hold 2^53-1, the
// largest integer a JSON number carries exactly through JavaScript and encoding/json's float64.
func parseID(raw any) (int64, bool) {
	if s, ok := raw.(string); ok {
		s = strings.TrimSpace(s)
		if len(s) > 16 {
			return 0, false
		}
		for i := range len(s) {
			if !isDigit(s[i]) {
				return 0, false
			}
		}
		id, err := strconv.ParseInt(s, 10, 64)
		return id, err == nil
	}
	x, ok := number(raw)
	if !ok || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
		return 0, false
	}
	return int64(x), true
}

// checkNumber checks billed_amount and units.
func (v *validation) checkNumber(f field, raw any) {
	name := fieldNames[f]
	x, ok := number(raw)
	if !ok {
		v.typeError(f, raw)
		return
	}
	if b := v.profile.bounds[f]; !b.contains(x) {
		rule := RuleUnitsRange
		if f == fieldBilledAmount {
			rule = RuleAmountRange
		}
		v.fail(f, rule, "%s must be %s (got %s)", name, b, describe(raw))
		return
	}
	if f == fieldBilledAmount {
		// Round-tripping through cents is exact for any decimal literal with at most 2 places: both
		// sides are then the float64 nearest to the same decimal.
		if math.Round(x*100)/100 != x {
			v.fail(f, RuleAmountPrecision, "%s must have at most 2 decimal places (got %s)", name, describe(raw))
			return
		}
		v.claim.BilledAmount = x
	} else {
		// Drug and anesthesia units are fractional on real claims (0.5 mL, 1.25 units), so units are
		// decimal with 3 places, the precision payers process.
		if math.Round(x*1000)/1000 != x {
			v.fail(f, RuleUnitsPrecision, "%s must have at most 3 decimal places (got %s)", name, describe(raw))
			return
		}
		v.claim.Units = x
	}
	if _, isFloat := raw.(float64); isFloat {
		v.put(f, raw)
	} else {
		v.put(f, x)
	}
}

// isInteger reports whether raw is what JSON Schema's integer type admits: a number of integral value,
// so 1.0 and 1e2 are integers. Like the schema library it counts every Go numeric type, so that a Go
// caller's int32 identifier fails the range rule (parseID does not read it), as it did when the
// library checked types.
func isInteger(raw any) bool {
	switch x := raw.(type) {
	case float64:
		return x == math.Trunc(x) && !math.IsInf(x, 0)
	case float32:
		return float64(x) == math.Trunc(float64(x)) && !math.IsInf(float64(x), 0)
	case json.Number:
		// Exactly, as the schema library reads it: "1e400" is an integer too big for float64.
		r, ok := new(big.Rat).SetString(string(x))
		return ok && r.IsInt()
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return true
	}
	return false
}

// number reads the numeric types a decoded JSON payload or a Go caller carries.
func number(raw any) (float64, bool) {
	switch x := raw.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// networkStatus matches the enum case-insensitively, reading hyphens and spaces as underscores
// ("In-Network"), without allocating.
func networkStatus(s string) (string, bool) {
	for _, want := range [...]string{networkIn, networkOut, networkUnknown} {
		if len(s) != len(want) {
			continue
		}
		match := true
		for i := range len(s) {
			c := s[i]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			} else if c == '-' || c == ' ' {
				c = '_'
			}
			if c != want[i] {
				match = false
				break
			}
		}
		if match {
			return want, true
		}
	}
	return "", false
}

// setString stores a normalised string, reusing the caller's boxed value when normalisation left it
// unchanged: boxing a string into the map costs an allocation per field.
func (v *validation) setString(f field, raw any, normalised string) {
	if s, _ := raw.(string); s == normalised {
		v.put(f, raw)
		return
	}
	v.put(f, normalised)
}

func (v *validation) fail(f field, rule, format string, args ...any) {
	v.failed.add(f)
	v.errs = append(v.errs, FieldError{Field: fieldNames[f], Rule: rule, Message: fmt.Sprintf(format, args...)})
}

func (v *validation) typeError(f field, raw any) {
	v.fail(f, RuleType, "%s must be %s (got %s)", fieldNames[f], fieldTypes[f], describe(raw))
}

func (v *validation) idError(f field, raw any) {
	v.fail(f, RulePositiveInteger, "%s must be an integer %s, or a string of its digits (got %s)", fieldNames[f], v.profile.bounds[f], describe(raw))
}

// unknownFieldAliases maps names common in claim exports to the payload's field names.
var unknownFieldAliases = map[string]string{
	"pos": "place_of_service", "dos": "service_date", "date_of_service": "service_date",
	"claim_id": "external_claim_id", "hcpcs_code": "cpt_code", "procedure_code": "cpt_code",
	"diagnosis_code": "icd10_code", "charge": "billed_amount", "amount": "billed_amount",
	"npi": "provider_id", "member_id": "patient_id",
}

// unknownField words the error for a field the schema does not define, suggesting the field the caller
// probably meant ("cpt" is "cpt_code"), because a misspelt optional field is the usual cause.
func unknownField(name string) FieldError {
	msg := name + " is not a field of this payload"
	if name == "" {
		msg = `"" (an empty name) is not a field of this payload`
	}
	if guess := suggestField(name); guess != "" {
		msg += " (did you mean " + guess + "?)"
	}
	return FieldError{Field: name, Rule: RuleUnknownField, Message: msg}
}

func suggestField(name string) string {
	lower := strings.ToLower(strings.TrimSpace(name))
	if alias, ok := unknownFieldAliases[lower]; ok {
		return alias
	}
	best, bestDistance := "", 3 // more than 2 edits apart is a different word, not a typo
	for _, f := range fieldNames {
		if lower == f || (len(lower) >= 3 && strings.HasPrefix(f, lower)) {
			return f
		}
		if d := editDistance(lower, f); d < bestDistance {
			best, bestDistance = f, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two short ASCII names.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// describe renders a payload value for a message: strings quoted and cut to 40 characters (a message
// must not echo a megabyte), numbers as JSON writes them, other values by JSON type.
func describe(raw any) string {
	switch x := raw.(type) {
	case nil:
		return "null"
	case string:
		if utf8.RuneCountInString(x) > 40 {
			return strconv.Quote(string([]rune(x)[:40])) + "..."
		}
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		return x.String()
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", raw)
}
