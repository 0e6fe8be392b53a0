package normalize

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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
	cmd := exec.CommandContext(ctx, path, "-enc", "UTF-8", "-eol", "unix", "-nodiag", "-", "-")
	cmd.Stdin = r
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
	pages, readErr := readPages(stdout, maxText)
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
	return normalizeLines(pages), nil
}

// readPages reads pdftotext output into pages of lines, failing when it exceeds maxText bytes.
func readPages(r io.Reader, maxText int64) ([][]string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var pages [][]string
	var page []string
	var total int64
	for {
		line, err := br.ReadString('\n')
		total += int64(len(line))
		if total > maxText {
			return nil, fmt.Errorf("%w: extracted text exceeds %d bytes", ErrTooLarge, maxText)
		}
		line = strings.TrimSuffix(line, "\n")
		for {
			i := strings.IndexByte(line, '\f')
			if i < 0 {
				break
			}
			page = append(page, line[:i])
			pages = append(pages, page)
			page = nil
			line = line[i+1:]
		}
		if line != "" || err == nil {
			page = append(page, line)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(page) > 0 {
		pages = append(pages, page)
	}
	return pages, nil
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
