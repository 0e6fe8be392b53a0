package main

import (
	"context"
	"os"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
	"github.com/trustlayer/trustlayer/services/verification/app"
)

// profileVar names the file the service child writes its CPU profile to (-cpuprofile).
const profileVar = "VERIFICATION_BENCH_CPUPROFILE"

// roleVar names the role of a child process of the bench; "service" is the only one.
const roleVar = "VERIFICATION_BENCH_ROLE"

// serveRole runs the role named in the environment, if any, and reports whether it did.
func serveRole(ctx context.Context) (bool, error) {
	if os.Getenv(roleVar) != "service" {
		return false, nil
	}
	ctx, cancel := loadtest.ChildContext(ctx)
	defer cancel()
	stop, err := loadtest.Profile(os.Getenv(profileVar), "")
	if err != nil {
		return true, err
	}
	defer stop()
	// Exactly the service binary's entry point (cmd/verification), with its defaults.
	return true, app.Main(ctx, nil, os.Getenv, os.Stdout)
}
