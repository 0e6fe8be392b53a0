// Package claim holds the scoring service's view of a healthcare claim: the workflows that score it,
// the normalised claim every model reads, and the validation that turns a caller's JSON payload into
// one (with field-level errors that name the field and the rule).
package claim

import "time"

// Workflow identifies one scoring workflow of the README.
type Workflow string

// The three scoring workflows. Appeals are generated, not scored, and are not a Workflow.
const (
	Denial        Workflow = "healthcare.denial"
	PriorAuth     Workflow = "healthcare.prior_auth"
	Reimbursement Workflow = "healthcare.reimbursement"
)

// Workflows lists every workflow in the order the index shows them.
var Workflows = []Workflow{Denial, PriorAuth, Reimbursement}

// Claim is a validated, normalised claim. Fields a workflow does not require may be zero; the
// Has* flags say whether an optional value was given, because zero is a real value for some of them.
type Claim struct {
	ExternalClaimID string
	ServiceDate     time.Time // UTC midnight; zero when absent
	ProviderID      int64
	PayerID         int64
	CPTCode         string // 5 characters: CPT (5 digits, or 4 digits + F/T) or HCPCS Level II (letter + 4 digits)
	ICD10Code       string // upper case, with the dot after the third character (E11.9)
	BilledAmount    float64
	Units           float64 // 1 when absent
	PlaceOfService  string  // 2-digit CMS place-of-service code; empty when absent
	NetworkStatus   string  // in_network, out_of_network or unknown (the default)
	DataSource      string  // caller's routing hint, lower case; empty when absent
	PatientID       string  // caller-owned identifier; never logged
}
