package claim

import "strings"

// procedureCode upper-cases a trimmed procedure code and reports whether it has the shape of a code
// a professional claim's SV101-2 carries. Five characters in all:
//   - CPT Category I: 5 digits (99213);
//   - CPT codes with a 4-digit stem and a letter suffix: Category II F (1036F), Category III T (0042T),
//     Proprietary Laboratory Analyses U (0001U), Multianalyte Assays M (0002M) and the vaccine
//     administration codes A (0001A). Labs and vaccine administration bill the U and A codes daily, so a
//     5-digit-only rule would reject real claims;
//   - HCPCS Level II: a letter A-V and 4 digits (G0439, J3490).
//
// It checks shape, not existence: the AMA and CMS publish code additions quarterly, and a stale list
// here would reject valid new codes.
func procedureCode(s string) (string, bool) {
	s = strings.ToUpper(s)
	if len(s) != 5 || !isDigit(s[1]) || !isDigit(s[2]) || !isDigit(s[3]) {
		return s, false
	}
	first, last := s[0], s[4]
	switch {
	case isDigit(first) && isDigit(last):
	case isDigit(first) && strings.IndexByte("FTUMA", last) >= 0:
	case 'A' <= first && first <= 'V' && isDigit(last):
	default:
		return s, false
	}
	return s, true
}

// diagnosisCode upper-cases a trimmed ICD-10-CM code, inserts the dot after the category when the
// caller left it out (E119 becomes E11.9), and reports whether the code has the ICD-10-CM shape: a
// letter, a digit, a letter or digit (the category, e.g. E11, C4A, U07), then optionally a dot and 1 to
// 4 letters or digits (etiology, anatomic site, severity, the 7th-character extension and its X
// placeholders). Like procedureCode it checks shape, not the yearly code list.
func diagnosisCode(s string) (string, bool) {
	s = strings.ToUpper(s)
	if len(s) < 3 || len(s) > 8 || !isUpper(s[0]) || !isDigit(s[1]) || !isAlnum(s[2]) {
		return s, false
	}
	rest := s[3:]
	if rest == "" {
		return s, true
	}
	dotted := rest[0] == '.'
	if dotted {
		rest = rest[1:]
	}
	if rest == "" || len(rest) > 4 {
		return s, false
	}
	for i := range len(rest) {
		if !isAlnum(rest[i]) {
			return s, false
		}
	}
	if !dotted {
		s = s[:3] + "." + rest
	}
	return s, true
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

func isAlnum(c byte) bool { return isDigit(c) || isUpper(c) }
