// Command gen writes the corpus's PDF fixtures from their source files, byte for byte reproducibly.
//
// Run it from services/ingestion:
//
//	go run ./testdata/corpus/gen
//
// It reads every testdata/corpus/*/*.pdfsrc file and writes the .pdf beside it. The writer is this
// file's ~200 lines of standard library: the PDF writers for Go are either archived (go-pdf/fpdf,
// jung-kurt/gofpdf) or far larger than a fixture needs, and a dependency imported only under testdata/
// is dropped by `go mod tidy` (the go command ignores testdata directories), so it could not stay in
// go.mod anyway. The output is a real PDF 1.4 file: Flate-compressed content streams, the standard
// Helvetica fonts with WinAnsiEncoding, US Letter pages, a running header and a "Page N of M" footer,
// text laid out line by line as word processors do, so pdftotext has to reassemble paragraphs.
//
// Source format, one directive per line:
//
//	@header TEXT   running header printed at the top of every page
//	# TEXT         document title (bold, 16 pt)
//	## TEXT        section heading (bold, 12 pt)
//	- TEXT         bullet item (wrapped, hanging indent)
//	| A | B        table row: up to three cells at the fixed offsets of tableCols
//	TEXT           paragraph text; consecutive lines form one paragraph, a blank line ends it
package main

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
)

const (
	pageW, pageH = 612.0, 792.0 // US Letter, points
	margin       = 72.0
	bodySize     = 10.0
	leading      = 14.0
)

// tableCols are the x offsets of table cells from the left margin.
var tableCols = []float64{0, 70, 330}

func main() {
	srcs, err := filepath.Glob(filepath.Join("testdata", "corpus", "*", "*.pdfsrc"))
	if err != nil {
		log.Fatal(err)
	}
	if len(srcs) == 0 {
		log.Fatal("gen: no testdata/corpus/*/*.pdfsrc files: run from services/ingestion")
	}
	for _, src := range srcs {
		b, err := os.ReadFile(src)
		if err != nil {
			log.Fatal(err)
		}
		out := strings.TrimSuffix(src, ".pdfsrc") + ".pdf"
		pdf, err := render(string(b))
		if err != nil {
			log.Fatalf("%s: %v", src, err)
		}
		if err := os.WriteFile(out, pdf, 0o644); err != nil {
			log.Fatal(err)
		}
		fmt.Println("wrote", out)
	}
}

// op is one positioned text run on a page.
type op struct {
	font string // F1 regular, F2 bold
	size float64
	x, y float64
	text string
}

type layout struct {
	header string
	pages  [][]op
	y      float64
}

func (l *layout) newPage() {
	l.pages = append(l.pages, nil)
	l.y = pageH - margin - 10
}

func (l *layout) need(h float64) {
	if len(l.pages) == 0 || l.y-h < margin+20 {
		l.newPage()
	}
}

func (l *layout) line(font string, size, x float64, text string) {
	l.need(leading)
	p := len(l.pages) - 1
	l.pages[p] = append(l.pages[p], op{font, size, x, l.y, text})
	l.y -= leading * size / bodySize
}

// wrap breaks text into lines no wider than width points.
func wrap(text string, size, width float64, bold bool) []string {
	var lines []string
	var cur string
	for _, w := range strings.Fields(text) {
		try := w
		if cur != "" {
			try = cur + " " + w
		}
		if textWidth(try, size, bold) > width && cur != "" {
			lines = append(lines, cur)
			cur = w
			continue
		}
		cur = try
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

func render(src string) ([]byte, error) {
	l := &layout{}
	var para []string
	flush := func() {
		if len(para) == 0 {
			return
		}
		for _, ln := range wrap(strings.Join(para, " "), bodySize, pageW-2*margin, false) {
			l.line("F1", bodySize, margin, ln)
		}
		l.y -= leading / 2
		para = nil
	}
	sc := bufio.NewScanner(strings.NewReader(src))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \t")
		switch {
		case strings.HasPrefix(line, "@header "):
			l.header = strings.TrimPrefix(line, "@header ")
		case strings.HasPrefix(line, "## "):
			flush()
			l.need(3 * leading)
			l.y -= leading / 2
			l.line("F2", 12, margin, strings.TrimPrefix(line, "## "))
			l.y -= leading / 4
		case strings.HasPrefix(line, "# "):
			flush()
			l.line("F2", 16, margin, strings.TrimPrefix(line, "# "))
			l.y -= leading / 2
		case strings.HasPrefix(line, "- "):
			flush()
			for i, ln := range wrap(strings.TrimPrefix(line, "- "), bodySize, pageW-2*margin-18, false) {
				if i == 0 {
					l.need(leading)
					p := len(l.pages) - 1
					l.pages[p] = append(l.pages[p], op{"F1", bodySize, margin + 6, l.y, "\u2022"})
				}
				l.line("F1", bodySize, margin+18, ln)
			}
		case strings.HasPrefix(line, "|"):
			flush()
			cells := strings.Split(strings.Trim(line, "|"), "|")
			l.need(leading)
			p := len(l.pages) - 1
			for i, c := range cells {
				if i >= len(tableCols) {
					break
				}
				l.pages[p] = append(l.pages[p], op{"F1", bodySize, margin + tableCols[i], l.y, strings.TrimSpace(c)})
			}
			l.y -= leading
		case line == "":
			flush()
		default:
			para = append(para, line)
		}
	}
	flush()
	return writePDF(l)
}

func writePDF(l *layout) ([]byte, error) {
	var buf bytes.Buffer
	var offsets []int
	obj := func(body string) int {
		offsets = append(offsets, buf.Len())
		n := len(offsets)
		fmt.Fprintf(&buf, "%d 0 obj\n%s\nendobj\n", n, body)
		return n
	}
	buf.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	// Objects 1-4 are fixed; pages follow as (page, content) pairs.
	nPages := len(l.pages)
	kids := make([]string, nPages)
	for i := range l.pages {
		kids[i] = fmt.Sprintf("%d 0 R", 5+2*i)
	}
	obj("<< /Type /Catalog /Pages 2 0 R >>")
	obj(fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), nPages))
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
	obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
	for i, ops := range l.pages {
		var cs bytes.Buffer
		all := ops
		if l.header != "" {
			all = append([]op{{"F1", 8, margin, pageH - margin + 24, l.header}}, all...)
		}
		all = append(all, op{"F1", 8, pageW/2 - 25, margin - 30, fmt.Sprintf("Page %d of %d", i+1, nPages)})
		for _, o := range all {
			enc, err := winAnsi(o.text)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(&cs, "BT /%s %.1f Tf %.2f %.2f Td (%s) Tj ET\n", o.font, o.size, o.x, o.y, enc)
		}
		var z bytes.Buffer
		zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
		zw.Write(cs.Bytes())
		zw.Close()
		obj(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.0f %.0f] /Resources << /Font << /F1 3 0 R /F2 4 0 R >> >> /Contents %d 0 R >>",
			pageW, pageH, 6+2*i))
		offsets = append(offsets, buf.Len())
		fmt.Fprintf(&buf, "%d 0 obj\n<< /Length %d /Filter /FlateDecode >>\nstream\n", len(offsets), z.Len())
		buf.Write(z.Bytes())
		buf.WriteString("\nendstream\nendobj\n")
	}
	info := obj("<< /Producer (trustlayer corpus gen) /CreationDate (D:20250101000000Z) >>")
	xref := buf.Len()
	fmt.Fprintf(&buf, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, o := range offsets {
		fmt.Fprintf(&buf, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&buf, "trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, info, xref)
	return buf.Bytes(), nil
}

// winAnsi encodes s as a PDF literal string in WinAnsiEncoding.
func winAnsi(s string) (string, error) {
	var b strings.Builder
	for _, r := range s {
		var c byte
		switch {
		case r == '(' || r == ')' || r == '\\':
			b.WriteByte('\\')
			c = byte(r)
		case r >= 0x20 && r < 0x7f:
			c = byte(r)
		case r >= 0xa0 && r <= 0xff:
			c = byte(r)
		default:
			var ok bool
			if c, ok = winAnsiExtra[r]; !ok {
				return "", fmt.Errorf("rune %q has no WinAnsiEncoding code", r)
			}
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

var winAnsiExtra = map[rune]byte{'\u2022': 0x95, '\u2013': 0x96, '\u2014': 0x97, '\u2018': 0x91, '\u2019': 0x92, '\u201c': 0x93, '\u201d': 0x94}

// helvetica holds the Helvetica advance widths (1/1000 em) of ASCII 32..126, from the Adobe AFM.
var helvetica = [95]int{
	278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
	556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
	1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
	667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
	333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
	556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
}

func textWidth(s string, size float64, bold bool) float64 {
	w := 0
	for _, r := range s {
		if r >= 32 && r < 127 {
			w += helvetica[r-32]
		} else {
			w += 556
		}
	}
	f := size / 1000 * float64(w)
	if bold {
		f *= 1.06 // Helvetica-Bold runs about 6 % wider
	}
	return f
}
