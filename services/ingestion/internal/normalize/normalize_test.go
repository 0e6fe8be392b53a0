package normalize

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

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

func normalizeFile(t testing.TB, path, mediaType string) *Document {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := Normalize(context.Background(), mediaType, f)
	if err != nil {
		t.Fatalf("Normalize(%s): %v", path, err)
	}
	return doc
}

// render is the golden form of a document: its text, then its sections.
func render(d *Document) string {
	var b strings.Builder
	b.WriteString(d.Text)
	fmt.Fprintf(&b, "--- format %s, %d sections, sha256 %s\n", d.Format, len(d.Sections), d.CanonicalHash)
	for _, s := range d.Sections {
		fmt.Fprintf(&b, "%d level %d [%d,%d) %q\n", s.Index, s.Level, s.Start, s.End, s.Heading)
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	t.Parallel()
	cases := []struct{ file, mediaType string }{
		{"imaging-prior-auth/v1.html", "text/html"},
		{"imaging-prior-auth/v2.html", "text/html; charset=utf-8"},
		{"imaging-prior-auth/v3.html", "text/html"},
		{"dme-coverage/v1.pdf", "application/pdf"},
		{"dme-coverage/v2.pdf", "application/pdf"},
		{"sleep-testing/v1.txt", "text/plain"},
		{"sleep-testing/v2.txt", "text/plain; charset=utf-8"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			if strings.HasSuffix(c.file, ".pdf") {
				requirePDFToText(t)
			}
			got := render(normalizeFile(t, filepath.Join(corpus, c.file), c.mediaType))
			golden := filepath.Join("testdata", "golden", strings.NewReplacer("/", "-", ".", "-").Replace(c.file)+".txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("Normalize(%s) differs from %s (go test -run TestGolden -update rewrites it):\ngot:\n%s\nwant:\n%s", c.file, golden, got, want)
			}
		})
	}
}

// TestMarkupOnlyRerender: v3 of the imaging policy is v2 served by another CMS theme: windows-1252
// instead of UTF-8, a layout table instead of main/article, h3 instead of h2, ol instead of ul,
// paragraphs inside list items and cells, entities, a zero-width space, different chrome. README
// "Discovery": a re-render with different markup but the same text is not a change.
func TestMarkupOnlyRerender(t *testing.T) {
	t.Parallel()
	v1 := normalizeFile(t, filepath.Join(corpus, "imaging-prior-auth/v1.html"), "text/html")
	v2 := normalizeFile(t, filepath.Join(corpus, "imaging-prior-auth/v2.html"), "text/html")
	v3 := normalizeFile(t, filepath.Join(corpus, "imaging-prior-auth/v3.html"), "text/html")
	if v2.CanonicalHash != v3.CanonicalHash {
		t.Errorf("re-rendered v3 hash %s, want v2's %s; text diff:\nv2:\n%s\nv3:\n%s", v3.CanonicalHash, v2.CanonicalHash, v2.Text, v3.Text)
	}
	if v1.CanonicalHash == v2.CanonicalHash {
		t.Errorf("v1 and v2 differ in text but share hash %s", v1.CanonicalHash)
	}
	raw2, _ := os.ReadFile(filepath.Join(corpus, "imaging-prior-auth/v2.html"))
	raw3, _ := os.ReadFile(filepath.Join(corpus, "imaging-prior-auth/v3.html"))
	if bytes.Equal(raw2, raw3) {
		t.Fatal("v2 and v3 must differ in bytes for this test to mean anything")
	}
}

func normalizeString(t *testing.T, mediaType, s string) string {
	t.Helper()
	d, err := Normalize(context.Background(), mediaType, strings.NewReader(s))
	if err != nil {
		t.Fatalf("Normalize(%q): %v", s, err)
	}
	return d.Text
}

func TestHTMLRules(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, html, want string }{
		{"paragraphs and whitespace", "<p>  Prior\n\tauthorization   is <b>required</b>.</p><p>Next</p>",
			"Prior authorization is required.\nNext\n"},
		{"scripts styles templates dropped", "<style>p{}</style><script>var x='70551'</script><noscript>on</noscript><template><p>t</p></template><p>Body</p>",
			"Body\n"},
		{"nav and site header/footer dropped", "<header><a>Home</a></header><nav><ul><li>Menu</li></ul></nav><main><p>Body</p></main><footer>Copyright</footer>",
			"Body\n"},
		{"header inside article kept", "<article><header><h1>Title</h1></header><p>Body</p><footer>Revised 2025</footer></article>",
			"Title\nBody\nRevised 2025\n"},
		{"hidden content dropped", `<p hidden>a</p><p aria-hidden="true">b</p><p style="display: none">c</p><p style="visibility:hidden">d</p><div role="navigation">e</div><div class="x breadcrumb">f</div><p>kept</p>`,
			"kept\n"},
		{"list items one per line", "<ul><li>One</li><li><p>Two</p></li><li>Three<ul><li>Nested</li></ul></li></ul>",
			"One\nTwo\nThree\nNested\n"},
		{"table rows one per line", "<table><tr><th>Code</th><th>Description</th></tr><tr><td><p>70551</p></td><td>MRI <span>brain</span></td></tr><tr><td>70553</td><td>MRI<br>brain</td></tr></table>",
			"Code Description\n70551 MRI brain\n70553 MRI brain\n"},
		{"layout cell is a container", "<table><tr><td><h2>Coverage</h2><p>One</p><p>Two</p></td><td><p>Side</p></td></tr></table>",
			"Coverage\nOne\nTwo\nSide\n"},
		{"br splits blocks", "<p>Line one<br>Line two<br/><br>Line three</p>",
			"Line one\nLine two\nLine three\n"},
		{"pre keeps lines", "<pre>CPT   70551\n  CPT 70553\n\n</pre>",
			"CPT 70551\nCPT 70553\n"},
		{"block inside heading", "<h2><div>Covered</div> <span>Indications</span></h2><p>x</p>",
			"Covered Indications\nx\n"},
		{"entities and no-break spaces", "<p>A&nbsp;&amp;&#160;B&#x2009;C &lt;D&gt;</p>",
			"A & B C <D>\n"},
		{"invisible characters removed", "<p>pre\u00adauthori\u200bzation\ufeff</p>",
			"preauthorization\n"},
		{"NFC", "<p>Clarite\u0301</p>", "Clarit\u00e9\n"},
		{"unclosed tags repaired", "<p>one<p>two<li>three<div>four",
			"one\ntwo\nthree\nfour\n"},
		{"comments and doctype ignored", "<!DOCTYPE html><!-- <p>x</p> --><p>y</p>", "y\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := normalizeString(t, "text/html", c.html); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestHTMLHeadingsMakeSections(t *testing.T) {
	t.Parallel()
	d, err := Normalize(context.Background(), "text/html", strings.NewReader(
		"<p>Intro</p><h1>Policy</h1><p>a</p><h2>Covered</h2><p>b</p><p>c</p><h3>Codes</h3>"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Section{
		{0, "", 0, 0, 6},
		{1, "Policy", 1, 6, 15},
		{2, "Covered", 2, 15, 27},
		{3, "Codes", 3, 27, 33},
	}
	if fmt.Sprint(d.Sections) != fmt.Sprint(want) {
		t.Errorf("sections %v, want %v (text %q)", d.Sections, want, d.Text)
	}
	for off, heading := range map[int]string{0: "", 5: "", 6: "Policy", 26: "Covered", 32: "Codes"} {
		if s, ok := d.SectionAt(off); !ok || s.Heading != heading {
			t.Errorf("SectionAt(%d) = %q, %v; want %q", off, s.Heading, ok, heading)
		}
	}
	if _, ok := d.SectionAt(len(d.Text)); ok {
		t.Errorf("SectionAt(len(Text)) found a section")
	}
}

func TestCharsets(t *testing.T) {
	t.Parallel()
	long := "<head><title>t</title>" + strings.Repeat("<meta name=x content=y>", 60) + "</head>"
	cases := []struct{ name, mediaType, body, want string }{
		{"meta windows-1252", "text/html", "<meta charset=windows-1252><p>Clarit\xe9</p>", "Clarité\n"},
		{"header charset wins over meta", "text/html; charset=iso-8859-1", "<meta charset=utf-8><p>Clarit\xe9</p>", "Clarité\n"},
		{"utf-8 after a long ascii head", "text/html", long + "<p>Clarité — 70551</p>", "Clarité — 70551\n"},
		{"undeclared latin-1 falls back to windows-1252", "text/html", "<p>Clarit\xe9 \x96 x</p>", "Clarité – x\n"},
		{"utf-8 bom", "text/html", "\xef\xbb\xbf<p>é</p>", "é\n"},
		{"utf-16le bom text", "text/plain", "\xff\xfeA\x00\xe9\x00", "Aé\n"},
		{"plain text label", "text/plain; charset=windows-1252", "Clarit\xe9", "Clarité\n"},
		{"plain text ignores meta", "text/plain", "<meta charset=windows-1252> é", "<meta charset=windows-1252> é\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := normalizeString(t, c.mediaType, c.body); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestTextRules(t *testing.T) {
	t.Parallel()
	const wrapped = "MEDICAL POLICY ON SLEEP TESTING\n\n" +
		"1. PURPOSE\n" +
		"This policy describes the coverage of sleep testing for adult members\n" +
		"with symptoms of obstructive sleep apnea, and the documentation that\n" +
		"the plan requires.\n" +
		"Covered indications:\n" +
		"  - Witnessed apneas reported by a bed partner during sleep at night.\n" +
		"  * An Epworth Sleepiness Scale score greater than 10, documented by\n" +
		"    the treating provider within the last year.\n" +
		"2.1 Codes\n" +
		"CPT 95810  Polysomnography, attended, four or more parameters, sleep\n" +
		"           staging\n" +
		"HCPCS G0399 Home sleep study test with a type III portable monitor\n" +
		"95800\n" +
		"Sleep study, unattended\n" +
		"Section 3\n" +
		"Prior authorization is required for these services when billed (CPT\n" +
		"95810, 95811) by a facility outside the network of the plan, always.\n" +
		"1. The member has had a sleep study.\n"
	d, err := Normalize(context.Background(), "text/plain", strings.NewReader(wrapped))
	if err != nil {
		t.Fatal(err)
	}
	want := "MEDICAL POLICY ON SLEEP TESTING\n" +
		"1. PURPOSE\n" +
		"This policy describes the coverage of sleep testing for adult members with symptoms of obstructive sleep apnea, and the documentation that the plan requires.\n" +
		"Covered indications:\n" +
		"Witnessed apneas reported by a bed partner during sleep at night.\n" +
		"An Epworth Sleepiness Scale score greater than 10, documented by the treating provider within the last year.\n" +
		"2.1 Codes\n" +
		"CPT 95810 Polysomnography, attended, four or more parameters, sleep staging\n" +
		"HCPCS G0399 Home sleep study test with a type III portable monitor\n" +
		"95800 Sleep study, unattended\n" +
		"Section 3\n" +
		"Prior authorization is required for these services when billed (CPT 95810, 95811) by a facility outside the network of the plan, always.\n" +
		"1. The member has had a sleep study.\n"
	if d.Text != want {
		t.Errorf("text:\n%s\nwant:\n%s", d.Text, want)
	}
	var got []string
	for _, s := range d.Sections {
		got = append(got, fmt.Sprintf("%d:%s", s.Level, s.Heading))
	}
	wantSecs := []string{"1:MEDICAL POLICY ON SLEEP TESTING", "1:1. PURPOSE", "2:Covered indications:", "2:2.1 Codes", "1:Section 3"}
	if fmt.Sprint(got) != fmt.Sprint(wantSecs) {
		t.Errorf("sections %v, want %v", got, wantSecs)
	}
}

func TestHeadingLike(t *testing.T) {
	t.Parallel()
	cases := []struct {
		line  string
		first bool
		level int
		ok    bool
	}{
		{"1. Policy Statement", false, 1, true},
		{"2.1 Coverage Criteria", false, 2, true},
		{"IV. Coding", false, 1, true},
		{"Section 3: Exclusions", false, 1, true},
		{"Part B", false, 1, true},
		{"B. Documentation", false, 2, true},
		{"COVERAGE CRITERIA", false, 1, true},
		{"Covered indications:", false, 2, true},
		{"Durable Medical Equipment Coverage", true, 1, true},
		{"Durable Medical Equipment Coverage", false, 0, false},
		{"1. The member has had a sleep study.", false, 0, false},
		{"12 months of therapy", false, 0, false},
		{"HCPCS E0601", false, 0, false},
		{"CPT 70551:", false, 0, false},
		{"The following items are considered not medically necessary and are not covered:", false, 0, false},
		{"Note: see the member handbook.", false, 0, false},
		{"1.", false, 0, false},
	}
	for _, c := range cases {
		level, ok := headingLike(c.line, c.first)
		if level != c.level || ok != c.ok {
			t.Errorf("headingLike(%q, first=%v) = %d, %v; want %d, %v", c.line, c.first, level, ok, c.level, c.ok)
		}
	}
}

func TestPageChromeDropped(t *testing.T) {
	t.Parallel()
	page := func(n int, body string) string {
		return fmt.Sprintf("Acme Health | Policy 17 | Revised 2025\n\n%s\n\nPage %d of 3\n", body, n)
	}
	text := page(1, "First page text.") + "\f" + page(2, "Second page text.") + "\f" + page(3, "Third page text.") + "\f"
	got := normalizeString(t, "text/plain", text)
	if want := "First page text.\nSecond page text.\nThird page text.\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// One page: nothing repeats, so only the page number goes.
	if got, want := normalizeString(t, "text/plain", page(1, "Only.")), "Acme Health | Policy 17 | Revised 2025\nOnly.\n"; got != want {
		t.Errorf("single page: got %q, want %q", got, want)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := Normalize(ctx, "image/png", strings.NewReader("x")); !errors.Is(err, ErrUnsupportedMediaType) {
		t.Errorf("image/png: got %v, want ErrUnsupportedMediaType", err)
	}
	if _, err := Normalize(ctx, "", strings.NewReader("x")); !errors.Is(err, ErrUnsupportedMediaType) {
		t.Errorf("empty media type: got %v, want ErrUnsupportedMediaType", err)
	}
	if _, err := Normalize(ctx, "text/html", strings.NewReader(strings.Repeat("a", 101)), WithMaxBytes(100)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("101 bytes over a 100-byte cap: got %v, want ErrTooLarge", err)
	}
	if _, err := Normalize(ctx, "text/plain", strings.NewReader(strings.Repeat("a", 100)), WithMaxBytes(100)); err != nil {
		t.Errorf("exactly at the cap: got %v, want success", err)
	}
	if _, err := Normalize(ctx, "text/html", strings.NewReader("<script>x</script><p> \u200b </p>")); !errors.Is(err, ErrNoText) {
		t.Errorf("no text: got %v, want ErrNoText", err)
	}
	if _, err := Normalize(ctx, "application/pdf", strings.NewReader("%PDF-1.4"), WithPDFToText(filepath.Join(t.TempDir(), "pdftotext"))); !errors.Is(err, ErrNoPDFExtractor) {
		t.Errorf("missing extractor: got %v, want ErrNoPDFExtractor", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Normalize(cancelled, "text/html", strings.NewReader("<p>x</p>")); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: got %v, want context.Canceled", err)
	}
}

func TestPDFErrors(t *testing.T) {
	t.Parallel()
	requirePDFToText(t)
	ctx := context.Background()
	if _, err := Normalize(ctx, "application/pdf", strings.NewReader("%PDF-1.4\nthis is not a pdf\n")); !errors.Is(err, ErrPDFExtract) {
		t.Errorf("malformed PDF: got %v, want ErrPDFExtract", err)
	}
	raw, err := os.ReadFile(filepath.Join(corpus, "dme-coverage/v1.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Normalize(ctx, "application/pdf", bytes.NewReader(raw), WithMaxBytes(int64(len(raw)-1))); !errors.Is(err, ErrTooLarge) {
		t.Errorf("PDF over the cap: got %v, want ErrTooLarge", err)
	}
	if _, err := Normalize(ctx, "application/pdf", bytes.NewReader(raw[:len(raw)/2])); err == nil {
		// pdftotext reconstructs some truncated files; it must then still produce text, not panic.
		t.Log("truncated PDF extracted without error")
	}
}

// TestPDFTimeout runs a stand-in extractor that hangs, and expects Normalize to give up at its
// time-out.
func TestPDFTimeout(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "slow-pdftotext")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := Normalize(context.Background(), "application/pdf", strings.NewReader("%PDF-1.4"),
		WithPDFToText(script), WithPDFTimeout(200*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v, want about the 200ms time-out", d)
	}
}

func TestDeeplyNestedHTML(t *testing.T) {
	t.Parallel()
	html := strings.Repeat("<div>", 2000) + "<h2>Deep</h2><p>Still text</p>" + strings.Repeat("</div>", 2000)
	if got, want := normalizeString(t, "text/html", html), "Deep\nStill text\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// checkInvariants asserts what every Document promises.
func checkInvariants(t *testing.T, d *Document) {
	t.Helper()
	if !utf8.ValidString(d.Text) {
		t.Fatalf("text is not valid UTF-8: %q", d.Text)
	}
	if !norm.NFC.IsNormalString(d.Text) {
		t.Fatalf("text is not NFC: %q", d.Text)
	}
	if d.Text == "" || !strings.HasSuffix(d.Text, "\n") {
		t.Fatalf("text %q does not end with a newline", d.Text)
	}
	for _, line := range strings.Split(strings.TrimSuffix(d.Text, "\n"), "\n") {
		if line == "" || strings.TrimSpace(line) != line || strings.Contains(line, "  ") ||
			strings.ContainsAny(line, "\t\r\f\v\u00a0\u200b") {
			t.Fatalf("line %q is not canonical", line)
		}
	}
	if d.CanonicalHash != Hash(d.Text) {
		t.Fatalf("hash %s does not match text", d.CanonicalHash)
	}
	end := 0
	for i, s := range d.Sections {
		if s.Index != i || s.Start != end || s.End <= s.Start || (i > 0 && s.Heading == "") {
			t.Fatalf("section %d %+v breaks the partition (previous end %d)", i, s, end)
		}
		if s.Heading != "" && !strings.HasPrefix(d.Text[s.Start:], s.Heading+"\n") {
			t.Fatalf("section %d heading %q is not the line at %d", i, s.Heading, s.Start)
		}
		end = s.End
	}
	if end != len(d.Text) {
		t.Fatalf("sections end at %d, text at %d", end, len(d.Text))
	}
}

func TestCorpusInvariants(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"imaging-prior-auth/v1.html", "imaging-prior-auth/v3.html"} {
		checkInvariants(t, normalizeFile(t, filepath.Join(corpus, f), "text/html"))
	}
	checkInvariants(t, normalizeFile(t, filepath.Join(corpus, "sleep-testing/v1.txt"), "text/plain"))
}

func FuzzNormalizeHTML(f *testing.F) {
	for _, file := range []string{"imaging-prior-auth/v1.html", "imaging-prior-auth/v3.html"} {
		b, err := os.ReadFile(filepath.Join(corpus, file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"<p>a<p>b", "<table><tr><td><p>x<td>y", "<pre>a\n\n b</pre>", "<h1><h2>x</h2></h1>",
		"<svg><p>x</svg>", "<math><mi>x</mi></math>", "\xff\xfe<\x00p\x00>", "<meta charset=sjis><p>\x82\xa0",
		strings.Repeat("<div>", 600), "<select><option>x</select><p>y", "<p>Clarite\u0301 \u200b\u00ad</p>",
		"<td><td><td><table><tr><td><h1>", "<frameset><frame></frameset>", "<p>\x00\x01\x1b[31m</p>",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Normalize(context.Background(), "text/html", bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrNoText) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		checkInvariants(t, d)
	})
}

// benchmarkHTML returns a policy page of about size bytes: the corpus page with its policy body
// repeated, each copy's numbers changed so that no two blocks are equal.
func benchmarkHTML(b *testing.B, size int) []byte {
	raw, err := os.ReadFile(filepath.Join(corpus, "imaging-prior-auth/v1.html"))
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	start, end := strings.Index(s, "<h2>Purpose</h2>"), strings.Index(s, "</article>")
	body := s[start:end]
	var out strings.Builder
	out.WriteString(s[:start])
	for i := 0; out.Len() < size-len(s[end:]); i++ {
		out.WriteString(strings.ReplaceAll(body, "2025", fmt.Sprint(3000+i)))
	}
	out.WriteString(s[end:])
	return []byte(out.String())
}

func BenchmarkNormalizeHTML100KB(b *testing.B) {
	page := benchmarkHTML(b, 100<<10)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Normalize(context.Background(), "text/html", bytes.NewReader(page)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNormalizePDF(b *testing.B) {
	requirePDFToText(b)
	raw, err := os.ReadFile(filepath.Join(corpus, "dme-coverage/v1.pdf"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Normalize(context.Background(), "application/pdf", bytes.NewReader(raw)); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzNormalizeText covers the line heuristics that plain text and pdftotext output share.
func FuzzNormalizeText(f *testing.F) {
	b, err := os.ReadFile(filepath.Join(corpus, "sleep-testing/v1.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	for _, s := range []string{
		"1.\n", "A.\nB.", "Section\n", "• \n- x\n(a) y", "\f\f\fPage 1 of 2\f", "CPT 70551\n\n95800\nx",
		"TITLE\n1. A\n1.1 B\nC:\nD:\n", "\xe9\r\n\r\x00", ":\n:\n", "12345 678\n70551:",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Normalize(context.Background(), "text/plain", bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrNoText) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		checkInvariants(t, d)
	})
}
