package claim

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The schemas served to clients are the contract, and Validate enforces it in Go. These tests check
// that the two agree: the JSON Schema library accepts a payload exactly when Validate reports no
// error that the schema expresses.

// agreementTarget is one schema file and the validation that enforces it.
type agreementTarget struct {
	file     string
	schema   *jsonschema.Schema
	validate func(map[string]any) Errors
}

func agreementTargets(t testing.TB) []agreementTarget {
	t.Helper()
	var targets []agreementTarget
	for _, w := range Workflows {
		targets = append(targets, agreementTarget{
			file:     string(w) + ".json",
			validate: func(p map[string]any) Errors { _, _, errs := Validate(w, p); return errs },
		})
	}
	targets = append(targets, agreementTarget{
		file:     "appeal_claim.json",
		validate: func(p map[string]any) Errors { _, _, errs := ValidateAppealClaim(p); return errs },
	})
	for i := range targets {
		targets[i].schema = publishedSchema(t, targets[i].file)
	}
	return targets
}

// publishedSchema compiles a schema file as served, numeric bounds included.
func publishedSchema(t testing.TB, file string) *jsonschema.Schema {
	t.Helper()
	raw, err := schemaFiles.ReadFile("schemas/" + file)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := compileSchema(file, raw)
	if err != nil {
		t.Fatal(err)
	}
	return schema
}

// schemaExpresses reports whether the schema states the rule e broke. Go's rules go further on the
// same fields: a blank string is not "given", and an identifier string must be digits in range; the
// schema sees a string within its length in both cases.
func schemaExpresses(e FieldError, p map[string]any) bool {
	switch e.Rule {
	case RuleType, RuleUnknownField, RuleMaxLength, RuleAmountRange, RuleUnitsRange:
		return true
	case RuleRequired, RulePositiveInteger:
		_, isString := p[e.Field].(string)
		return !isString
	}
	return false
}

// checkAgreement fails t when the library and Validate disagree on p.
func (a agreementTarget) checkAgreement(t *testing.T, p map[string]any) {
	t.Helper()
	schemaErr := a.schema.Validate(p)
	var expressed Errors
	for _, e := range a.validate(p) {
		if schemaExpresses(e, p) {
			expressed = append(expressed, e)
		}
	}
	if (schemaErr == nil) != (len(expressed) == 0) {
		body, _ := json.Marshal(p)
		t.Fatalf("%s on %s: the schema library says %v; Validate reports %v", a.file, body, schemaErr, expressed)
	}
}

// agreementValues are values set into each field of a valid payload: every JSON type, and each side
// of every length and bound the schemas state. The Go types are those Validate documents; a Go
// caller's float32 or int8 is a number to the library and a type error to Validate.
var agreementValues = []any{
	nil, true, false, []any{}, []any{"99213"}, map[string]any{}, map[string]any{"a": 1.0},
	-1.0, 0.0, 1e-9, 0.001, 1.0, 1.5, 9999.0, 9999.001, 10000.0, 10_000_000.0, 10_000_000.01, 1e300,
	9007199254740991.0, 9007199254740992.0, -9007199254740992.0, math.NaN(), math.Inf(1),
	0, 1, -1, 9999, int64(9007199254740991), int64(9007199254740992),
	json.Number("0"), json.Number("1"), json.Number("1.0"), json.Number("1e2"), json.Number("1.5"),
	json.Number("-1"), json.Number("9999.001"), json.Number("10000000"), json.Number("10000000.01"),
	json.Number("9007199254740991"), json.Number("9007199254740992"), json.Number("1e400"),
	"", " ", "0", "1043", " 1043 ", "P-1043", "1.5", "-1", "9007199254740991", "9007199254740992",
	"99213", "E11.9", "11", "in_network", "2025-03-14", "2099-01-01", "office", "x\x00", "\xff",
	strings.Repeat("1", 16), strings.Repeat("1", 17), strings.Repeat("é", 32), strings.Repeat("é", 33),
	strings.Repeat("x", 64), strings.Repeat("x", 65), strings.Repeat("é", 64), strings.Repeat("é", 65),
	strings.Repeat(" ", 70),
}

func TestSchemaAgreement(t *testing.T) {
	t.Parallel()
	base := Lookup(Denial).Example // valid for every target: the appeal claim requires less
	with := func(edit func(p map[string]any)) map[string]any {
		p := make(map[string]any, len(base)+1)
		for k, v := range base {
			p[k] = v
		}
		edit(p)
		return p
	}
	for _, a := range agreementTargets(t) {
		t.Run(a.file, func(t *testing.T) {
			t.Parallel()
			a.checkAgreement(t, map[string]any{})
			a.checkAgreement(t, base)
			for _, name := range append(fieldNames[:], "cpt", "") {
				a.checkAgreement(t, with(func(p map[string]any) { delete(p, name) }))
				for _, v := range agreementValues {
					a.checkAgreement(t, with(func(p map[string]any) { p[name] = v }))
				}
			}
		})
	}
}

// FuzzSchemaAgreement checks every schema against Validate on payloads decoded as the service decodes
// them (numbers as float64). Decoded with UseNumber they may disagree at a bound: Validate reads a
// json.Number as the nearest float64 (10000000.0000000000000001 is 10000000), the library exactly.
func FuzzSchemaAgreement(f *testing.F) {
	for _, body := range seedBodies(f) {
		f.Add(body)
	}
	targets := agreementTargets(f)
	f.Fuzz(func(t *testing.T, body string) {
		var p map[string]any
		if json.Unmarshal([]byte(body), &p) != nil {
			return
		}
		for _, a := range targets {
			a.checkAgreement(t, p)
		}
	})
}

// seedBodies gathers payloads the other tests use: the examples, FuzzValidate's seeds and corpus,
// and the payloads of TestValidateRules.
func seedBodies(t testing.TB) []string {
	t.Helper()
	var bodies []string
	add := func(p map[string]any) {
		body, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, string(body))
	}
	for _, spec := range Specs() {
		add(spec.Example)
	}
	bodies = append(bodies, fuzzSeeds...)
	for _, tt := range ruleTests {
		add(payload(t, tt.workflow, tt.edits))
	}
	files, err := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzValidate", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		corpus, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		// A corpus file is "go test fuzz v1" and one Go literal per argument: workflow, then body.
		lines := strings.Split(strings.TrimSpace(string(corpus)), "\n")
		literal, ok := strings.CutPrefix(lines[len(lines)-1], "string(")
		body, err := strconv.Unquote(strings.TrimSuffix(literal, ")"))
		if !ok || err != nil {
			t.Fatalf("%s: last line %q is not a string literal", file, lines[len(lines)-1])
		}
		bodies = append(bodies, body)
	}
	return bodies
}
