package app

import (
	"context"

	"github.com/trustlayer/trustlayer/pkg/platform"
)

// ReliabilityWorkOnce runs one pass of an agent-reliability worker on p, configured from env as
// the service is: it takes up to n queued runs (or runs whose lease passed), runs them and returns
// how many it took. Tests turn the background worker off and drive runs with it.
func ReliabilityWorkOnce(ctx context.Context, env map[string]string, p *platform.Platform, n int) (int, error) {
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		return 0, err
	}
	svc, err := newReliabilityRuns(cfg, p)
	if err != nil {
		return 0, err
	}
	wc := reliabilityWorkerConfig(cfg, p)
	wc.Concurrency = n
	return svc.WorkOnce(ctx, wc)
}
