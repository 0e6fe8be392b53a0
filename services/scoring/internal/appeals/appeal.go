// Package appeals generates the structured appeal of a denied claim (POST /v1/claims/appeals/generate):
// the denial reasons explained and categorised, the argument and evidence for each category, the
// appeal deadline, and a letter. It is a deterministic template engine, not a model: the same input
// gives byte-identical output, and nothing in the output depends on the clock.
//
// The generator minimises PHI: the letter names the claim by external_claim_id and leaves the patient's
// name and member id as placeholders for the caller to fill in its own system, and patient_id, accepted
// because callers reuse their scoring payload, appears nowhere in the output, not even hashed into the
// appeal id.
package appeals

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Version is the generator version every appeal carries (README "Appeals": "appeals generator 0.1.2").
const Version = "0.1.2"

// Input is the claim context of one appeal, as the request body carries it.
type Input struct {
	// Claim is the denied claim in the scoring payload's field names. external_claim_id, service_date,
	// payer_id, cpt_code and icd10_code are required (claim.ValidateAppealClaim); the rest are optional.
	Claim map[string]any `json:"claim"`
	// DenialReasonCodes are the remittance's CARCs as GROUP-CODE ("CO-50", "PR-204"), 1 to 20 of them,
	// primary reason first. Case and a space or no separator are tolerated ("co 50", "CO50").
	DenialReasonCodes []string `json:"denial_reason_codes"`
	// RemarkCodes are the remittance's RARCs ("N115", "M127", "MA130"), at most 20; optional.
	RemarkCodes []string `json:"remark_codes,omitempty"`
	// DenialDate is the date of the denial notice, YYYY-MM-DD; without it there is no deadline.
	DenialDate string `json:"denial_date,omitempty"`
	// PayerClass is medicare, medicare_advantage, medicaid or commercial; it sets the appeal window.
	PayerClass string `json:"payer_class,omitempty"`
	// PayerName addresses the letter ("Acme Health Plan"); optional, at most 100 characters.
	PayerName string `json:"payer_name,omitempty"`
	// PriorAuthNumber is the authorization on file for the service; optional, at most 50 characters.
	PriorAuthNumber string `json:"prior_auth_number,omitempty"`
	// Notes is short context from the provider that the letter quotes; optional, at most 500
	// characters, and it must not hold the patient_id or a social security number.
	Notes string `json:"notes,omitempty"`
}

// Appeal is the generated appeal.
type Appeal struct {
	GeneratorVersion string `json:"generator_version"`
	// AppealID is "apl_" and the first 16 hex digits of the SHA-256 of the canonical input (the
	// normalised input without patient_id, plus the generator version), so a retried request gets the
	// same id and a new generator version a new one.
	AppealID        string `json:"appeal_id"`
	ExternalClaimID string `json:"external_claim_id"`
	// Priority is high when a category needs clinical evidence (medical_necessity,
	// prior_authorization): those appeals take longest to assemble and recover the most. Otherwise normal.
	Priority string `json:"priority"`
	// AppealDeadline is absent when the input has no denial_date.
	AppealDeadline *Deadline    `json:"appeal_deadline,omitempty"`
	ReasonCodes    []ReasonCode `json:"reason_codes"`
	RemarkCodes    []RemarkCode `json:"remark_codes,omitempty"`
	Arguments      []Argument   `json:"arguments"`
	Evidence       []Evidence   `json:"evidence"`
	Letter         Letter       `json:"letter"`
	// Warnings say when an appeal may be the wrong remedy (remark codes MA130, N211); absent otherwise.
	Warnings []string `json:"warnings,omitempty"`
	// Placeholders are the tokens in the letter the caller replaces with values it holds and this
	// service does not (the patient's name, the provider's NPI, a signature).
	Placeholders []string `json:"placeholders"`
}

// ReasonCode is one denial reason, explained.
type ReasonCode struct {
	Code        string   `json:"code"`  // normalised, "CO-50"
	Group       string   `json:"group"` // CO, PR, OA or PI
	Description string   `json:"description"`
	Category    Category `json:"category"`
}

// RemarkCode is one remark code, explained.
type RemarkCode struct {
	Code        string `json:"code"`
	Description string `json:"description"`
}

// Argument is the case against the denial for one category.
type Argument struct {
	Category   Category `json:"category"`
	Title      string   `json:"title"`
	Text       string   `json:"text"`
	References []string `json:"references"`
}

// Evidence is one document to enclose.
type Evidence struct {
	Item     string `json:"item"`
	Required bool   `json:"required"`
	Reason   string `json:"reason"`
}

// Letter is the appeal letter: salutation, claim identification, basis for appeal, one section per
// argument, requested action and closing.
type Letter struct {
	Subject  string    `json:"subject"`
	Sections []Section `json:"sections"`
}

// Section is one part of the letter.
type Section struct {
	Heading string `json:"heading"`
	Body    string `json:"body"`
}

// Generate validates in and builds its appeal. Invalid input gives a claim.Errors whose fields are the
// input's JSON names, claim fields prefixed with "claim." ("claim.cpt_code"). A reason code that is
// well formed but not in the generator's table is argued as category other, not rejected.
func Generate(in Input) (Appeal, error) {
	n, errs := normalise(in, time.Now())
	if len(errs) > 0 {
		return Appeal{}, errs
	}
	a := Appeal{
		GeneratorVersion: Version,
		AppealID:         appealID(n),
		ExternalClaimID:  n.claim.ExternalClaimID,
		Priority:         "normal",
		ReasonCodes:      n.reasons,
		RemarkCodes:      n.remarks,
		Warnings:         n.warnings,
	}
	if n.hasDenialDate {
		a.AppealDeadline = deadline(n.denialDate, n.payerClass)
	}
	for _, c := range n.categories() {
		if c == MedicalNecessity || c == PriorAuthorization {
			a.Priority = "high"
		}
		a.Arguments = append(a.Arguments, argument(c, n))
	}
	a.Evidence = evidence(n)
	a.Letter = letter(n, a.Arguments, a.Evidence)
	a.Placeholders = slices.Clone(placeholders)
	return a, nil
}

// appealID hashes the canonical input: the normalised fields in a fixed order (encoding/json writes
// struct fields in declaration order and map keys sorted), without patient_id, so an identifier of the
// patient cannot be recovered by hashing candidates.
func appealID(n normalised) string {
	payload := maps.Clone(n.payload)
	delete(payload, "patient_id")
	canonical := struct {
		GeneratorVersion  string         `json:"generator_version"`
		Claim             map[string]any `json:"claim"`
		DenialReasonCodes []string       `json:"denial_reason_codes"`
		RemarkCodes       []string       `json:"remark_codes"`
		DenialDate        string         `json:"denial_date"`
		PayerClass        PayerClass     `json:"payer_class"`
		PayerName         string         `json:"payer_name"`
		PriorAuthNumber   string         `json:"prior_auth_number"`
		Notes             string         `json:"notes"`
	}{Version, payload, n.reasonCodes(), n.remarkCodes(), n.denialDateText, n.payerClass, n.payerName, n.priorAuth, n.notes}
	// The values are strings, numbers and maps of them: Marshal cannot fail.
	b, _ := json.Marshal(canonical)
	sum := sha256.Sum256(b)
	return "apl_" + hex.EncodeToString(sum[:8])
}
