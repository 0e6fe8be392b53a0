// Package app is the verification service's composition root: its configuration, its part of the
// shared platform, and the APIs it registers. cmd/verification runs it; end-to-end tests start it
// in-process.
package app

import (
	"context"
	"io"

	"google.golang.org/grpc"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/platform"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/tenancy"
)

const (
	// Name is the service name in logs, traces and GET /v1/build.
	Name = "verification"
	// EnvPrefix starts the name of every variable of this service.
	EnvPrefix = "VERIFICATION_"
)

// Config is the whole configuration of the service.
type Config struct {
	Spec platform.Spec
}

// LoadConfig reads the service's configuration from getenv (defaults: HTTP :8081, gRPC :9091).
func LoadConfig(getenv func(string) string) (Config, error) {
	spec, err := platform.LoadSpec(getenv, Name, EnvPrefix, ":8081", ":9091")
	if err != nil {
		return Config{}, err
	}
	spec.Migrations = append(spec.Migrations, store.Migrations())
	spec.Streams = append(spec.Streams, bus.IntelChanges, bus.WebhookDeliveries)
	spec.Gateway = append(spec.Gateway,
		gateway.WithValidationStyle(gateway.FastAPI),
		gateway.WithIncomingHeaders(auth.AdminHeader))
	spec.Unary = func(p *platform.Platform) []grpc.UnaryServerInterceptor {
		tenants := tenancy.NewService(store.New(p.Pool))
		return []grpc.UnaryServerInterceptor{api.Authenticate(spec.Service.AdminToken, tenants)}
	}
	return Config{Spec: spec}, nil
}

// ConfigVars lists every environment variable the service reads.
func ConfigVars() []string { return platform.ConfigVars(EnvPrefix) }

// Register adds the service's APIs to an opened platform.
func Register(_ context.Context, _ Config, p *platform.Platform) error {
	tenants := tenancy.NewService(store.New(p.Pool))
	if err := p.Server.Register(&verificationv1.OrganizationService_ServiceDesc, api.NewOrganizations(tenants),
		verificationv1.RegisterOrganizationServiceHandler); err != nil {
		return err
	}
	return p.Server.Register(&verificationv1.IdentityService_ServiceDesc, api.Identity{}, verificationv1.RegisterIdentityServiceHandler)
}

// Main runs the service binary with its arguments ("serve" by default, or "migrate").
func Main(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	return platform.Command(ctx, args, getenv, stdout, cfg.Spec, func(p *platform.Platform) error {
		return Register(ctx, cfg, p)
	})
}
