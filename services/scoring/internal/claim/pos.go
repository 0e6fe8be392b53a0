package claim

// placesOfService is the CMS Place of Service code set (the code set HIPAA names for the 837P and
// the CMS-1500 item 24B), indexed by code. An empty name is an unassigned code, which a payer rejects,
// so validation rejects it too. Current to POS 66 (PACE center, CMS Transmittal 12779, effective
// 2024-08-01); a new CMS code needs a line here.
var placesOfService = [100]string{
	1:  "Pharmacy",
	2:  "Telehealth Provided Other than in Patient's Home",
	3:  "School",
	4:  "Homeless Shelter",
	5:  "Indian Health Service Free-standing Facility",
	6:  "Indian Health Service Provider-based Facility",
	7:  "Tribal 638 Free-standing Facility",
	8:  "Tribal 638 Provider-based Facility",
	9:  "Prison/Correctional Facility",
	10: "Telehealth Provided in Patient's Home",
	11: "Office",
	12: "Home",
	13: "Assisted Living Facility",
	14: "Group Home",
	15: "Mobile Unit",
	16: "Temporary Lodging",
	17: "Walk-in Retail Health Clinic",
	18: "Place of Employment-Worksite",
	19: "Off Campus-Outpatient Hospital",
	20: "Urgent Care Facility",
	21: "Inpatient Hospital",
	22: "On Campus-Outpatient Hospital",
	23: "Emergency Room - Hospital",
	24: "Ambulatory Surgical Center",
	25: "Birthing Center",
	26: "Military Treatment Facility",
	27: "Outreach Site/Street",
	31: "Skilled Nursing Facility",
	32: "Nursing Facility",
	33: "Custodial Care Facility",
	34: "Hospice",
	41: "Ambulance - Land",
	42: "Ambulance - Air or Water",
	49: "Independent Clinic",
	50: "Federally Qualified Health Center",
	51: "Inpatient Psychiatric Facility",
	52: "Psychiatric Facility-Partial Hospitalization",
	53: "Community Mental Health Center",
	54: "Intermediate Care Facility/Individuals with Intellectual Disabilities",
	55: "Residential Substance Abuse Treatment Facility",
	56: "Psychiatric Residential Treatment Center",
	57: "Non-residential Substance Abuse Treatment Facility",
	58: "Non-residential Opioid Treatment Facility",
	60: "Mass Immunization Center",
	61: "Comprehensive Inpatient Rehabilitation Facility",
	62: "Comprehensive Outpatient Rehabilitation Facility",
	65: "End-Stage Renal Disease Treatment Facility",
	66: "Programs of All-Inclusive Care for the Elderly (PACE) Center",
	71: "Public Health Clinic",
	72: "Rural Health Clinic",
	81: "Independent Laboratory",
	99: "Other Place of Service",
}

// PlaceOfServiceName returns the CMS name of a 2-digit place-of-service code ("11" is "Office") and
// whether the code is assigned. The code must already be normalised: exactly two digits, no spaces.
func PlaceOfServiceName(code string) (string, bool) {
	if len(code) != 2 || !isDigit(code[0]) || !isDigit(code[1]) {
		return "", false
	}
	name := placesOfService[int(code[0]-'0')*10+int(code[1]-'0')]
	return name, name != ""
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
