package intelligence_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
)

// benchServers is the size of the benchmark registry (docs/performance.md).
const benchServers = 10_000

// publishMany lists n servers of one version each.
func publishMany(reg *registryfixture.Registry, n int) {
	for i := range n {
		reg.Publish(registryfixture.Server(fmt.Sprintf("io.bench/server-%05d", i), "1.0.0"))
	}
}

// BenchmarkSyncFull is the first full sync of a 10,000-server registry, in pages of 100, into an empty
// database: 100 page requests, 10,000 snapshots, no changes.
func BenchmarkSyncFull(b *testing.B) {
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		h := newHarness(b, 100)
		publishMany(h.reg, benchServers)
		b.StartTimer()
		start := time.Now()
		if res := h.poll(); res.Snapshots != benchServers {
			b.Fatalf("got %d snapshots, want %d", res.Snapshots, benchServers)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/sync")
}

// BenchmarkSyncIncremental is an incremental poll of the same registry after 1 % of its servers
// published a new version with a moved remote: 100 new latest versions and 100 versions no longer
// latest are listed, 100 snapshots and 300 classified changes (version, package version, remote host) (with their outbox events) written.
func BenchmarkSyncIncremental(b *testing.B) {
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		h := newHarness(b, 100)
		publishMany(h.reg, benchServers)
		h.poll()
		h.reg.Advance(time.Hour)
		for i := 0; i < benchServers; i += 100 {
			s := registryfixture.Server(fmt.Sprintf("io.bench/server-%05d", i), "1.1.0")
			s["remotes"] = []any{map[string]any{"type": "streamable-http", "url": "https://moved.example/mcp"}}
			h.reg.Publish(s)
		}
		b.StartTimer()
		start := time.Now()
		res := h.poll()
		elapsed += time.Since(start)
		if !res.Incremental || res.Snapshots != benchServers/100 || res.Changes != 3*benchServers/100 {
			b.Fatalf("got %+v, want an incremental poll of %d snapshots and %d changes", res, benchServers/100, 3*benchServers/100)
		}
	}
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/sync")
}
