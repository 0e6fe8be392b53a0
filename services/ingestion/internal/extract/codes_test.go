package extract

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestRecognizeCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, text string
		want       string // "SYSTEM value" joined by "; "
	}{
		// True positives.
		{"cpt with label", "CPT 70551 MRI brain", "CPT 70551"},
		{"cpt bare in a table row", "70553 MRI brain without contrast", "CPT 70553"},
		{"cpt range", "codes 70551-70553 and 72141 – 72158", "CPT 70551; CPT 70553; CPT 72141; CPT 72158"},
		{"cpt with modifier", "bill 70551-26 or 70553-TC", "CPT 70551; CPT 70553"},
		{"cpt list without spaces", "70551,70552/70553", "CPT 70551; CPT 70552; CPT 70553"},
		{"cpt in parentheses", "(CPT 95810, 95811)", "CPT 95810; CPT 95811"},
		{"cpt category II III and PLA", "Category II 3074F, Category III 0042T, PLA 0001U", "CPT 3074F; CPT 0042T; CPT 0001U"},
		{"anesthesia code", "00100 Anesthesia for salivary gland procedures", "CPT 00100"},
		{"CT modality is not a state", "CT 70450 head without contrast", "CPT 70450"},
		{"hcpcs", "HCPCS E0601, J1234; K0823 and L3000.", "HCPCS E0601; HCPCS J1234; HCPCS K0823; HCPCS L3000"},
		{"hcpcs pair", "E0601/E0470", "HCPCS E0601; HCPCS E0470"},
		{"hcpcs U code", "U0003 COVID-19 test", "HCPCS U0003"},
		{"icd dotted", "ICD-10-CM G47.33 and M54.50", "ICD-10-CM G47.33; ICD-10-CM M54.50"},
		{"icd seventh character", "S72.001A, T36.0X1A", "ICD-10-CM S72.001A; ICD-10-CM T36.0X1A"},
		{"icd letter in third place", "C4A.0 Merkel cell carcinoma", "ICD-10-CM C4A.0"},
		{"icd end of sentence", "diagnosis Z79.4.", "ICD-10-CM Z79.4"},
		{"icd U07 and U09 only", "U07.1 and U09.9 but not U10.1", "ICD-10-CM U07.1; ICD-10-CM U09.9"},
		{"icd undotted after ICD label", "ICD-10: E1165, E11", "ICD-10-CM E11.65; ICD-10-CM E11"},
		{"icd label beats hcpcs shape", "ICD-10-CM E0601", "ICD-10-CM E06.01"},
		{"nearer hcpcs label wins", "ICD-10-CM G47.33; HCPCS E0601", "ICD-10-CM G47.33; HCPCS E0601"},
		{"duplicates reported once", "70551, 70551 and 70551", "CPT 70551"},
		{"mixed", "Codes 70551 (CPT), E0601 (HCPCS) and E11.9 (ICD-10-CM)", "CPT 70551; HCPCS E0601; ICD-10-CM E11.9"},

		// False positives.
		{"year", "revised in 2024 and 2025", ""},
		{"zip after state", "Springfield, IL 62704", ""},
		{"zip plus four", "Hartford CT 06150-1234", ""},
		{"zip word", "ZIP 60601", ""},
		{"phone numbers", "Call 1-800-555-0142 or (312) 555-0198, fax 312.555.0177", ""},
		{"five digit phone group", "ext 555-01234", ""},
		{"dollar amounts", "$12500.00, $12,500, USD 12500, €15000", ""},
		{"decimal", "12345.67 units", ""},
		{"thousands", "12,345 and 1,250", ""},
		{"po box", "P.O. Box 40210", ""},
		{"policy number", "Policy No. 12345, policy 54321, #70551", ""},
		{"address", "Suite 10400, Room 20100", ""},
		{"quantities", "10000 members, 25000 units, 15000 mg, 50000%", ""},
		{"identifier", "RAD-00420 and SLP-70551", ""},
		{"date", "2025-01-15 and 01/15/2025", ""},
		{"vitamin", "vitamin B12 deficiency", ""},
		{"lower case", "e0601 and j1234", ""},
		{"version", "V2.1 release, Version E11.9", ""},
		{"longer tokens", "A1234B 123456 70551a x70551 ABC70551", ""},
		{"unused hcpcs letters", "F1234 I1234 N1234 O1234 W1234 X1234 Y1234 Z1234", ""},
		{"below anesthesia range", "00042", ""},
		{"model number", "Model A4253", ""},
		{"unicode neighbour", "é70551 70551é", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, code := range RecognizeCodes(c.text) {
				got = append(got, code.System+" "+code.Value)
			}
			if g := strings.Join(got, "; "); g != c.want {
				t.Errorf("RecognizeCodes(%q) = %q, want %q", c.text, g, c.want)
			}
		})
	}
}

func TestCodeDiff(t *testing.T) {
	t.Parallel()
	prev := "CPT 70551, 70553. HCPCS E0601. ICD-10-CM R51.9 and G47.33."
	cur := "CPT 70553, 71250, 70551. HCPCS E0601, E0470. ICD-10-CM G47.33."
	added, removed := CodeDiff(prev, cur)
	if want := []string{"71250", "E0470"}; !slices.Equal(added, want) {
		t.Errorf("added %v, want %v", added, want)
	}
	if want := []string{"R51.9"}; !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	if a, r := CodeDiff(prev, prev); a != nil || r != nil {
		t.Errorf("same text: added %v, removed %v; want none", a, r)
	}
}

var codeFormats = map[string]*regexp.Regexp{
	SystemCPT:     regexp.MustCompile(`^(?:[0-9]{5}|[0-9]{4}[FTU])$`),
	SystemHCPCS:   regexp.MustCompile(`^[ABCDEGHJKLMPQRSTUV][0-9]{4}$`),
	SystemICD10CM: regexp.MustCompile(`^(?:[A-TV-Z][0-9][0-9A-Z]|U0[79])(?:\.[0-9A-Z]{1,4})?$`),
}

func FuzzRecognizeCodes(f *testing.F) {
	for _, s := range []string{
		"CPT 70551-70553, 0042T; HCPCS E0601/E0470; ICD-10-CM S72.001A, E1165",
		"Springfield, IL 62704-1234. Call 1-800-555-0142. $12,500.00 10000 members",
		"ICD-10 E11.", "70551-", "-70551", "A0000.", "U07.1U09.9", "\xff70551\xfe", "é70551", "ICD E0601",
		"70551–", "– 70551", "Z3A.00 C7B.8", ",70551,", "$", "ICD-10-CM: F32A",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		codes := RecognizeCodes(s)
		seen := map[string]bool{}
		for _, c := range codes {
			re := codeFormats[c.System]
			if re == nil || !re.MatchString(c.Value) {
				t.Fatalf("RecognizeCodes(%q) returned %s %q, which does not match the %s format", s, c.System, c.Value, c.System)
			}
			if seen[c.Value] {
				t.Fatalf("RecognizeCodes(%q) returned %q twice", s, c.Value)
			}
			seen[c.Value] = true
			if !strings.Contains(s, c.Value) && !strings.Contains(s, strings.Replace(c.Value, ".", "", 1)) {
				t.Fatalf("RecognizeCodes(%q) returned %q, which is not in the text", s, c.Value)
			}
		}
		added, removed := CodeDiff(s, "")
		if len(added) != 0 || len(removed) != len(codes) {
			t.Fatalf("CodeDiff(%q, \"\") = %v, %v; want none added and %d removed", s, added, removed, len(codes))
		}
	})
}

func BenchmarkRecognizeCodes1MB(b *testing.B) {
	text := benchmarkDocument(1 << 20)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		RecognizeCodes(text)
	}
}

// benchmarkDocument returns policy-like text of about size bytes, one block per line, every line
// distinct.
func benchmarkDocument(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		switch i % 5 {
		case 0:
			fmt.Fprintf(&b, "%d. Section %d heading\n", i%90+1, i)
		case 1:
			fmt.Fprintf(&b, "%05d MRI of region %d without contrast material, followed by contrast material\n", 10000+i%89999, i)
		case 2:
			fmt.Fprintf(&b, "Members must meet criterion %d: documentation within the past %d days by the treating provider.\n", i, i%90)
		case 3:
			fmt.Fprintf(&b, "Prior authorization is required for HCPCS E%04d when supplied by vendor %d in the service area.\n", i%10000, i)
		default:
			fmt.Fprintf(&b, "Indication %d is considered medically necessary for ICD-10-CM M%02d.%d and related conditions.\n", i, i%100, i%10)
		}
	}
	return b.String()
}
