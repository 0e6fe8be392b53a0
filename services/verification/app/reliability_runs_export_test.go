package app

import (
	"context"
	"sync"

	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/runs"
)

// reliabilityTestRuns are the runs use cases the tests' worker passes made, per platform: loading the
// configuration and the audit engine's schemas once, as a replica does, keeps that cost out of the
// measured passes.
var reliabilityTestRuns = struct {
	sync.Mutex
	m map[*platform.Platform]*reliabilityTestWorker
}{m: map[*platform.Platform]*reliabilityTestWorker{}}

type reliabilityTestWorker struct {
	svc *runs.Service
	cfg runs.WorkerConfig
}

// ReliabilityWorkOnce runs one pass of an agent-reliability worker on p, configured from env as
// the service is: it takes up to n queued runs (or runs whose lease passed), runs them and returns
// how many it took. Tests turn the background worker off and drive runs with it.
func ReliabilityWorkOnce(ctx context.Context, env map[string]string, p *platform.Platform, n int) (int, error) {
	reliabilityTestRuns.Lock()
	w, ok := reliabilityTestRuns.m[p]
	if !ok {
		cfg, err := LoadConfig(func(k string) string { return env[k] })
		if err != nil {
			reliabilityTestRuns.Unlock()
			return 0, err
		}
		svc, err := newReliabilityRuns(cfg, p, p.Pool)
		if err != nil {
			reliabilityTestRuns.Unlock()
			return 0, err
		}
		w = &reliabilityTestWorker{svc: svc, cfg: reliabilityWorkerConfig(cfg, p)}
		reliabilityTestRuns.m[p] = w
		p.OnClose(func() {
			reliabilityTestRuns.Lock()
			delete(reliabilityTestRuns.m, p)
			reliabilityTestRuns.Unlock()
		})
	}
	reliabilityTestRuns.Unlock()
	wc := w.cfg
	wc.Concurrency = n
	return w.svc.WorkOnce(ctx, wc)
}
