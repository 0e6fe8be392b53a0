package ingest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/archive"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/events"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/store"
)

// policyHTML returns a ~size-byte policy document; variant changes a few paragraphs (codes, dates,
// prior-auth sentences) so that consecutive variants differ by about 1 %.
func policyHTML(size, variant int) string {
	var b strings.Builder
	b.WriteString("<html><head><title>Outpatient Imaging</title></head><body><h1>Outpatient Imaging Policy</h1>")
	fmt.Fprintf(&b, "<p>Effective Date: March %d, 2026</p><h2>Coverage</h2>", 1+variant%2)
	for i := 0; b.Len() < size; i++ {
		if i%7 == 0 {
			fmt.Fprintf(&b, "<h2>Section %d</h2>", i/7)
		}
		code := 70000 + i
		if i%100 == 3 && variant%2 == 1 {
			fmt.Fprintf(&b, "<p>Prior authorization is required for CPT %d in all outpatient settings.</p>", code)
			continue
		}
		fmt.Fprintf(&b, "<p>Imaging service CPT %d is covered when medically necessary and documented in the record.</p>", code)
	}
	b.WriteString("</body></html>")
	return b.String()
}

type benchStack struct {
	svc    *ingest.Service
	source uuid.UUID
	body   atomic.Pointer[string]
}

func newBenchStack(b *testing.B) *benchStack {
	b.Helper()
	ctx := context.Background()
	pool := pgtest.NewPool(b, outbox.Migrations(), store.Migrations())
	quiet := slog.New(slog.DiscardHandler)
	arch, err := archive.Open(ctx, "file://"+b.TempDir()+"?create_dir=1")
	if err != nil {
		b.Fatal(err)
	}
	st := &benchStack{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, *st.body.Load())
	}))
	b.Cleanup(srv.Close)
	s := store.New(pool)
	st.svc = ingest.NewService(s, arch, events.PolicyChange, quiet, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		ingest.Limits{MaxBytes: 50 << 20, Timeout: 10 * time.Second, MaxAttempts: 1})
	src, err := st.svc.CreateSource(ctx, ingest.NewSource{
		Organization: "Acme", Program: "Commercial", Jurisdiction: "US", AllowedHosts: []string{"127.0.0.1"},
		Adapter: ingest.AdapterLiteralURL, AdapterConfig: map[string]any{"url": srv.URL + "/policy.html"},
		TermsReviewState: "approved",
	})
	if err != nil {
		b.Fatal(err)
	}
	st.source = src.ID
	return st
}

func (st *benchStack) discover(b *testing.B) ingest.Run {
	run, err := st.svc.Discover(context.Background(), st.source, ingest.TriggerManual)
	if err != nil || run.Status != ingest.RunSucceeded {
		b.Fatalf("discover: %v %+v", err, run)
	}
	return run
}

// BenchmarkPipelineUnchanged100KB: a 100 KB HTML document fetched again with the same bytes (fetch,
// hash, asset lookup, observation). Target: at least 200 documents/s.
func BenchmarkPipelineUnchanged100KB(b *testing.B) {
	st := newBenchStack(b)
	doc := policyHTML(100<<10, 0)
	st.body.Store(&doc)
	st.discover(b)
	b.SetBytes(int64(len(doc)))
	b.ResetTimer()
	for b.Loop() {
		st.discover(b)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkPipelineChanged100KB: every fetch brings a changed 100 KB document (fetch, hash, archive,
// normalise, diff, extract, verify, score, ledger and outbox).
func BenchmarkPipelineChanged100KB(b *testing.B) {
	st := newBenchStack(b)
	docs := []string{policyHTML(100<<10, 0), policyHTML(100<<10, 1)}
	st.body.Store(&docs[0])
	st.discover(b)
	b.SetBytes(int64(len(docs[0])))
	i := 0
	b.ResetTimer()
	for b.Loop() {
		i++
		st.body.Store(&docs[i%2])
		if run := st.discover(b); !run.Resources[0].NewVersion {
			b.Fatalf("iteration %d made no new version", i)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkHashBaseline is bare crypto/sha256 over 8 MiB: the baseline of BenchmarkHashCopy.
func BenchmarkHashBaseline(b *testing.B) {
	data := bytes.Repeat([]byte("coverage criteria 70553 "), 8<<20/24)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		_ = sha256.Sum256(data)
	}
}

// BenchmarkHashCopy is the pipeline's streaming hash (HashCopy) over the same bytes, into a sink that
// costs nothing, so that the ratio to BenchmarkHashBaseline is the streaming overhead alone.
func BenchmarkHashCopy(b *testing.B) {
	data := bytes.Repeat([]byte("coverage criteria 70553 "), 8<<20/24)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := ingest.HashCopy(io.Discard, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHashCopyToFile adds the temporary file the pipeline really writes.
func BenchmarkHashCopyToFile(b *testing.B) {
	data := bytes.Repeat([]byte("coverage criteria 70553 "), 8<<20/24)
	f, err := os.CreateTemp(b.TempDir(), "hash")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			b.Fatal(err)
		}
		if _, _, err := ingest.HashCopy(f, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}
