package app

import (
	"context"

	"github.com/trustlayer/trustlayer/pkg/platform"
)

// ReliabilityBillingSettings are the variables of agent reliability's billing and pages, read behind EnvPrefix.
type ReliabilityBillingSettings struct{}

// Validate checks the settings; prefix names the variables.
func (s *ReliabilityBillingSettings) Validate(prefix string) error { return nil }

// registerReliabilityBilling adds the routes of agent reliability's billing and pages.
func registerReliabilityBilling(ctx context.Context, cfg Config, p *platform.Platform) error {
	return nil
}
