package claim

import (
	"cmp"
	"slices"
	"strings"
)

// Rule ids a FieldError carries. They are part of the API contract (clients branch on them), so a
// rule keeps its id when its message changes. VALIDATION.md lists each with its message.
const (
	RuleRequired        = "required"              // missing, null or blank
	RuleType            = "type"                  // wrong JSON type
	RuleUnknownField    = "unknown_field"         // a field the payload schema does not define
	RuleMaxLength       = "max_length"            // string longer than the schema allows
	RulePrintable       = "printable"             // control characters in free text
	RuleDateFormat      = "date_format"           // not a real calendar date in YYYY-MM-DD form
	RuleDateRange       = "date_range"            // before the ICD-10-CM era or too far ahead
	RulePositiveInteger = "positive_integer"      // provider_id, payer_id
	RuleCPTFormat       = "cpt_format"            // CPT Category I/II/III or HCPCS Level II
	RuleICD10Format     = "icd10_format"          // ICD-10-CM code shape
	RuleAmountRange     = "amount_range"          // billed_amount outside [0, 10,000,000]
	RuleAmountPrecision = "amount_precision"      // billed_amount with fractions of a cent
	RuleUnitsRange      = "units_range"           // units outside (0, 9999]
	RuleUnitsPrecision  = "units_precision"       // units with more than 3 decimals
	RulePlaceOfService  = "place_of_service_code" // not an assigned CMS place-of-service code
	RuleNetworkStatus   = "network_status_enum"   // not in_network, out_of_network or unknown
	RuleWorkflow        = "workflow"              // not one of the scoring workflows
)

// FieldError is one validation failure. Field is the payload field name (the top-level name for
// errors about the payload as a whole), Rule a stable snake_case rule id, and Message a sentence that
// begins with Field and names the rule, e.g.
// `place_of_service must be a 2-digit CMS place-of-service code (got "office")`.
type FieldError struct {
	Field   string `json:"field"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// Errors is every failure of one validation, sorted by field then rule. A nil Errors means valid;
// check len(errs) > 0 rather than comparing an error interface holding it with nil.
type Errors []FieldError

// Error joins the messages with "; ".
func (errs Errors) Error() string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Message)
	}
	return b.String()
}

// Sort orders errors by field, rule and message, so that the same payload always yields the same
// list whatever order Go's map iteration visited it in.
func (errs Errors) Sort() {
	slices.SortFunc(errs, func(a, b FieldError) int {
		return cmp.Or(cmp.Compare(a.Field, b.Field), cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Message, b.Message))
	})
}
