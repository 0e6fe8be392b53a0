// Package normalize turns a fetched policy document (HTML, PDF or plain text) into canonical text
// with sections, and hashes that text (README "Discovery": canonical_content_hash is taken over the
// normalised text, so a re-render with different markup but the same text is not a change).
//
// Canonical text is built from blocks: a paragraph, list item, table row, heading or preformatted
// line is one block, and each block is one line of Text ending in "\n". Within a block the text is
// decoded to UTF-8 (charset from a byte-order mark, the media type's charset parameter, an HTML
// <meta> declaration, else UTF-8 when the bytes are valid UTF-8, else windows-1252), stripped of
// zero-width characters and soft hyphens, whitespace-collapsed (every run of Unicode white space,
// no-break spaces included, becomes one space, none at either end) and NFC-normalised. Scripts,
// styles and navigation chrome are dropped. Two renderings whose blocks carry the same words in the
// same order therefore have the same Text and the same CanonicalHash, whatever their markup.
//
// The package is pure domain code: it reads an io.Reader, runs poppler's pdftotext for PDF, and
// imports no transport or storage package.
package normalize

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"strings"
	"time"
)

// Formats recorded in Document.Format.
const (
	FormatHTML = "html"
	FormatPDF  = "pdf"
	FormatText = "text"
)

// Defaults of the Option values.
const (
	// DefaultMaxBytes bounds the raw input. The fetcher caps downloads itself; this guard keeps a
	// caller that forgets from exhausting memory (HTML is parsed in memory).
	DefaultMaxBytes = 64 << 20
	// DefaultPDFTimeout bounds one pdftotext run. pdftotext needs about 1 s for a 100-page text PDF on
	// the 2-core CI machine; a minute leaves room for large scanned-and-OCRed files.
	DefaultPDFTimeout = time.Minute
	// maxTextFactor bounds the extracted text of a PDF (pdftotext output) to this multiple of the
	// input limit: Flate-compressed text can expand well past the file's size.
	maxTextFactor = 4
)

var (
	// ErrUnsupportedMediaType is returned for a media type other than text/html,
	// application/xhtml+xml, application/pdf and text/plain.
	ErrUnsupportedMediaType = errors.New("normalize: unsupported media type")
	// ErrTooLarge is returned when the input exceeds the configured maximum size.
	ErrTooLarge = errors.New("normalize: input exceeds the size limit")
	// ErrNoPDFExtractor is returned for a PDF when pdftotext (Debian package poppler-utils) is not
	// installed or not executable.
	ErrNoPDFExtractor = errors.New("normalize: no PDF text extractor: install poppler-utils (pdftotext)")
	// ErrPDFExtract is returned when pdftotext fails on the input: a malformed, encrypted or
	// truncated PDF. The wrapped message carries pdftotext's exit status and first stderr bytes.
	ErrPDFExtract = errors.New("normalize: pdftotext failed")
	// ErrNoText is returned when a document yields no text at all: an empty page or an image-only
	// (scanned) PDF. Treating it as an empty version would turn every line of the previous version
	// into a removal.
	ErrNoText = errors.New("normalize: document has no extractable text")
)

// Document is a normalised document.
type Document struct {
	// Format is FormatHTML, FormatPDF or FormatText.
	Format string
	// Text is the canonical text: one block per line, each line ending in "\n".
	Text string
	// Sections partition Text: they are in order, contiguous, and together cover all of Text. The
	// first has an empty Heading when text precedes the first heading.
	Sections []Section
	// CanonicalHash is the lowercase hex SHA-256 of Text.
	CanonicalHash string
}

// Section is a run of Text that starts at a heading (or at the start of Text) and ends where the next
// heading starts. Sections are flat: a level-3 heading ends a level-2 section too.
type Section struct {
	// Index is the section's position in Document.Sections.
	Index int
	// Heading is the heading's canonical text; empty for text before the first heading.
	Heading string
	// Level is 1-6 for HTML h1-h6; for text and PDF, 1 for titles, ALL-CAPS and top-level numbered
	// headings, the depth of the number for "2.1"-style headings, 2 for short lines ending in ':'.
	// It is 0 for the preamble.
	Level int
	// Start and End are byte offsets into Text: Text[Start:End] is the heading line and its body.
	Start, End int
}

// SectionAt returns the section containing the byte offset off of Text.
func (d *Document) SectionAt(off int) (Section, bool) {
	lo, hi := 0, len(d.Sections)
	for lo < hi {
		mid := (lo + hi) / 2
		s := d.Sections[mid]
		switch {
		case off < s.Start:
			hi = mid
		case off >= s.End:
			lo = mid + 1
		default:
			return s, true
		}
	}
	return Section{}, false
}

// Option configures Normalize.
type Option func(*options)

type options struct {
	maxBytes   int64
	pdfTimeout time.Duration
	pdfToText  string
	sourceFile string
}

// WithMaxBytes sets the largest accepted input in bytes (default DefaultMaxBytes); n <= 0 keeps
// the default.
func WithMaxBytes(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBytes = n
		}
	}
}

// WithPDFTimeout bounds each pdftotext run (default DefaultPDFTimeout); the context's deadline
// applies too.
func WithPDFTimeout(d time.Duration) Option { return func(o *options) { o.pdfTimeout = d } }

// WithPDFToText sets the pdftotext executable: a name looked up in PATH or a path (default
// "pdftotext").
func WithPDFToText(path string) Option { return func(o *options) { o.pdfToText = path } }

// WithSourceFile tells Normalize that the bytes it reads are also in the file at path. pdftotext then
// reads the file itself instead of standard input: poppler buffers all of standard input in memory
// (a PDF needs random access), while it reads a file as it needs it. Measured on an 18 MB text PDF:
// 41 MB peak resident set through standard input, 18 MB through the file.
func WithSourceFile(path string) Option { return func(o *options) { o.sourceFile = path } }

// Normalize reads a document of the given media type (a Content-Type value; parameters such as
// charset are honoured) and returns its canonical form. Supported: text/html and
// application/xhtml+xml, application/pdf, text/plain. Malformed HTML is repaired by the HTML5
// parsing algorithm and never fails; a PDF that pdftotext rejects fails with ErrPDFExtract.
func Normalize(ctx context.Context, mediaType string, r io.Reader, opts ...Option) (*Document, error) {
	o := options{maxBytes: DefaultMaxBytes, pdfTimeout: DefaultPDFTimeout, pdfToText: "pdftotext"}
	for _, opt := range opts {
		opt(&o)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	mt, params, err := mime.ParseMediaType(mediaType)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrUnsupportedMediaType, mediaType, err)
	}
	lr := &limitedReader{r: r, left: o.maxBytes}
	var b *builder
	var format string
	switch mt {
	case "text/html", "application/xhtml+xml":
		format = FormatHTML
		raw, err := io.ReadAll(lr)
		if err != nil {
			return nil, err
		}
		b, err = normalizeHTML(ctx, decode(raw, params["charset"], true))
		if err != nil {
			return nil, err
		}
	case "text/plain":
		format = FormatText
		raw, err := io.ReadAll(lr)
		if err != nil {
			return nil, err
		}
		b, err = normalizeLines(pagesSource(splitPages(decode(raw, params["charset"], false))))
		if err != nil {
			return nil, err
		}
	case "application/pdf":
		format = FormatPDF
		b, err = normalizePDF(ctx, lr, o)
		if err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedMediaType, mt)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	doc := b.document(format)
	if doc.Text == "" {
		return nil, ErrNoText
	}
	return doc, nil
}

// Hash returns the lowercase hex SHA-256 of canonical text, as in Document.CanonicalHash.
func Hash(text string) string {
	h := sha256.New()
	// In slices, so that a large text is not copied whole into a []byte first.
	for len(text) > 0 {
		n := min(len(text), 64<<10)
		h.Write([]byte(text[:n]))
		text = text[n:]
	}
	return hex.EncodeToString(h.Sum(nil))
}

// limitedReader fails with ErrTooLarge, instead of stopping silently at the limit as
// io.LimitReader does, so a truncated document is never normalised as if it were whole.
type limitedReader struct {
	r        io.Reader
	left     int64
	exceeded bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		l.exceeded = true
		return 0, ErrTooLarge
	}
	// Reading one byte past the limit tells "exactly at the limit" from "over it".
	if rem := l.left + 1; rem > 0 && int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		l.exceeded = true
		return 0, ErrTooLarge
	}
	return n, err
}

// splitPages splits text at form feeds (page breaks in pdftotext output and some text files) and
// each page into lines.
func splitPages(s string) [][]string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	pages := strings.Split(s, "\f")
	out := make([][]string, 0, len(pages))
	for _, p := range pages {
		out = append(out, strings.Split(p, "\n"))
	}
	return out
}
