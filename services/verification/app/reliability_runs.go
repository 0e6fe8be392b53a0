package app

import (
	"context"

	"github.com/trustlayer/trustlayer/pkg/platform"
)

// ReliabilityRunSettings are the variables of agent reliability's scans, runs, diffs and baselines, read behind EnvPrefix.
type ReliabilityRunSettings struct{}

// Validate checks the settings; prefix names the variables.
func (s *ReliabilityRunSettings) Validate(prefix string) error { return nil }

// registerReliabilityRuns adds the routes of agent reliability's scans, runs, diffs and baselines.
func registerReliabilityRuns(ctx context.Context, cfg Config, p *platform.Platform) error { return nil }
