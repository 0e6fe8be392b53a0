package audit

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
)

// Benchmarks of whole audits against the official SDK's fixture (Correct) over loopback TLS: the
// engine's own cost (schema validation, parsing) plus the fixture's, which shares the machine.

// benchAuditor serves Correct and returns an engine that may audit it, and the target.
func benchAuditor(b *testing.B) (*Engine, Target) {
	b.Helper()
	srv, e := serveAudited(b, newCA(b), audittest.Correct(), Config{})
	return e, Target{URL: srv.URL}
}

func BenchmarkConformance(b *testing.B) {
	e, target := benchAuditor(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rep, err := e.Conformance(ctx, target)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Verdict == VerdictFail {
			b.Fatalf("verdict %s: %+v", rep.Verdict, rep.Counts)
		}
	}
}

// BenchmarkConformanceParallel50 runs 50 audits at once against one server per iteration, as the
// service does under load, and reports the throughput and the audits' latency percentiles.
func BenchmarkConformanceParallel50(b *testing.B) {
	const audits = 50
	e, target := benchAuditor(b)
	ctx := context.Background()
	var durations []time.Duration
	var elapsed time.Duration
	b.ReportAllocs()
	for b.Loop() {
		took := make([]time.Duration, audits)
		errs := make([]error, audits)
		start := time.Now()
		var wg sync.WaitGroup
		for i := range audits {
			wg.Go(func() {
				t0 := time.Now()
				rep, err := e.Conformance(ctx, target)
				took[i] = time.Since(t0)
				if err == nil && rep.Verdict == VerdictFail {
					err = fmt.Errorf("verdict %s: %+v", rep.Verdict, rep.Counts)
				}
				errs[i] = err
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		durations = append(durations, took...)
	}
	slices.Sort(durations)
	pct := func(p float64) float64 {
		return float64(durations[min(len(durations)-1, int(p*float64(len(durations))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(durations))/elapsed.Seconds(), "audits/s")
	b.ReportMetric(pct(0.50), "p50_ms")
	b.ReportMetric(pct(0.99), "p99_ms")
}

func BenchmarkReadiness(b *testing.B) {
	e, target := benchAuditor(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rep, err := e.Readiness(ctx, target)
		if err != nil {
			b.Fatal(err)
		}
		if !rep.ProductionReady {
			b.Fatalf("score %d, findings %+v", rep.Score, rep.Findings)
		}
	}
}
