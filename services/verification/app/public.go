package app

import (
	"context"

	"github.com/trustlayer/trustlayer/pkg/platform"
)

// PublicSettings are the variables of the public routes: coverage summary, analytics events and claim pages, read behind EnvPrefix.
type PublicSettings struct{}

// Validate checks the settings; prefix names the variables.
func (s *PublicSettings) Validate(prefix string) error { return nil }

// registerPublic adds the routes of the public routes: coverage summary, analytics events and claim pages.
func registerPublic(ctx context.Context, cfg Config, p *platform.Platform) error { return nil }
