// Package app is the scoring service's composition root: its configuration, its part of the shared
// platform, and the APIs it registers. cmd/scoring runs it; end-to-end tests start it in-process.
package app

import (
	"context"
	"io"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/platform"
)

const (
	// Name is the service name in logs, traces and GET /v1/build.
	Name = "scoring"
	// EnvPrefix starts the name of every variable of this service.
	EnvPrefix = "SCORING_"
)

// Config is the whole configuration of the service.
type Config struct {
	Spec platform.Spec
}

// LoadConfig reads the service's configuration from getenv (defaults: HTTP :8082, gRPC :9092).
func LoadConfig(getenv func(string) string) (Config, error) {
	spec, err := platform.LoadSpec(getenv, Name, EnvPrefix, ":8082", ":9092")
	if err != nil {
		return Config{}, err
	}
	spec.Streams = append(spec.Streams, bus.PolicyChanges)
	spec.Gateway = append(spec.Gateway,
		gateway.WithValidationStyle(gateway.DetailString),
		gateway.WithIncomingHeaders("X-Admin-Token"))
	return Config{Spec: spec}, nil
}

// ConfigVars lists every environment variable the service reads.
func ConfigVars() []string { return platform.ConfigVars(EnvPrefix) }

// Register adds the service's APIs to an opened platform.
func Register(_ context.Context, _ Config, p *platform.Platform) error {
	// Document 2 names GET /health as the minimal availability route beside the shared probes.
	p.Server.Handle("GET /health", p.Server.LivenessHandler())
	return nil
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
