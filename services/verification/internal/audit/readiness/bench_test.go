package readiness

import (
	"fmt"
	"testing"
)

// BenchmarkEvaluate grades a 40-tool surface, the most a server may list without a finding.
func BenchmarkEvaluate(b *testing.B) {
	in := clean()
	for i := range MaxTools - 1 {
		t := cleanTool()
		t.Name = fmt.Sprintf("get_weather_%02d", i)
		in.Listing.Tools = append(in.Listing.Tools, t)
	}
	b.ReportAllocs()
	for b.Loop() {
		Evaluate(in)
	}
}
