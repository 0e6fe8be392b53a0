package app

import (
	"context"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/enforcement"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// EnforcementSettings are the variables of enforcement policies, snapshots and artifacts, read behind
// EnvPrefix.
type EnforcementSettings struct {
	// SnapshotsPerHour caps the new snapshots an organization stores in any hour (429 past it): a
	// snapshot holds a decision for every server of the registry, about 2 KB a server
	// (docs/enforcement.md), and a preview compiles them all. A preview that finds its snapshot
	// stored before is not counted.
	SnapshotsPerHour int `env:"ENFORCEMENT_SNAPSHOTS_PER_HOUR" envDefault:"60"`
}

// Validate checks the settings; prefix names the variables.
func (s *EnforcementSettings) Validate(prefix string) error {
	if s.SnapshotsPerHour < 1 || s.SnapshotsPerHour > 100000 {
		return config.Invalid(prefix+"ENFORCEMENT_SNAPSHOTS_PER_HOUR", "must be between 1 and 100000")
	}
	return nil
}

// registerEnforcement adds the routes of enforcement policies, snapshots and artifacts.
func registerEnforcement(ctx context.Context, cfg Config, p *platform.Platform) error {
	st := store.NewEnforcement(p.Pool)
	srv, err := api.NewEnforcement(enforcement.New(st, st, enforcement.WithSnapshotsPerHour(cfg.Enforcement.SnapshotsPerHour)))
	if err != nil {
		return err
	}
	return p.Server.Register(&verificationv1.EnforcementService_ServiceDesc, srv,
		serve.Gateway(verificationv1.RegisterEnforcementServiceHandlerClient, verificationv1.NewEnforcementServiceClient))
}
