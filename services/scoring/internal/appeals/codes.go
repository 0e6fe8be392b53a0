package appeals

// Category groups denial reasons that are appealed the same way: with the same argument and evidence.
type Category string

// The categories of the denial reasons.
const (
	MedicalNecessity   Category = "medical_necessity"
	PriorAuthorization Category = "prior_authorization"
	Coding             Category = "coding"
	TimelyFiling       Category = "timely_filing"
	Duplicate          Category = "duplicate"
	Eligibility        Category = "eligibility"
	Bundling           Category = "bundling"
	Documentation      Category = "documentation"
	Other              Category = "other"
)

// carc is one supported Claim Adjustment Reason Code: its X12 description, abbreviated, and the
// category its appeal argues.
type carc struct {
	description string
	category    Category
}

// carcs holds the CARCs behind most professional-claim denials, keyed by code without the group (the
// group says who bears the amount, not why it was adjusted). Descriptions follow the X12 CARC list
// with its usage notes left out. A code not here is still accepted and argued as Other.
var carcs = map[string]carc{
	"1":   {"Deductible amount.", Other},
	"2":   {"Coinsurance amount.", Other},
	"3":   {"Co-payment amount.", Other},
	"4":   {"The procedure code is inconsistent with the modifier used, or a required modifier is missing.", Coding},
	"5":   {"The procedure code/type of bill is inconsistent with the place of service.", Coding},
	"6":   {"The procedure/revenue code is inconsistent with the patient's age.", Coding},
	"7":   {"The procedure/revenue code is inconsistent with the patient's gender.", Coding},
	"8":   {"The procedure code is inconsistent with the provider type/specialty (taxonomy).", Coding},
	"9":   {"The diagnosis is inconsistent with the patient's age.", Coding},
	"10":  {"The diagnosis is inconsistent with the patient's gender.", Coding},
	"11":  {"The diagnosis is inconsistent with the procedure.", Coding},
	"15":  {"The authorization number is missing, invalid, or does not apply to the billed services or provider.", PriorAuthorization},
	"16":  {"Claim/service lacks information or has submission/billing error(s).", Documentation},
	"18":  {"Exact duplicate claim/service.", Duplicate},
	"22":  {"This care may be covered by another payer per coordination of benefits.", Eligibility},
	"26":  {"Expenses incurred prior to coverage.", Eligibility},
	"27":  {"Expenses incurred after coverage terminated.", Eligibility},
	"29":  {"The time limit for filing has expired.", TimelyFiling},
	"31":  {"Patient cannot be identified as our insured.", Eligibility},
	"32":  {"Our records indicate the patient is not an eligible dependent.", Eligibility},
	"39":  {"Services denied at the time authorization/pre-certification was requested.", PriorAuthorization},
	"40":  {"Charges do not meet qualifications for emergent/urgent care.", MedicalNecessity},
	"45":  {"Charge exceeds fee schedule/maximum allowable or contracted/legislated fee arrangement.", Other},
	"50":  {"These are non-covered services because this is not deemed a 'medical necessity' by the payer.", MedicalNecessity},
	"55":  {"Procedure/treatment/drug is deemed experimental/investigational by the payer.", MedicalNecessity},
	"56":  {"Procedure/treatment has not been deemed 'proven to be effective' by the payer.", MedicalNecessity},
	"58":  {"Treatment was deemed by the payer to have been rendered in an inappropriate or invalid place of service.", Coding},
	"59":  {"Processed based on multiple or concurrent procedure rules.", Bundling},
	"96":  {"Non-covered charge(s).", Eligibility},
	"97":  {"The benefit for this service is included in the payment/allowance for another service/procedure that has already been adjudicated.", Bundling},
	"109": {"Claim/service not covered by this payer/contractor. You must send the claim/service to the correct payer/contractor.", Eligibility},
	"119": {"Benefit maximum for this time period or occurrence has been reached.", Eligibility},
	"146": {"Diagnosis was invalid for the date(s) of service reported.", Coding},
	"150": {"Payer deems the information submitted does not support this level of service.", MedicalNecessity},
	"151": {"Payment adjusted because the payer deems the information submitted does not support this many/frequency of services.", MedicalNecessity},
	"167": {"This (these) diagnosis(es) is (are) not covered.", MedicalNecessity},
	"170": {"Payment is denied when performed/billed by this type of provider.", Other},
	"181": {"Procedure code was invalid on the date of service.", Coding},
	"182": {"Procedure modifier was invalid on the date of service.", Coding},
	"185": {"The rendering provider is not eligible to perform the service billed.", Other},
	"197": {"Precertification/authorization/notification/pre-treatment absent.", PriorAuthorization},
	"198": {"Precertification/notification/authorization/pre-treatment exceeded.", PriorAuthorization},
	"204": {"This service/equipment/drug is not covered under the patient's current benefit plan.", Eligibility},
	"226": {"Information requested from the Billing/Rendering Provider was not provided or not provided timely or was insufficient/incomplete.", Documentation},
	"234": {"This procedure is not paid separately.", Bundling},
	"236": {"This procedure or procedure/modifier combination is not compatible with another procedure or procedure/modifier combination provided on the same day according to the National Correct Coding Initiative or workers compensation state regulations/fee schedule requirements.", Bundling},
	"242": {"Services not provided by network/primary care providers.", Other},
	"252": {"An attachment/other documentation is required to adjudicate this claim/service.", Documentation},
	"A1":  {"Claim/Service denied.", Other},
}

// unknownCARC describes a well-formed code the table does not hold.
const unknownCARC = "Adjustment reason code not in this generator's table; see the payer's remittance advice."

// rarc is one supported Remittance Advice Remark Code, which refines a CARC.
type rarc struct {
	description string
	// warning, when set, tells the caller the appeal may be the wrong remedy.
	warning string
}

// rarcs holds common RARCs. Descriptions follow the X12 RARC list, abbreviated.
var rarcs = map[string]rarc{
	"M51":  {"Missing/incomplete/invalid procedure code(s).", ""},
	"M76":  {"Missing/incomplete/invalid diagnosis or condition.", ""},
	"M127": {"Missing patient medical record for this service.", ""},
	"MA130": {"Your claim contains incomplete and/or invalid information, and no appeal rights are afforded because the claim is unprocessable. Please submit a new claim with the complete/correct information.",
		"RARC MA130: the payer treats the claim as unprocessable and affords no appeal rights; submit a corrected claim instead of this appeal."},
	"N20":  {"Service not payable with other service rendered on the same date.", ""},
	"N30":  {"Patient ineligible for this service.", ""},
	"N54":  {"Claim information is inconsistent with pre-certified/authorized services.", ""},
	"N115": {"This decision was based on a Local Coverage Determination (LCD).", ""},
	"N211": {"Alert: You may not appeal this decision.",
		"RARC N211: the payer states this decision may not be appealed; confirm appeal rights on the remittance before sending."},
	"N290": {"Missing/incomplete/invalid rendering provider primary identifier.", ""},
	"N386": {"This decision was based on a National Coverage Determination (NCD).", ""},
}

// unknownRARC describes a well-formed remark code the table does not hold.
const unknownRARC = "Remark code not in this generator's table; see the payer's remittance advice."
