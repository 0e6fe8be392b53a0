package appeals

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

// Rule ids of the appeal input's own rules; the claim's rules keep their claim package ids.
const (
	RuleReasonCodeFormat      = "reason_code_format"
	RuleRemarkCodeFormat      = "remark_code_format"
	RuleMaxItems              = "max_items"
	RulePayerClass            = "payer_class_enum"
	RulePriorAuthNumberFormat = "prior_auth_number_format"
	// RulePHI rejects notes that would put patient identifiers into the letter.
	RulePHI = "phi"
)

// Input bounds. Twenty codes is more than an 835 adjusts one claim line with; the text bounds keep a
// letter section readable.
const (
	maxCodes           = 20
	maxPayerName       = 100
	maxPriorAuthNumber = 50
	maxNotes           = 500
	// minEchoCheck is the shortest patient_id looked for inside notes: a shorter one ("7") would match
	// ordinary text.
	minEchoCheck = 4
)

// reasonCode is GROUP then CODE, with an optional hyphen or space between. Codes are 1-3 digits or a
// letter and 1-2 digits (A1, B7, P12, W1); groups are the four X12 claim adjustment group codes.
var (
	reasonCode = regexp.MustCompile(`^(CO|PR|OA|PI)[- ]?([A-Z]?[0-9]{1,3})$`)
	remarkCode = regexp.MustCompile(`^(MA|M|N)[0-9]{1,4}$`)
	// ssn finds a social security number in the dashed form people type.
	ssn              = regexp.MustCompile(`\b[0-9]{3}-[0-9]{2}-[0-9]{4}\b`)
	priorAuthPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// normalised is a validated input.
type normalised struct {
	claim          claim.Claim
	payload        map[string]any // the normalised claim payload
	reasons        []ReasonCode
	remarks        []RemarkCode
	warnings       []string
	denialDate     time.Time
	denialDateText string
	hasDenialDate  bool
	payerClass     PayerClass
	payerName      string
	priorAuth      string
	notes          string
}

// normalise validates in. The clock bounds denial_date (as the claim package bounds service_date),
// so an input that validates once validates, and generates the same appeal, ever after.
func normalise(in Input, now time.Time) (normalised, claim.Errors) {
	var n normalised
	var errs claim.Errors
	fail := func(field, rule, format string, args ...any) {
		errs = append(errs, claim.FieldError{Field: field, Rule: rule, Message: field + " " + fmt.Sprintf(format, args...)})
	}

	c, payload, claimErrs := claim.ValidateAppealClaim(in.Claim)
	for _, e := range claimErrs {
		// Every claim message begins with its field, so the prefix keeps message and field in step.
		errs = append(errs, claim.FieldError{Field: "claim." + e.Field, Rule: e.Rule, Message: "claim." + e.Message})
	}
	n.claim, n.payload = c, payload

	const codesField = "denial_reason_codes"
	switch {
	case len(in.DenialReasonCodes) == 0:
		fail(codesField, claim.RuleRequired, "is required: list at least one CARC code such as CO-50")
	case len(in.DenialReasonCodes) > maxCodes:
		fail(codesField, RuleMaxItems, "must hold at most %d codes (got %d)", maxCodes, len(in.DenialReasonCodes))
	}
	seen := map[string]bool{}
	for i, raw := range in.DenialReasonCodes {
		m := reasonCode.FindStringSubmatch(strings.ToUpper(strings.TrimSpace(raw)))
		if m == nil || isZero(m[2]) {
			fail(codesField, RuleReasonCodeFormat, "must hold CARC codes as GROUP-CODE, with group CO, PR, OA or PI, such as CO-50 (got %s at index %d)", quote(raw), i)
			continue
		}
		group, number := m[1], trimZeros(m[2])
		code := group + "-" + number
		if seen[code] {
			continue
		}
		seen[code] = true
		r := ReasonCode{Code: code, Group: group, Description: unknownCARC, Category: Other}
		if known, ok := carcs[number]; ok {
			r.Description, r.Category = known.description, known.category
		}
		n.reasons = append(n.reasons, r)
	}

	const remarksField = "remark_codes"
	if len(in.RemarkCodes) > maxCodes {
		fail(remarksField, RuleMaxItems, "must hold at most %d codes (got %d)", maxCodes, len(in.RemarkCodes))
	}
	seen = map[string]bool{}
	for i, raw := range in.RemarkCodes {
		code := strings.ToUpper(strings.TrimSpace(raw))
		if !remarkCode.MatchString(code) {
			fail(remarksField, RuleRemarkCodeFormat, "must hold RARC codes such as N115, M127 or MA130 (got %s at index %d)", quote(raw), i)
			continue
		}
		if seen[code] {
			continue
		}
		seen[code] = true
		r, ok := rarcs[code]
		if !ok {
			r.description = unknownRARC
		}
		n.remarks = append(n.remarks, RemarkCode{Code: code, Description: r.description})
		if r.warning != "" {
			n.warnings = append(n.warnings, r.warning)
		}
	}

	if s := strings.TrimSpace(in.DenialDate); s != "" {
		const field = "denial_date"
		y, m, d := now.UTC().Date()
		tomorrow := time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
		date, err := time.Parse(time.DateOnly, s)
		switch {
		case err != nil:
			fail(field, claim.RuleDateFormat, "must be a calendar date in YYYY-MM-DD form (got %s)", quote(in.DenialDate))
		case !c.ServiceDate.IsZero() && date.Before(c.ServiceDate):
			fail(field, claim.RuleDateRange, "must not be before the claim's service_date %s (got %s)", c.ServiceDate.Format(time.DateOnly), quote(s))
		case date.After(tomorrow):
			// A mistyped year would otherwise give a deadline years away, the one error that loses appeals.
			fail(field, claim.RuleDateRange, "must not be after tomorrow, UTC (got %s)", quote(s))
		default:
			n.denialDate, n.denialDateText, n.hasDenialDate = date, s, true
		}
	}

	n.payerClass = Unspecified
	if s := strings.ToLower(strings.TrimSpace(in.PayerClass)); s != "" {
		if _, ok := windows[PayerClass(s)]; !ok || PayerClass(s) == Unspecified {
			fail("payer_class", RulePayerClass, "must be medicare, medicare_advantage, medicaid or commercial (got %s)", quote(in.PayerClass))
		} else {
			n.payerClass = PayerClass(s)
		}
	}

	n.payerName = text(in.PayerName, "payer_name", maxPayerName, false, fail)
	if s := text(in.PriorAuthNumber, "prior_auth_number", maxPriorAuthNumber, false, fail); s != "" {
		if priorAuthPattern.MatchString(s) {
			n.priorAuth = s
		} else {
			fail("prior_auth_number", RulePriorAuthNumberFormat, "must be letters, digits, dots, hyphens and underscores (got %s)", quote(s))
		}
	}
	n.notes = text(in.Notes, "notes", maxNotes, true, fail)
	if n.notes != "" {
		if len(c.PatientID) >= minEchoCheck && strings.Contains(strings.ToLower(n.notes), strings.ToLower(c.PatientID)) {
			fail("notes", RulePHI, "must not repeat the claim's patient_id: the letter goes to the payer and names the claim by external_claim_id")
			n.notes = ""
		} else if ssn.MatchString(n.notes) {
			fail("notes", RulePHI, "must not hold a social security number")
			n.notes = ""
		}
	}

	if len(errs) > 0 {
		errs.Sort()
		return normalised{}, errs
	}
	return n, nil
}

// text trims a free-text field and checks its length and characters, returning "" when it fails.
// Notes may span lines; the other fields are single-line.
func text(raw, field string, maxLen int, multiline bool, fail func(field, rule, format string, args ...any)) string {
	s := strings.TrimSpace(raw)
	if s == "" {
		return ""
	}
	if n := utf8.RuneCountInString(s); n > maxLen {
		fail(field, claim.RuleMaxLength, "must be at most %d characters (got %d)", maxLen, n)
		return ""
	}
	control := func(r rune) bool { return unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t')) }
	if !utf8.ValidString(s) || strings.IndexFunc(s, control) >= 0 {
		fail(field, claim.RulePrintable, "must be printable text without control characters")
		return ""
	}
	return s
}

// isZero reports whether an all-digit code is zero: CARC numbering starts at 1.
func isZero(code string) bool { return strings.Trim(code, "0") == "" }

// trimZeros drops leading zeros of an all-digit code ("050" is 50), as remittances do not pad.
func trimZeros(code string) string {
	if code[0] < '0' || code[0] > '9' {
		return code
	}
	return strings.TrimLeft(code, "0")
}

// quote renders caller text for a message, cut to 40 characters.
func quote(s string) string {
	if utf8.RuneCountInString(s) > 40 {
		return strconv.Quote(string([]rune(s)[:40])) + "..."
	}
	return strconv.Quote(s)
}

// categories lists the reasons' categories in the order of their first code, the primary reason first.
func (n normalised) categories() []Category {
	var out []Category
	for _, r := range n.reasons {
		if !slices.Contains(out, r.Category) {
			out = append(out, r.Category)
		}
	}
	return out
}

func (n normalised) reasonCodes() []string {
	codes := make([]string, len(n.reasons))
	for i, r := range n.reasons {
		codes[i] = r.Code
	}
	return codes
}

func (n normalised) remarkCodes() []string {
	codes := make([]string, len(n.remarks))
	for i, r := range n.remarks {
		codes[i] = r.Code
	}
	return codes
}
