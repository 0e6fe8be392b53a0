package app_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
)

// BenchmarkReliabilityScans measures agent-reliability scans end to end against a local fixture
// (Dual over TLS on loopback, evaluator mcp): each iteration POSTs a batch of scans of distinct
// targets over HTTP, 8 at a time, and drives the worker (8 runs at once) until every run has
// finished (audit, summary, baseline diff, policy, evidence). In the same iteration it runs the same
// number of bare conformance audits through POST /v1/audits/mcp, 8 at a time, so that the reported
// overhead_ratio (scan time / audit time) compares the two on the same machine and moment.
//
//	go test -run '^$' -bench BenchmarkReliabilityScans -benchtime 5x ./services/verification/app/
func BenchmarkReliabilityScans(b *testing.B) {
	srv := fixtures.Serve(audittest.Dual())
	b.Cleanup(srv.Close)
	s := startRuns(b, srv.Port)
	o := s.runsOwner("Benchmark")
	// Scans past the free plan's 100 a month would be refused: no limit.
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO reliability_workspaces (organization_id, plan) VALUES ($1, 'enterprise')`, o.org); err != nil {
		b.Fatal(err)
	}
	const batch, parallel = 32, 8
	targets := make([]string, batch)
	for i := range targets {
		_, targets[i] = s.reliabilityTarget(o, srv.URL, "mcp")
	}
	token := bearer(s.token("bench", 3600, "service:audit"))
	fan := func(n int, do func(i int)) {
		var wg sync.WaitGroup
		next := make(chan int)
		for range parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					do(i)
				}
			}()
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	var scanTime, auditTime time.Duration
	iterations := 0
	for b.Loop() {
		iterations++
		start := time.Now()
		fan(batch, func(i int) { s.rrScan(o, map[string]any{"target_id": targets[i]}) })
		for done := 0; done < batch; {
			done += s.rrWork(parallel)
		}
		scanTime += time.Since(start)

		start = time.Now()
		fan(batch, func(int) {
			s.Must("POST", "/v1/audits/mcp", map[string]any{"url": srv.URL}, token, http.StatusOK)
		})
		auditTime += time.Since(start)
	}
	scans := float64(iterations * batch)
	b.ReportMetric(scans/scanTime.Seconds(), "scans/s")
	b.ReportMetric(scans/auditTime.Seconds(), "audits/s")
	b.ReportMetric(float64(scanTime)/float64(auditTime), "overhead_ratio")
	b.ReportMetric(float64(scanTime.Milliseconds())/scans, "ms/scan")
	b.ReportMetric(float64(auditTime.Milliseconds())/scans, "ms/audit")
}
