package extract

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/normalize"
)

const corpus = "../../testdata/corpus"

// requirePDFToText skips a test that needs pdftotext on a developer machine without it, and fails
// it in CI (CI=true), where poppler-utils is part of the install.
func requirePDFToText(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("pdftotext is required in CI: install poppler-utils: %v", err)
		}
		t.Skipf("pdftotext not installed (apt-get install poppler-utils): %v", err)
	}
}

func load(t testing.TB, file string) *normalize.Document {
	t.Helper()
	mediaType := map[string]string{".html": "text/html", ".pdf": "application/pdf", ".txt": "text/plain"}[filepath.Ext(file)]
	if mediaType == "application/pdf" {
		requirePDFToText(t)
	}
	f, err := os.Open(filepath.Join(corpus, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := normalize.Normalize(context.Background(), mediaType, f)
	if err != nil {
		t.Fatalf("Normalize(%s): %v", file, err)
	}
	return doc
}

// wantFact is the part of a Fact a corpus test pins: type, codes, side and section; the quote is
// checked by verification and by its content.
type wantFact struct {
	changeType string
	codes      string
	side       string
	section    string
	quoteHas   string
}

func (w wantFact) String() string {
	return fmt.Sprintf("%s [%s] %s %q", w.changeType, w.codes, w.side, w.section)
}

func describe(f Fact) string {
	return wantFact{f.ChangeType, strings.Join(f.AffectedCodes, " "), f.EvidenceSide, f.SectionHeading, ""}.String()
}

// TestExtractCorpus checks the facts listed in testdata/corpus/README.md.
func TestExtractCorpus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, prev, cur string
		want            []wantFact
	}{
		{"imaging HTML v1 to v2", "imaging-prior-auth/v1.html", "imaging-prior-auth/v2.html", []wantFact{
			{EffectiveDateChanged, "", SideCurrent, "Outpatient Advanced Imaging Prior Authorization Policy", "Effective Date: July 1, 2025"},
			{CodeAdded, "71250", SideCurrent, "Services Requiring Prior Authorization", "71250 CT thorax"},
			{PriorAuthAdded, "71250", SideCurrent, "Services Requiring Prior Authorization", "71250 CT thorax"},
			{CodeRemoved, "R51.9", SidePrevious, "Covered Indications", "Headache with red-flag features"},
			{CoverageRemoved, "R51.9", SidePrevious, "Covered Indications", "Headache with red-flag features"},
			{CriteriaChanged, "", SideCurrent, "Coverage Criteria", "within the past 60 days"},
		}},
		{"imaging HTML v1 to re-rendered v3", "imaging-prior-auth/v1.html", "imaging-prior-auth/v3.html", []wantFact{
			{EffectiveDateChanged, "", SideCurrent, "Outpatient Advanced Imaging Prior Authorization Policy", "Effective Date: July 1, 2025"},
			{CodeAdded, "71250", SideCurrent, "Services Requiring Prior Authorization", "71250 CT thorax"},
			{PriorAuthAdded, "71250", SideCurrent, "Services Requiring Prior Authorization", "71250 CT thorax"},
			{CodeRemoved, "R51.9", SidePrevious, "Covered Indications", "Headache with red-flag features"},
			{CoverageRemoved, "R51.9", SidePrevious, "Covered Indications", "Headache with red-flag features"},
			{CriteriaChanged, "", SideCurrent, "Coverage Criteria", "within the past 60 days"},
		}},
		{"imaging HTML v2 to re-rendered v3", "imaging-prior-auth/v2.html", "imaging-prior-auth/v3.html", nil},
		{"DME PDF v1 to v2", "dme-coverage/v1.pdf", "dme-coverage/v2.pdf", []wantFact{
			{EffectiveDateChanged, "", SideCurrent, "Durable Medical Equipment Coverage", "Effective Date: September 1, 2025"},
			{CodeAdded, "E10.9 E11.65 E2103", SideCurrent, "2. Covered Equipment", "Continuous glucose monitors (HCPCS E2103) are covered"},
			{CoverageRemoved, "E0627", SidePrevious, "2. Covered Equipment", "Seat lift mechanisms (HCPCS E0627) are covered"},
			{CoverageAdded, "E10.9 E11.65 E2103", SideCurrent, "2. Covered Equipment", "Continuous glucose monitors (HCPCS E2103) are covered"},
			{PriorAuthRemoved, "E0260", SidePrevious, "3. Prior Authorization", "E0260 Hospital bed, semi-electric"},
			{PriorAuthAdded, "E2103", SideCurrent, "3. Prior Authorization", "E2103 Continuous glucose monitor"},
			{CriteriaChanged, "", SideCurrent, "4. CPAP Continuation Criteria", "between day 31 and day 120"},
		}},
		{"sleep text v1 to v2", "sleep-testing/v1.txt", "sleep-testing/v2.txt", []wantFact{
			{PriorAuthAdded, "95800 95806 G0399", SideCurrent, "2. PRIOR AUTHORIZATION", "Prior authorization is required for home sleep apnea testing"},
			{CriteriaChanged, "", SideCurrent, "3. COVERAGE CRITERIA", "score of 10 or greater"},
			{CodeRemoved, "G0398", SidePrevious, "5. CODING", "HCPCS G0398 Home sleep study"},
			{CodeAdded, "G47.31", SideCurrent, "5. CODING", "G47.31 (primary central sleep apnea)"},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			prev, cur := load(t, c.prev), load(t, c.cur)
			facts, err := Extract(context.Background(), prev, cur)
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, f := range facts {
				got = append(got, describe(f))
			}
			for _, w := range c.want {
				want = append(want, w.String())
			}
			if !slices.Equal(got, want) {
				t.Fatalf("facts:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			for i, f := range facts {
				checkFact(t, f, prev, cur)
				if !strings.Contains(f.EvidenceQuote, c.want[i].quoteHas) {
					t.Errorf("fact %s quotes %q, want it to contain %q", describe(f), f.EvidenceQuote, c.want[i].quoteHas)
				}
			}
			added, removed := CodeDiff(prev.Text, cur.Text)
			for _, f := range facts {
				switch f.ChangeType {
				case CodeAdded:
					if !subset(f.AffectedCodes, added) {
						t.Errorf("code_added %v not within CodeDiff added %v", f.AffectedCodes, added)
					}
				case CodeRemoved:
					if !subset(f.AffectedCodes, removed) {
						t.Errorf("code_removed %v not within CodeDiff removed %v", f.AffectedCodes, removed)
					}
				}
			}
		})
	}
}

// checkFact asserts what every fact promises: a known type, sorted codes, a quote that is an exact
// substring of its side and verifies there, in the section it names.
func checkFact(t *testing.T, f Fact, prev, cur *normalize.Document) {
	t.Helper()
	switch f.ChangeType {
	case CoverageAdded, CoverageRemoved, PriorAuthAdded, PriorAuthRemoved, CodeAdded, CodeRemoved, EffectiveDateChanged, CriteriaChanged:
	default:
		t.Errorf("unknown change type %q", f.ChangeType)
	}
	if !slices.IsSorted(f.AffectedCodes) {
		t.Errorf("%s: codes %v not sorted", describe(f), f.AffectedCodes)
	}
	if f.Summary == "" || f.EvidenceQuote == "" || len(f.EvidenceQuote) > maxQuote {
		t.Errorf("%s: summary %q, quote %q", describe(f), f.Summary, f.EvidenceQuote)
	}
	doc := cur
	if f.EvidenceSide == SidePrevious {
		doc = prev
	}
	if !strings.Contains(doc.Text, f.EvidenceQuote) {
		t.Errorf("%s: quote %q is not a substring of the %s version", describe(f), f.EvidenceQuote, f.EvidenceSide)
	}
	side, section, ok := VerifyEvidence(f.EvidenceQuote, prev, cur)
	if !ok || side != f.EvidenceSide || section != f.SectionHeading {
		t.Errorf("%s: VerifyEvidence = %q, %q, %v; want %q, %q, true", describe(f), side, section, ok, f.EvidenceSide, f.SectionHeading)
	}
}

func subset(a, b []string) bool {
	for _, v := range a {
		if !slices.Contains(b, v) {
			return false
		}
	}
	return true
}

func textDoc(t *testing.T, s string) *normalize.Document {
	t.Helper()
	d, err := normalize.Normalize(context.Background(), "text/plain", strings.NewReader(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestExtractRules exercises the rule table on small documents. Each document starts with a title,
// which gives no context, and separates blocks with blank lines.
func TestExtractRules(t *testing.T) {
	t.Parallel()
	const title = "IMAGING POLICY\n\n"
	cases := []struct {
		name, prev, cur string
		want            []string
	}{
		{"prior auth negated",
			"PRIOR AUTHORIZATION\n\nPrior authorization is required for CPT 70551.\n",
			"PRIOR AUTHORIZATION\n\nPrior authorization is no longer required for CPT 70551.\n",
			[]string{`prior_auth_removed [70551] previous "PRIOR AUTHORIZATION"`}},
		{"prior auth required despite a nearby not",
			"SERVICES\n\nMRI of the brain (CPT 70551) is available.\n",
			"SERVICES\n\nMRI of the brain (CPT 70551) is available.\n\nPrior authorization is required for services that are not emergent (CPT 70551).\n",
			[]string{`prior_auth_added [70551] current "SERVICES"`}},
		{"prior auth stated without codes",
			"REQUIREMENTS\n\nRequests are reviewed within 3 business days.\n",
			"REQUIREMENTS\n\nRequests are reviewed within 3 business days.\n\nPrecertification is required for all outpatient PET scans.\n",
			[]string{`prior_auth_added [] current "REQUIREMENTS"`}},
		{"prior auth mention without requirement",
			"PROCESS\n\nSubmit forms by fax.\n",
			"PROCESS\n\nSubmit forms by fax.\n\nPrior authorization requests are answered within two days.\n",
			nil},
		{"moved paragraphs are no change",
			"PURPOSE\n\nFirst paragraph about coverage that is covered here.\n\nSecond paragraph that must stay.\n",
			"PURPOSE\n\nSecond paragraph that must stay.\n\nFirst paragraph about coverage that is covered here.\n",
			nil},
		{"same effective date in another format",
			"Effective Date: July 1, 2025\n\nLast Reviewed: 01/02/2025\n",
			"This policy is effective 07/01/2025.\n\nLast Reviewed: 06/30/2025\n",
			nil},
		{"effective date changed",
			"Effective Date: July 1, 2025\n\nBody text.\n",
			"Effective Date: Jan. 1, 2026\n\nBody text.\n",
			[]string{`effective_date_changed [] current "Effective Date: Jan. 1, 2026"`}},
		{"covered line turns not covered",
			"COVERED EQUIPMENT\n\nSeat lift mechanisms (HCPCS E0627) are covered for members with arthritis of the hip.\n",
			"COVERED EQUIPMENT\n\nSeat lift mechanisms (HCPCS E0627) are not covered for members with arthritis of the hip.\n",
			[]string{`coverage_removed [E0627] previous "COVERED EQUIPMENT"`}},
		{"not covered line turns covered",
			"EQUIPMENT\n\nStanding frames are considered experimental for members who can bear weight.\n",
			"EQUIPMENT\n\nStanding frames are considered medically necessary for members who can bear weight.\n",
			[]string{`coverage_added [] current "EQUIPMENT"`}},
		{"exclusion added under an exclusions heading",
			"EXCLUSIONS\n\nAir conditioners.\n",
			"EXCLUSIONS\n\nAir conditioners.\n\nHome modifications such as ramps.\n",
			[]string{`coverage_removed [] current "EXCLUSIONS"`}},
		{"exclusion removed",
			"EXCLUSIONS\n\nAir conditioners.\n\nHome modifications such as ramps.\n",
			"EXCLUSIONS\n\nAir conditioners.\n",
			[]string{`coverage_added [] previous "EXCLUSIONS"`}},
		{"indication added under a lead-in",
			"OVERVIEW\n\nImaging is considered medically necessary for the following indications:\n\n- Staging of a known cancer.\n",
			"OVERVIEW\n\nImaging is considered medically necessary for the following indications:\n\n- Staging of a known cancer.\n\n- Suspected spinal cord compression (ICD-10-CM G95.20).\n",
			[]string{`code_added [G95.20] current "OVERVIEW"`, `coverage_added [G95.20] current "OVERVIEW"`}},
		{"criterion added under a criteria heading",
			"COVERAGE CRITERIA\n\n- A trial of conservative therapy.\n",
			"COVERAGE CRITERIA\n\n- A trial of conservative therapy.\n\n- A documented neurological examination.\n",
			[]string{`criteria_changed [] current "COVERAGE CRITERIA"`}},
		{"title gives no context",
			"\x00Durable Medical Equipment Coverage\n\nRequests go to the vendor.\n",
			"\x00Durable Medical Equipment Coverage\n\nRequests go to the vendor.\n\nWheelchair cushions.\n",
			nil},
		{"date-only edit is no criteria change",
			"COVERED SERVICES\n\nLast Reviewed: January 15, 2025\n",
			"COVERED SERVICES\n\nLast Reviewed: July 20, 2025\n",
			nil},
		{"reworded line without rule words",
			"PURPOSE\n\nThis policy explains imaging.\n",
			"PURPOSE\n\nThis policy describes imaging.\n",
			nil},
		{"code moved between lines",
			"CODES\n\nCPT 70551 and 70553.\n\nCPT 72148.\n",
			"CODES\n\nCPT 70553.\n\nCPT 72148 and 70551.\n",
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			// A leading NUL marks a case that brings its own title.
			withTitle := func(s string) string {
				if strings.HasPrefix(s, "\x00") {
					return s[1:]
				}
				return title + s
			}
			prev, cur := textDoc(t, withTitle(c.prev)), textDoc(t, withTitle(c.cur))
			facts, err := Extract(context.Background(), prev, cur)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range facts {
				checkFact(t, f, prev, cur)
				d := describe(f)
				if f.ChangeType == EffectiveDateChanged {
					d = fmt.Sprintf("%s [%s] %s %q", f.ChangeType, strings.Join(f.AffectedCodes, " "), f.EvidenceSide, f.EvidenceQuote)
				}
				got = append(got, d)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("facts:\n  %s\nwant:\n  %s\nprev:\n%s\ncur:\n%s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "), prev.Text, cur.Text)
			}
		})
	}
}

func TestExtractEdges(t *testing.T) {
	t.Parallel()
	doc := textDoc(t, "POLICY\n\nPrior authorization is required for CPT 70551.\n")
	if facts, err := Extract(context.Background(), nil, doc); err != nil || facts != nil {
		t.Errorf("first version: got %v, %v; want no facts", facts, err)
	}
	if facts, err := Extract(context.Background(), doc, doc); err != nil || facts != nil {
		t.Errorf("same version: got %v, %v; want no facts", facts, err)
	}
	if _, err := Extract(context.Background(), doc, nil); err == nil {
		t.Error("nil current version: got no error")
	}
	prevText, curText := pathological(100_000)
	prev := &normalize.Document{Text: prevText, Sections: []normalize.Section{{End: len(prevText)}}}
	cur := &normalize.Document{Text: curText, Sections: []normalize.Section{{End: len(curText)}}}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := Extract(ctx, prev, cur); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("pathological input: got %v, want context.DeadlineExceeded", err)
	}
}

func TestSentenceBounds(t *testing.T) {
	t.Parallel()
	s := "Effective Jan. 1, 2025, e.g. for members. Prior authorization is required (CPT 70551; 70553). Next one!"
	lo := strings.Index(s, "Prior")
	a, b := sentenceBounds(s, lo, lo+5)
	if got, want := s[a:b], "Prior authorization is required (CPT 70551; 70553)."; got != want {
		t.Errorf("sentence %q, want %q", got, want)
	}
	lo = strings.Index(s, "members")
	a, b = sentenceBounds(s, lo, lo+7)
	if got, want := s[a:b], "Effective Jan. 1, 2025, e.g. for members."; got != want {
		t.Errorf("sentence %q, want %q", got, want)
	}
}

func TestNormalizeDate(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"July 1, 2025": "2025-07-01", "Jul 1 2025": "2025-07-01", "Jul. 1, 2025": "2025-07-01",
		"1 July 2025": "2025-07-01", "07/01/2025": "2025-07-01", "7/1/2025": "2025-07-01",
		"2025-07-01": "2025-07-01", "Sept. 1, 2025": "2025-09-01", "Sept 1, 2025": "2025-09-01",
		"13/45/2025": "13/45/2025",
	} {
		if got := normalizeDate(in); got != want {
			t.Errorf("normalizeDate(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkExtract1MB1Percent runs the whole extraction (diff, rules, quotes) on the diff benchmark's
// input.
func BenchmarkExtract1MB1Percent(b *testing.B) {
	prevText := benchmarkDocument(1 << 20)
	prev, err := normalize.Normalize(context.Background(), "text/plain", strings.NewReader(prevText))
	if err != nil {
		b.Fatal(err)
	}
	cur, err := normalize.Normalize(context.Background(), "text/plain", strings.NewReader(changedPercent(prev.Text, 1)))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(prev.Text)))
	b.ReportAllocs()
	var facts int
	for b.Loop() {
		fs, err := Extract(context.Background(), prev, cur)
		if err != nil {
			b.Fatal(err)
		}
		facts = len(fs)
	}
	b.ReportMetric(float64(facts), "facts")
}

// FuzzExtract checks Extract's promises on arbitrary pairs of texts: no panic, and every fact's
// quote is an exact substring of the side it cites and verifies there.
func FuzzExtract(f *testing.F) {
	for _, pair := range [][2]string{
		{"sleep-testing/v1.txt", "sleep-testing/v2.txt"},
	} {
		a, err := os.ReadFile(filepath.Join(corpus, pair[0]))
		if err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(corpus, pair[1]))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(a), string(b))
	}
	f.Add("CODES\n\nCPT 70551.\n", "CODES\n\nCPT 70553.\n")
	f.Add("Effective Date: July 1, 2025\n", "Effective Date: 07/02/2025\n")
	f.Add("EXCLUSIONS\n\nA.\n", "EXCLUSIONS\n\nPrior authorization is not required for E0601.\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		prev, err := normalize.Normalize(context.Background(), "text/plain", strings.NewReader(a))
		if err != nil {
			return
		}
		cur, err := normalize.Normalize(context.Background(), "text/plain", strings.NewReader(b))
		if err != nil {
			return
		}
		facts, err := Extract(context.Background(), prev, cur)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range facts {
			doc := cur
			if f.EvidenceSide == SidePrevious {
				doc = prev
			}
			if f.EvidenceQuote == "" || !strings.Contains(doc.Text, f.EvidenceQuote) {
				t.Fatalf("%s: quote %q is not in the %s text %q", describe(f), f.EvidenceQuote, f.EvidenceSide, doc.Text)
			}
			if _, _, ok := VerifyEvidence(f.EvidenceQuote, prev, cur); !ok {
				t.Fatalf("%s: quote %q does not verify", describe(f), f.EvidenceQuote)
			}
		}
	})
}
