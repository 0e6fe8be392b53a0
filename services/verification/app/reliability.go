package app

import (
	"context"

	"github.com/trustlayer/trustlayer/pkg/platform"
)

// ReliabilitySettings are the variables of agent reliability's workspace: repositories, targets, schedules, deployment policies, read behind EnvPrefix.
type ReliabilitySettings struct{}

// Validate checks the settings; prefix names the variables.
func (s *ReliabilitySettings) Validate(prefix string) error { return nil }

// registerReliability adds the routes of agent reliability's workspace: repositories, targets, schedules, deployment policies.
func registerReliability(ctx context.Context, cfg Config, p *platform.Platform) error { return nil }
