package normalize

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"time"
)

// normalizePDF extracts text with poppler's pdftotext and rebuilds blocks with normalizeLines.
//
// pdfcpu and the other pure-Go PDF libraries return no text for most real PDFs (no font-encoding or
// ToUnicode handling), so the text comes from pdftotext, run as a subprocess: in its default
// reading-order mode (not -layout, which pads columns with spaces and breaks paragraphs), UTF-8
// output, diagonal text (watermarks such as "DRAFT") discarded. The PDF is streamed to its standard
// input and its output read as a stream, so the service holds neither the PDF nor a second copy of
// the text in memory; only the extracted lines are kept until blocks are built.
func normalizePDF(ctx context.Context, r *limitedReader, o options) (*builder, error) {
	path, err := exec.LookPath(o.pdfToText)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPDFExtractor, err)
	}
	if o.pdfTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.pdfTimeout)
		defer cancel()
	}
	input := "-"
	if o.sourceFile != "" {
		input = o.sourceFile
		// The size cap applies to the file as it would to the stream.
		info, err := os.Stat(input)
		if err != nil {
			return nil, err
		}
		if info.Size() > o.maxBytes {
			return nil, ErrTooLarge
		}
	}
	cmd := exec.CommandContext(ctx, path, "-enc", "UTF-8", "-eol", "unix", "-nodiag", input, "-")
	if input == "-" {
		cmd.Stdin = r
	}
	stderr := &cappedBuffer{max: 2048}
	cmd.Stderr = stderr
	// After a cancellation, give the process a moment to exit before its pipes are closed for it.
	cmd.WaitDelay = 2 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoPDFExtractor, err)
	}
	maxText := o.maxBytes
	if maxText < math.MaxInt64/maxTextFactor {
		maxText *= maxTextFactor
	}
	// The text is spooled to a temporary file and read from there in two passes (see lineSource),
	// so that it is never in memory both as lines and as canonical text.
	spooled, readErr := spoolText(stdout, maxText)
	if spooled != "" {
		defer os.Remove(spooled)
	}
	if readErr != nil {
		// Stop the extractor: its output is no longer read.
		_ = cmd.Process.Kill()
	}
	waitErr := cmd.Wait()
	switch {
	case r.exceeded:
		return nil, ErrTooLarge
	case ctx.Err() != nil:
		return nil, fmt.Errorf("normalize: pdftotext: %w", ctx.Err())
	case readErr != nil:
		return nil, readErr
	case waitErr != nil:
		var exit *exec.ExitError
		if errors.As(waitErr, &exit) {
			return nil, fmt.Errorf("%w: exit status %d: %s", ErrPDFExtract, exit.ExitCode(),
				strings.TrimSpace(stderr.String()))
		}
		return nil, fmt.Errorf("%w: %v", ErrPDFExtract, waitErr)
	}
	return normalizeLines(fileSource(spooled))
}

// spoolText copies pdftotext's output into a temporary file, failing when it exceeds maxText bytes,
// and returns the file's path.
func spoolText(r io.Reader, maxText int64) (string, error) {
	f, err := os.CreateTemp("", "pdftext-*")
	if err != nil {
		return "", err
	}
	defer f.Close()
	n, err := io.Copy(f, io.LimitReader(r, maxText+1))
	if err != nil {
		return f.Name(), err
	}
	if n > maxText {
		return f.Name(), fmt.Errorf("%w: extracted text exceeds %d bytes", ErrTooLarge, maxText)
	}
	return f.Name(), nil
}

// fileSource reads pdftotext output: lines end in '\n', pages in '\f'.
func fileSource(path string) lineSource {
	return func(yield func(int, string) bool) error {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return readPages(f, yield)
	}
}

// readPages yields pdftotext output as pages of lines.
func readPages(r io.Reader, yield func(page int, line string) bool) error {
	br := bufio.NewReaderSize(r, 64<<10)
	page := 0
	emit := func(l string) bool { return yield(page, l) }
	for {
		line, err := br.ReadString('\n')
		line = strings.TrimSuffix(line, "\n")
		for {
			i := strings.IndexByte(line, '\f')
			if i < 0 {
				break
			}
			if !emit(line[:i]) {
				return nil
			}
			page++
			line = line[i+1:]
		}
		if line != "" || err == nil {
			if !emit(line) {
				return nil
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// cappedBuffer keeps the first max bytes written to it and discards the rest.
type cappedBuffer struct {
	buf bytes.Buffer
	max int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string { return c.buf.String() }
