package app

import (
	"context"

	"github.com/trustlayer/trustlayer/pkg/platform"
)

// EnforcementSettings are the variables of enforcement policies, snapshots and artifacts, read behind EnvPrefix.
type EnforcementSettings struct{}

// Validate checks the settings; prefix names the variables.
func (s *EnforcementSettings) Validate(prefix string) error { return nil }

// registerEnforcement adds the routes of enforcement policies, snapshots and artifacts.
func registerEnforcement(ctx context.Context, cfg Config, p *platform.Platform) error { return nil }
