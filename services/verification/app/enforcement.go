package app

import (
	"context"

	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/enforcement"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// EnforcementSettings are the variables of enforcement policies, snapshots and artifacts, read behind
// EnvPrefix. Enforcement has none yet: a compile reads the whole registry intelligence, and its bounds
// are those of the rules (internal/enforcement/rules.go).
type EnforcementSettings struct{}

// Validate checks the settings; prefix names the variables.
func (s *EnforcementSettings) Validate(prefix string) error { return nil }

// registerEnforcement adds the routes of enforcement policies, snapshots and artifacts.
func registerEnforcement(ctx context.Context, cfg Config, p *platform.Platform) error {
	st := store.NewEnforcement(p.Pool)
	srv, err := api.NewEnforcement(enforcement.New(st, st))
	if err != nil {
		return err
	}
	return p.Server.Register(&verificationv1.EnforcementService_ServiceDesc, srv,
		serve.Gateway(verificationv1.RegisterEnforcementServiceHandlerClient, verificationv1.NewEnforcementServiceClient))
}
