package appeals

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// patientID is distinctive so that a search of the output cannot match by accident.
const patientID = "PAT-SECRET-0042"

func baseInput() Input {
	return Input{
		Claim: map[string]any{
			"external_claim_id": "CLM-2025-000123",
			"service_date":      "2025-03-14",
			"provider_id":       1043.0,
			"payer_id":          7001.0,
			"cpt_code":          "72148",
			"icd10_code":        "M54.16",
			"billed_amount":     1250.0,
			"place_of_service":  "22",
			"patient_id":        patientID,
		},
		DenialReasonCodes: []string{"CO-50"},
		DenialDate:        "2025-04-01",
		PayerClass:        "commercial",
		PayerName:         "Acme Health Plan",
	}
}

func generate(t *testing.T, in Input) Appeal {
	t.Helper()
	a, err := Generate(in)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return a
}

func TestCategories(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code     string
		category Category
		title    string
		evidence string // an item the category adds
		priority string
	}{
		{"CO-50", MedicalNecessity, "The service was medically necessary", "Letter of medical necessity from the treating provider", "high"},
		{"CO-151", MedicalNecessity, "The service was medically necessary", "Clinical notes for the date of service", "high"},
		{"CO-197", PriorAuthorization, "Authorization requirements were met", "Proof that no authorization was required, or records of the urgency that prevented obtaining it", "high"},
		{"CO-15", PriorAuthorization, "Authorization requirements were met", "Proof that no authorization was required, or records of the urgency that prevented obtaining it", "high"},
		{"CO-4", Coding, "The service was coded correctly", "Procedure or operative note supporting the codes and modifiers", "normal"},
		{"CO-11", Coding, "The service was coded correctly", "Procedure or operative note supporting the codes and modifiers", "normal"},
		{"CO-29", TimelyFiling, "The claim was filed on time", "Proof of timely submission: clearinghouse acceptance report (999/277CA) or payer acknowledgement", "normal"},
		{"CO-18", Duplicate, "The claim is not a duplicate", "Documentation distinguishing this service from the earlier claim (times, sites, units)", "normal"},
		{"CO-109", Eligibility, "The patient was covered for this service", "Eligibility verification (271 response) for the date of service", "normal"},
		{"PR-204", Eligibility, "The patient was covered for this service", "Eligibility verification (271 response) for the date of service", "normal"},
		{"CO-97", Bundling, "The service was separate and distinct", "Documentation showing the service was separate and distinct", "normal"},
		{"CO-236", Bundling, "The service was separate and distinct", "Documentation showing the service was separate and distinct", "normal"},
		{"CO-16", Documentation, "The requested information is enclosed", "The records or attachment the payer requested", "normal"},
		{"CO-252", Documentation, "The requested information is enclosed", "The records or attachment the payer requested", "normal"},
		{"CO-45", Other, "The denial should be reconsidered", "Documentation supporting the service as billed", "normal"},
		{"CO-167", MedicalNecessity, "The service was medically necessary", "Clinical notes for the date of service", "high"},
		{"OA-999", Other, "The denial should be reconsidered", "Documentation supporting the service as billed", "normal"},
		{"PI-B7", Other, "The denial should be reconsidered", "Documentation supporting the service as billed", "normal"},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			t.Parallel()
			in := baseInput()
			in.DenialReasonCodes = []string{tt.code}
			a := generate(t, in)
			if len(a.ReasonCodes) != 1 || a.ReasonCodes[0].Category != tt.category || a.ReasonCodes[0].Code != tt.code {
				t.Errorf("reason codes: got %+v, want %s in category %s", a.ReasonCodes, tt.code, tt.category)
			}
			if a.ReasonCodes[0].Group != tt.code[:2] || a.ReasonCodes[0].Description == "" {
				t.Errorf("reason code: got %+v, want group %s and a description", a.ReasonCodes[0], tt.code[:2])
			}
			if len(a.Arguments) != 1 || a.Arguments[0].Category != tt.category || a.Arguments[0].Title != tt.title {
				t.Errorf("arguments: got %+v, want one %s argument titled %q", a.Arguments, tt.category, tt.title)
			}
			if refs := a.Arguments[0].References; len(refs) == 0 || !strings.HasPrefix(refs[len(refs)-1], "CARC "+tt.code+": ") {
				t.Errorf("references: got %v, want the CARC last", refs)
			}
			if !hasEvidence(a.Evidence, tt.evidence, true) {
				t.Errorf("evidence: got %+v, want required %q", a.Evidence, tt.evidence)
			}
			if a.Priority != tt.priority {
				t.Errorf("priority: got %s, want %s", a.Priority, tt.priority)
			}
			if !hasSection(a.Letter, tt.title) {
				t.Errorf("letter: no section %q", tt.title)
			}
		})
	}
}

func hasEvidence(list []Evidence, item string, required bool) bool {
	for _, e := range list {
		if e.Item == item {
			return e.Required == required
		}
	}
	return false
}

func hasSection(l Letter, heading string) bool {
	for _, s := range l.Sections {
		if s.Heading == heading {
			return true
		}
	}
	return false
}

func TestLetterStructure(t *testing.T) {
	t.Parallel()
	in := baseInput()
	in.DenialReasonCodes = []string{"CO-197", "CO-50", "CO-16"}
	in.PriorAuthNumber = "AUTH-77812"
	a := generate(t, in)
	var headings []string
	for _, s := range a.Letter.Sections {
		headings = append(headings, s.Heading)
	}
	want := []string{
		"Salutation", "Claim identification", "Basis for appeal",
		"Authorization requirements were met", "The service was medically necessary", "The requested information is enclosed",
		"Requested action", "Closing",
	}
	if !reflect.DeepEqual(headings, want) {
		t.Errorf("sections:\n got %q\nwant %q", headings, want)
	}
	if !strings.Contains(a.Arguments[0].Text, "Authorization AUTH-77812 was obtained") || !hasEvidence(a.Evidence, "Authorization approval AUTH-77812", true) {
		t.Errorf("prior authorization argument and evidence do not use the authorization number: %+v %+v", a.Arguments[0], a.Evidence)
	}
	if a.Letter.Subject != "Appeal of denied claim CLM-2025-000123, date of service 03/14/2025" {
		t.Errorf("subject: got %q", a.Letter.Subject)
	}
	id := a.Letter.Sections[1].Body
	for _, want := range []string{"Claim number: CLM-2025-000123", "Billed amount: $1,250.00", "Place of service: 22 (On Campus-Outpatient Hospital)", "Prior authorization number: AUTH-77812", "Denial reason codes: CO-197, CO-50, CO-16"} {
		if !strings.Contains(id, want) {
			t.Errorf("claim identification %q lacks %q", id, want)
		}
	}
	for _, p := range a.Placeholders {
		if !strings.Contains(letterText(a.Letter), p) {
			t.Errorf("placeholder %s is not in the letter", p)
		}
	}
}

func letterText(l Letter) string {
	var b strings.Builder
	b.WriteString(l.Subject)
	for _, s := range l.Sections {
		b.WriteString(s.Heading + "\n" + s.Body + "\n")
	}
	return b.String()
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		class   string
		date    string
		days    int
		subject string
	}{
		{"medicare", "2025-07-30", 120, "Request for redetermination: "},
		{"Medicare_Advantage", "2025-06-05", 65, "Request for reconsideration: "},
		{"medicaid", "2025-05-31", 60, "Appeal of denied claim "},
		{"commercial", "2025-09-28", 180, "Appeal of denied claim "},
		{"", "2025-05-31", 60, "Appeal of denied claim "},
	}
	for _, tt := range tests {
		in := baseInput()
		in.PayerClass = tt.class
		a := generate(t, in)
		d := a.AppealDeadline
		if d == nil || d.Date != tt.date || d.WindowDays != tt.days || d.Basis == "" {
			t.Errorf("payer_class %q: got deadline %+v, want %s (%d days)", tt.class, d, tt.date, tt.days)
		}
		if !strings.HasPrefix(a.Letter.Subject, tt.subject) {
			t.Errorf("payer_class %q: subject %q, want prefix %q", tt.class, a.Letter.Subject, tt.subject)
		}
	}
	in := baseInput()
	in.DenialDate = ""
	if a := generate(t, in); a.AppealDeadline != nil {
		t.Errorf("without denial_date: got deadline %+v, want none", a.AppealDeadline)
	}
	b, _ := json.Marshal(generate(t, in))
	if bytes.Contains(b, []byte("appeal_deadline")) {
		t.Errorf("without denial_date the JSON still has appeal_deadline: %s", b)
	}
}

func TestValidationErrors(t *testing.T) {
	t.Parallel()
	tomorrowPlus := time.Now().UTC().AddDate(0, 0, 3).Format(time.DateOnly)
	tests := []struct {
		name  string
		edit  func(*Input)
		field string
		rule  string
	}{
		{"no reason codes", func(in *Input) { in.DenialReasonCodes = nil }, "denial_reason_codes", claim.RuleRequired},
		{"code without group", func(in *Input) { in.DenialReasonCodes = []string{"50"} }, "denial_reason_codes", RuleReasonCodeFormat},
		{"unknown group", func(in *Input) { in.DenialReasonCodes = []string{"XX-50"} }, "denial_reason_codes", RuleReasonCodeFormat},
		{"group only", func(in *Input) { in.DenialReasonCodes = []string{"CO-"} }, "denial_reason_codes", RuleReasonCodeFormat},
		{"code zero", func(in *Input) { in.DenialReasonCodes = []string{"CO-0"} }, "denial_reason_codes", RuleReasonCodeFormat},
		{"code too long", func(in *Input) { in.DenialReasonCodes = []string{"CO-1234"} }, "denial_reason_codes", RuleReasonCodeFormat},
		{"remark code", func(in *Input) { in.DenialReasonCodes = []string{"N115"} }, "denial_reason_codes", RuleReasonCodeFormat},
		{"too many codes", func(in *Input) { in.DenialReasonCodes = strings.Split(strings.Repeat("CO-50,", 21)[:6*21-1], ",") }, "denial_reason_codes", RuleMaxItems},
		{"bad remark", func(in *Input) { in.RemarkCodes = []string{"CO-50"} }, "remark_codes", RuleRemarkCodeFormat},
		{"denial date format", func(in *Input) { in.DenialDate = "04/01/2025" }, "denial_date", claim.RuleDateFormat},
		{"denial before service", func(in *Input) { in.DenialDate = "2025-03-13" }, "denial_date", claim.RuleDateRange},
		{"denial in the future", func(in *Input) { in.DenialDate = tomorrowPlus }, "denial_date", claim.RuleDateRange},
		{"payer class", func(in *Input) { in.PayerClass = "government" }, "payer_class", RulePayerClass},
		{"payer class unspecified spelled out", func(in *Input) { in.PayerClass = "unspecified" }, "payer_class", RulePayerClass},
		{"payer name too long", func(in *Input) { in.PayerName = strings.Repeat("a", 101) }, "payer_name", claim.RuleMaxLength},
		{"payer name control", func(in *Input) { in.PayerName = "Acme\nHealth" }, "payer_name", claim.RulePrintable},
		{"prior auth format", func(in *Input) { in.PriorAuthNumber = "AUTH 1" }, "prior_auth_number", RulePriorAuthNumberFormat},
		{"notes too long", func(in *Input) { in.Notes = strings.Repeat("a", 501) }, "notes", claim.RuleMaxLength},
		{"notes with patient_id", func(in *Input) { in.Notes = "see chart pat-secret-0042" }, "notes", RulePHI},
		{"notes with SSN", func(in *Input) { in.Notes = "member 123-45-6789" }, "notes", RulePHI},
		{"claim missing", func(in *Input) {
			in.Claim = map[string]any{"external_claim_id": "C1", "payer_id": 7.0, "cpt_code": "99213", "icd10_code": "I10"}
		}, "claim.service_date", claim.RuleRequired},
		{"claim place of service word", func(in *Input) { in.Claim["place_of_service"] = "office" }, "claim.place_of_service", claim.RulePlaceOfService},
		{"claim unknown field", func(in *Input) { in.Claim["cpt"] = "99213" }, "claim.cpt", claim.RuleUnknownField},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := baseInput()
			tt.edit(&in)
			a, err := Generate(in)
			var errs claim.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Generate: got %v, want claim.Errors", err)
			}
			if len(errs) != 1 || errs[0].Field != tt.field || errs[0].Rule != tt.rule {
				t.Fatalf("got %#v, want one error with field %s and rule %s", errs, tt.field, tt.rule)
			}
			if !strings.HasPrefix(errs[0].Message, tt.field+" ") {
				t.Errorf("message %q does not begin with %s", errs[0].Message, tt.field)
			}
			if !reflect.DeepEqual(a, Appeal{}) {
				t.Errorf("got an appeal with the errors: %+v", a)
			}
		})
	}
}

func TestValidationErrorsSorted(t *testing.T) {
	t.Parallel()
	_, err := Generate(Input{DenialReasonCodes: []string{"bad", "CO-50", "worse"}, PayerClass: "x"})
	errs := err.(claim.Errors)
	for i := 1; i < len(errs); i++ {
		if errs[i-1].Field > errs[i].Field || (errs[i-1].Field == errs[i].Field && errs[i-1].Rule > errs[i].Rule) {
			t.Errorf("not sorted: %v before %v", errs[i-1], errs[i])
		}
	}
	if len(errs) != 8 { // 5 claim fields, 2 codes, payer_class
		t.Errorf("got %d errors, want 8: %v", len(errs), errs)
	}
}

func TestNormalisedSpellingsGiveTheSameAppeal(t *testing.T) {
	t.Parallel()
	a := baseInput()
	a.DenialReasonCodes = []string{"CO-50", "CO-197"}
	b := baseInput()
	b.DenialReasonCodes = []string{" co 050 ", "CO197", "co-50"}
	b.Claim["icd10_code"] = "m5416"
	b.Claim["payer_id"] = "7001"
	b.PayerClass = " Commercial "
	b.Claim["patient_id"] = "another-patient-9"
	ja, jb := marshal(t, generate(t, a)), marshal(t, generate(t, b))
	if !bytes.Equal(ja, jb) {
		t.Errorf("equivalent inputs differ:\n%s\n%s", ja, jb)
	}
	c := baseInput()
	c.Notes = "Follow-up imaging."
	if generate(t, c).AppealID == generate(t, a).AppealID {
		t.Errorf("different notes gave the same appeal_id")
	}
}

func TestNoPatientIDInOutput(t *testing.T) {
	t.Parallel()
	in := baseInput()
	in.DenialReasonCodes = []string{"CO-50", "CO-197", "CO-4", "CO-29", "CO-18", "CO-109", "CO-97", "CO-16", "CO-45"}
	in.RemarkCodes = []string{"N115", "M127"}
	in.PriorAuthNumber = "AUTH-1"
	in.Notes = "Symptoms persisted after 6 weeks of therapy."
	out := marshal(t, generate(t, in))
	if bytes.Contains(bytes.ToLower(out), bytes.ToLower([]byte(patientID))) {
		t.Errorf("output holds the patient_id: %s", out)
	}
	if bytes.Contains(out, []byte("patient_id")) {
		t.Errorf("output names the patient_id field: %s", out)
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	in := baseInput()
	in.DenialReasonCodes = []string{"CO-50", "CO-97", "PR-204"}
	first := marshal(t, generate(t, in))
	for range 20 {
		if again := marshal(t, generate(t, in)); !bytes.Equal(first, again) {
			t.Fatalf("outputs differ:\n%s\n%s", first, again)
		}
	}
	a := generate(t, in)
	if a.GeneratorVersion != "0.1.2" || !strings.HasPrefix(a.AppealID, "apl_") || len(a.AppealID) != 20 {
		t.Errorf("version %q, appeal_id %q: want 0.1.2 and apl_ with 16 hex digits", a.GeneratorVersion, a.AppealID)
	}
}

// TestGolden pins the whole output of representative inputs. Run with -update after an intended change
// and review the diff: a changed golden file is a changed appeal for every caller.
func TestGolden(t *testing.T) {
	t.Parallel()
	full := baseInput()
	full.DenialReasonCodes = []string{"CO-197", "CO-50", "CO-16"}
	full.RemarkCodes = []string{"N115", "MA130"}
	full.PayerClass = "medicare"
	full.Notes = "MRI ordered after 6 weeks of failed conservative therapy; radicular symptoms documented."
	full.Claim["units"] = 2.0

	minimal := Input{
		Claim: map[string]any{
			"external_claim_id": "CLM-9", "service_date": "2024-11-02", "payer_id": 12.0,
			"cpt_code": "97110", "icd10_code": "M25561",
		},
		DenialReasonCodes: []string{"OA-18", "CO-999"},
	}

	bundling := baseInput()
	bundling.DenialReasonCodes = []string{"CO-97", "CO-4", "CO-29"}
	bundling.PayerClass = "medicare_advantage"
	bundling.Claim["cpt_code"] = "20610"
	bundling.Claim["billed_amount"] = 12500.5

	for name, in := range map[string]Input{"full": full, "minimal": minimal, "bundling": bundling} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := marshal(t, generate(t, in))
			path := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (run go test -update and review the diff):\n%s", path, got)
			}
		})
	}
}

func marshal(t *testing.T, a Appeal) []byte {
	t.Helper()
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func TestMoney(t *testing.T) {
	t.Parallel()
	for x, want := range map[float64]string{0: "$0.00", 7.5: "$7.50", 999.99: "$999.99", 1000: "$1,000.00", 12500.5: "$12,500.50", 10000000: "$10,000,000.00"} {
		if got := money(x); got != want {
			t.Errorf("money(%v): got %s, want %s", x, got, want)
		}
	}
}

func TestEveryCategoryHasAnArgument(t *testing.T) {
	t.Parallel()
	titles := map[string]Category{}
	for _, c := range carcs {
		a := argument(c.category, normalised{})
		if prev, ok := titles[a.Title]; ok && prev != c.category {
			t.Errorf("categories %s and %s share the title %q", prev, c.category, a.Title)
		}
		titles[a.Title] = c.category
	}
	if len(titles) != 9 {
		t.Errorf("the CARC table covers %d categories, want all 9", len(titles))
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	in := baseInput()
	if a := generate(t, in); a.Warnings != nil {
		t.Errorf("without remark codes: got warnings %v", a.Warnings)
	}
	in.RemarkCodes = []string{"ma130", "N211", "N115", "MA130"}
	a := generate(t, in)
	if len(a.Warnings) != 2 || !strings.HasPrefix(a.Warnings[0], "RARC MA130:") || !strings.HasPrefix(a.Warnings[1], "RARC N211:") {
		t.Errorf("got warnings %q, want MA130's then N211's", a.Warnings)
	}
	if len(a.RemarkCodes) != 3 || a.RemarkCodes[0].Code != "MA130" {
		t.Errorf("remark codes: got %+v, want MA130, N211, N115 once each", a.RemarkCodes)
	}
}
