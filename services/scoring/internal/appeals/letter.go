package appeals

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/trustlayer/trustlayer/services/scoring/internal/claim"
)

// The placeholders the letter leaves for the caller to fill from records this service never receives.
// The generator's own wording has no double braces, so a plain string substitution fills them.
const (
	phPatientName  = "{{patient_name}}"
	phMemberID     = "{{member_id}}"
	phProviderName = "{{provider_name}}"
	phProviderNPI  = "{{provider_npi}}"
	phSignature    = "{{signature}}"
)

var placeholders = []string{phMemberID, phPatientName, phProviderName, phProviderNPI, phSignature}

// argument writes the case for one category. The wording follows what payers' appeal reviewers look
// for: the specific claim line, the rule the denial relied on, and the document that answers it.
func argument(c Category, n normalised) Argument {
	cpt, dos, icd := n.claim.CPTCode, longDate(n), n.claim.ICD10Code
	a := Argument{Category: c}
	switch c {
	case MedicalNecessity:
		a.Title = "The service was medically necessary"
		a.Text = fmt.Sprintf("The service billed as %s on %s was reasonable and necessary to diagnose or treat the patient's condition (%s). "+
			"The enclosed clinical documentation records the symptoms, findings and prior treatment that support it, and the service meets the "+
			"coverage criteria for this diagnosis. We ask that a clinician of the same or a similar specialty review this appeal.", cpt, dos, icd)
		a.References = append(a.References, "The payer's medical policy or coverage criteria for "+cpt)
		if n.payerClass == Medicare || n.payerClass == MedicareAdvantage {
			a.References = append(a.References, "Social Security Act §1862(a)(1)(A) (reasonable and necessary services)")
		}
	case PriorAuthorization:
		a.Title = "Authorization requirements were met"
		if n.priorAuth != "" {
			a.Text = fmt.Sprintf("Authorization %s was obtained before the service and covers %s on %s. The denial should be reversed because the "+
				"authorization was on file; a copy of the approval is enclosed.", n.priorAuth, cpt, dos)
		} else {
			a.Text = fmt.Sprintf("Authorization was not required for %s under the patient's plan on %s, or the service could not safely be delayed "+
				"to obtain it. We ask the payer to confirm from the enclosed documentation that no authorization was required, or to grant a "+
				"retroactive authorization.", cpt, dos)
		}
		a.References = append(a.References, "The payer's prior authorization list in effect on "+dos)
	case Coding:
		a.Title = "The service was coded correctly"
		a.Text = fmt.Sprintf("The codes billed, procedure %s with diagnosis %s, were valid on %s and are supported by the enclosed documentation; "+
			"the diagnosis establishes the reason for the procedure. Where a code or modifier needed correcting, the corrected line is enclosed.", cpt, icd, dos)
		a.References = append(a.References, "AMA CPT code set and CMS HCPCS Level II code set", "ICD-10-CM Official Guidelines for Coding and Reporting")
	case Bundling:
		a.Title = "The service was separate and distinct"
		a.Text = fmt.Sprintf("The service billed as %s on %s was separate and distinct from the other services that day: it was performed at a "+
			"different session, site or organ system, as the enclosed documentation shows, so its payment is not included in another "+
			"procedure's. Where appropriate the line carries a modifier identifying the distinct service (59, XE, XS, XP or XU).", cpt, dos)
		a.References = append(a.References, "CMS National Correct Coding Initiative (NCCI) Policy Manual")
	case TimelyFiling:
		a.Title = "The claim was filed on time"
		a.Text = "The claim was submitted within the payer's filing limit. The enclosed clearinghouse acceptance report or payer acknowledgement " +
			"shows the original submission date. Where submission was delayed, the delay arose from circumstances the payer's timely filing " +
			"provisions except, such as retroactive eligibility or another payer's late adjudication."
		if n.payerClass == Medicare {
			a.References = append(a.References, "42 CFR 424.44 (Medicare: 12 months from the date of service)")
		} else {
			a.References = append(a.References, "The payer's timely filing provision")
		}
	case Duplicate:
		a.Title = "The claim is not a duplicate"
		a.Text = fmt.Sprintf("The service billed as %s on %s is distinct from any claim the payer processed before, as the enclosed documentation "+
			"shows: a separate encounter, a repeated procedure or different units. A repeated procedure carries the repeat-procedure modifier "+
			"(76, 77 or 91).", cpt, dos)
		a.References = append(a.References, "CPT modifiers 76, 77 and 91")
	case Eligibility:
		a.Title = "The patient was covered for this service"
		a.Text = fmt.Sprintf("The patient had active coverage with %s for the service on %s, as the enclosed eligibility verification shows, and "+
			"the service is a benefit of the plan. We ask the payer to re-verify eligibility and coordination of benefits and to reprocess the claim.",
			payer(n), dos)
		a.References = append(a.References, "ASC X12 270/271 eligibility response for "+dos)
	case Documentation:
		a.Title = "The requested information is enclosed"
		a.Text = fmt.Sprintf("The information needed to process the claim is enclosed: the complete records for the service on %s and any "+
			"attachment the payer requested. We ask the payer to process the claim with them.", dos)
		a.References = append(a.References, "The payer's request for information, if one was sent")
	default:
		a.Title = "The denial should be reconsidered"
		a.Text = fmt.Sprintf("We ask the payer to review the denial of the service billed as %s on %s. The enclosed documentation supports the "+
			"service as billed. If the denial is upheld, please explain the specific policy or contract term it relies on.", cpt, dos)
	}
	for _, r := range n.reasons {
		if r.Category == c {
			a.References = append(a.References, "CARC "+r.Code+": "+r.Description)
		}
	}
	return a
}

// evidence lists the documents to enclose: the denial and the claim for every appeal, then each
// category's documents, once each, required if any category requires them.
func evidence(n normalised) []Evidence {
	list := []Evidence{
		{"Remittance advice (835 or EOB) showing the denial", true, "Identifies the denied claim line and the reason codes being appealed."},
		{"Copy of the claim as submitted (837, CMS-1500 or UB-04)", true, "Shows the codes, dates and amounts the payer adjudicated."},
	}
	add := func(item string, required bool, reason string) {
		i := slices.IndexFunc(list, func(e Evidence) bool { return e.Item == item })
		if i < 0 {
			list = append(list, Evidence{item, required, reason})
			return
		}
		list[i].Required = list[i].Required || required
	}
	for _, c := range n.categories() {
		switch c {
		case MedicalNecessity:
			add("Clinical notes for the date of service", true, "Records the symptoms, findings and history that made the service necessary.")
			add("Letter of medical necessity from the treating provider", true, "States in the clinician's words why the service was needed and why alternatives were not appropriate.")
			add("The coverage policy, LCD or NCD the service meets", false, "Ties the clinical facts to the payer's own criteria.")
			add("Test results and prior treatment history", false, "Shows conservative or alternative treatment was tried where the policy requires it.")
		case PriorAuthorization:
			if n.priorAuth != "" {
				add("Authorization approval "+n.priorAuth, true, "Proves the authorization was on file for the service.")
			} else {
				add("Proof that no authorization was required, or records of the urgency that prevented obtaining it", true, "Answers the missing-authorization denial.")
			}
		case Coding:
			add("Procedure or operative note supporting the codes and modifiers", true, "Shows the documentation supports the codes billed.")
			add("Corrected claim line, if a code or modifier was wrong", false, "Lets the payer reprocess the line without a new claim.")
		case Bundling:
			add("Documentation showing the service was separate and distinct", true, "Supports payment outside the bundled procedure.")
			add("NCCI edit and modifier rationale", false, "Shows why the edit does not apply or is bypassed by a modifier.")
		case TimelyFiling:
			add("Proof of timely submission: clearinghouse acceptance report (999/277CA) or payer acknowledgement", true, "Shows the claim reached the payer within the filing limit.")
		case Duplicate:
			add("Documentation distinguishing this service from the earlier claim (times, sites, units)", true, "Shows the services are not the same.")
			add("Remittance of the earlier claim", false, "Lets the reviewer compare the two claims.")
		case Eligibility:
			add("Eligibility verification (271 response) for the date of service", true, "Shows active coverage on the date of service.")
			add("Other payer's remittance, if coordination of benefits applies", false, "Shows what the primary payer paid or denied.")
		case Documentation:
			add("The records or attachment the payer requested", true, "Supplies the information the claim lacked.")
		default:
			add("Documentation supporting the service as billed", true, "Gives the reviewer the facts of the service.")
		}
	}
	return list
}

// letter assembles the appeal letter.
func letter(n normalised, args []Argument, ev []Evidence) Letter {
	level := windows[n.payerClass].level
	subject := fmt.Sprintf("Appeal of denied claim %s, date of service %s", n.claim.ExternalClaimID, shortDate(n))
	if level != "" {
		subject = fmt.Sprintf("Request for %s: claim %s, date of service %s", level, n.claim.ExternalClaimID, shortDate(n))
	} else {
		level = "review"
	}

	var id strings.Builder
	line := func(label, value string) { fmt.Fprintf(&id, "%s: %s\n", label, value) }
	line("Claim number", n.claim.ExternalClaimID)
	line("Patient", phPatientName+", member ID "+phMemberID)
	line("Date of service", longDate(n))
	if n.claim.Units != 1 {
		line("Procedure code", fmt.Sprintf("%s (%s units)", n.claim.CPTCode, strconv.FormatFloat(n.claim.Units, 'f', -1, 64)))
	} else {
		line("Procedure code", n.claim.CPTCode)
	}
	line("Diagnosis code", n.claim.ICD10Code)
	if _, ok := n.payload["billed_amount"]; ok {
		line("Billed amount", money(n.claim.BilledAmount))
	}
	if name, ok := claim.PlaceOfServiceName(n.claim.PlaceOfService); ok {
		line("Place of service", n.claim.PlaceOfService+" ("+name+")")
	}
	if n.priorAuth != "" {
		line("Prior authorization number", n.priorAuth)
	}
	if n.hasDenialDate {
		line("Denial date", n.denialDate.Format("January 2, 2006"))
	}
	line("Denial reason codes", strings.Join(n.reasonCodes(), ", "))
	if len(n.remarks) > 0 {
		line("Remark codes", strings.Join(n.remarkCodes(), ", "))
	}

	var basis strings.Builder
	fmt.Fprintf(&basis, "We request a %s of the denial of claim %s. The claim was denied with these reasons:\n", level, n.claim.ExternalClaimID)
	for _, r := range n.reasons {
		fmt.Fprintf(&basis, "- %s: %s\n", r.Code, r.Description)
	}
	basis.WriteString("We believe the denial is incorrect for the reasons below.")
	if n.notes != "" {
		basis.WriteString("\n\nAdditional information from the provider: " + n.notes)
	}

	var action strings.Builder
	fmt.Fprintf(&action, "We ask %s to reverse the denial, reprocess claim %s and pay it according to the patient's benefits and the "+
		"provider's agreement. Enclosed:\n", payer(n), n.claim.ExternalClaimID)
	for _, e := range ev {
		if e.Required {
			fmt.Fprintf(&action, "- %s\n", e.Item)
		}
	}
	action.WriteString("If the denial is upheld, please send a written explanation citing the specific policy relied on and the next level of appeal available.")

	salutation := "Dear Appeals Department,"
	if n.payerName != "" {
		salutation = "Dear " + n.payerName + " Appeals Department,"
	}
	sections := []Section{
		{"Salutation", salutation},
		{"Claim identification", strings.TrimSuffix(id.String(), "\n")},
		{"Basis for appeal", basis.String()},
	}
	for _, a := range args {
		sections = append(sections, Section{a.Title, a.Text})
	}
	sections = append(sections,
		Section{"Requested action", action.String()},
		Section{"Closing", "Thank you for your review. Please contact our office with any questions about this appeal.\n\nSincerely,\n" +
			phSignature + "\n" + phProviderName + "\nNPI " + phProviderNPI},
	)
	return Letter{Subject: subject, Sections: sections}
}

func payer(n normalised) string {
	if n.payerName != "" {
		return n.payerName
	}
	return "the payer"
}

// longDate writes the service date as US correspondence does ("March 14, 2025").
func longDate(n normalised) string { return n.claim.ServiceDate.Format("January 2, 2006") }

// shortDate writes the service date in the MM/DD/YYYY form of the CMS-1500, for the subject line.
func shortDate(n normalised) string { return n.claim.ServiceDate.Format("01/02/2006") }

// money writes dollars with thousands separators and cents: $12,500.00.
func money(x float64) string {
	s := strconv.FormatFloat(x, 'f', 2, 64)
	whole, cents := s[:len(s)-3], s[len(s)-3:]
	var b strings.Builder
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return "$" + b.String() + cents
}
