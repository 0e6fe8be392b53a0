package ingest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/normalize"
)

// writeTextPDF writes a valid PDF of plain text pages, about size bytes, to w: enough structure for
// pdftotext (catalog, page tree, one Helvetica font, one uncompressed content stream per page).
func writeTextPDF(w io.Writer, size int) error {
	bw := bufio.NewWriter(w)
	var offsets []int
	written := 0
	emit := func(format string, args ...any) {
		n, _ := fmt.Fprintf(bw, format, args...)
		written += n
	}
	object := func(body string) int {
		offsets = append(offsets, written)
		emit("%d 0 obj\n%s\nendobj\n", len(offsets), body)
		return len(offsets)
	}
	emit("%%PDF-1.4\n")
	pages := size / 5000
	// Objects 1 (catalog) and 2 (page tree) first, 3 the font; page i is 4+2i, its content 5+2i.
	object("<< /Type /Catalog /Pages 2 0 R >>")
	kids := ""
	for i := range pages {
		kids += fmt.Sprintf("%d 0 R ", 4+2*i)
	}
	object(fmt.Sprintf("<< /Type /Pages /Count %d /Kids [%s] >>", pages, kids))
	object("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	for i := range pages {
		stream := "BT /F1 9 Tf 40 760 Td 11 TL\n"
		for line := 0; line < 60; line++ {
			stream += fmt.Sprintf("(Page %d line %d: CPT %05d is covered when medically necessary.) '\n", i, line, 70000+(i*60+line)%9999)
		}
		stream += "ET"
		object(fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i))
		object(fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(stream), stream))
	}
	xref := written
	emit("xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		emit("%010d 00000 n \n", off)
	}
	emit("trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return bw.Flush()
}

// BenchmarkPeakMemoryPDF20MB measures the memory the pipeline's document path (streaming hash into the
// spool, then normalisation through pdftotext) needs for a 20 MB PDF, as multiples of the document
// size: the Go heap's peak growth and pdftotext's peak resident set. Target: at most 3x in all.
func BenchmarkPeakMemoryPDF20MB(b *testing.B) {
	if _, err := os.Stat("/usr/bin/pdftotext"); err != nil {
		b.Skip("pdftotext not installed")
	}
	path := b.TempDir() + "/big.pdf"
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := writeTextPDF(f, 20<<20); err != nil {
		b.Fatal(err)
	}
	info, _ := f.Stat()
	_ = f.Close()
	size := float64(info.Size())
	b.SetBytes(info.Size())

	var heapPeak, heapBase uint64
	for b.Loop() {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heapBase = ms.HeapInuse
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { heapPeak = max(heapPeak, samplePeak(done)) })

		src, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		// The pipeline's document path: hash while spooling (a 20 MB body spills to a file), then
		// normalise from the spool.
		body := &spool{}
		_, _, err = HashCopy(body, src)
		_ = src.Close()
		if err != nil {
			b.Fatal(err)
		}
		r, err := body.Reader()
		if err != nil {
			b.Fatal(err)
		}
		doc, err := normalize.Normalize(context.Background(), "application/pdf", r, body.normalizeOptions()...)
		_ = body.Close()
		close(done)
		wg.Wait()
		if err != nil || len(doc.Text) == 0 {
			b.Fatalf("normalise: %v", err)
		}
	}
	goGrowth := float64(heapPeak-min(heapBase, heapPeak)) / size
	// pdftotext's own peak, read from /proc while it runs the way Normalize runs it (the spilled file
	// as input): getrusage cannot tell it, since a child started with vfork reports its parent's
	// resident set as its own.
	child := float64(pdftotextPeak(b, path)) / size
	b.ReportMetric(goGrowth, "go-heap-peak/doc")
	b.ReportMetric(child, "pdftotext-rss/doc")
	b.ReportMetric(goGrowth+child, "total/doc")
}

// pdftotextPeak runs pdftotext on path and returns its peak resident set (VmHWM) in bytes.
func pdftotextPeak(b *testing.B, path string) int64 {
	cmd := exec.Command("pdftotext", "-enc", "UTF-8", "-eol", "unix", "-nodiag", path, "-")
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	for {
		if raw, err := os.ReadFile(status); err == nil {
			for _, line := range strings.Split(string(raw), "\n") {
				if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					var n int64
					if _, err := fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), &n); err == nil {
						peak = max(peak, n*1024)
					}
				}
			}
		}
		select {
		case err := <-done:
			if err != nil {
				b.Fatal(err)
			}
			return peak
		case <-time.After(time.Millisecond):
		}
	}
}

// samplePeak returns the highest HeapInuse seen until done is closed.
func samplePeak(done <-chan struct{}) uint64 {
	var peak uint64
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		select {
		case <-done:
			return peak
		case <-t.C:
		}
	}
}
