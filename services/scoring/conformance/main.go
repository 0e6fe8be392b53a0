// Command conformance checks the scoring service's MCP endpoint with the official MCP conformance
// suite (@modelcontextprotocol/conformance): it starts the service in-process on a throwaway
// database, runs the suite's server scenarios against <service>/mcp with baseline.yml as the expected
// failures, and exits with the suite's status. The suite fails the run when a scenario outside the
// baseline fails, and when a baseline scenario passes (a stale entry), so the baseline stays honest.
//
// `make conformance` (part of `make test`) installs the suite and Node.js 22 into bin/conformance
// (deploy/local/conformance-tools.sh) and runs:
//
//	go run ./services/scoring/conformance -node bin/.../node -suite bin/.../index.js
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
	"github.com/trustlayer/trustlayer/services/scoring/app"
)

func main() {
	node := flag.String("node", "", "Node.js 22 binary")
	suite := flag.String("suite", "", "the conformance suite's entry point (dist/index.js)")
	pg := flag.String("pg", envOr("PGTEST_ADMIN_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"), "PostgreSQL admin URL")
	natsURL := flag.String("nats", envOr("NATS_URL", "nats://127.0.0.1:4222"), "NATS URL")
	out := flag.String("o", "", "directory for the suite's per-scenario results (default: a temporary one)")
	flag.Parse()
	if *node == "" || *suite == "" {
		fmt.Fprintln(os.Stderr, "usage: conformance -node <node> -suite <index.js> (make conformance passes both)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, *node, *suite, *pg, *natsURL, *out, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// baselinePath is baseline.yml beside this file: found from the source location, so that the
// command works from any directory (go run records it).
func baselinePath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "baseline.yml")
}

// run starts the service, runs the suite and returns the suite's exit status.
func run(ctx context.Context, node, suite, pgURL, natsURL, outDir string, stdout io.Writer) (int, error) {
	dbURL, drop, err := loadtest.TempDatabase(ctx, pgURL, "scoring_conformance")
	if err != nil {
		return 0, err
	}
	defer drop()
	if outDir == "" {
		if outDir, err = os.MkdirTemp("", "scoring-conformance-"); err != nil {
			return 0, err
		}
		defer os.RemoveAll(outDir)
	}

	addr := loadtest.FreeAddr()
	env := map[string]string{
		"SCORING_DATABASE_URL": dbURL,
		"SCORING_ADMIN_TOKEN":  "conformance-admin-token-0123456789",
		"SCORING_HTTP_ADDR":    addr,
		"SCORING_GRPC_ADDR":    "127.0.0.1:0",
		"SCORING_PUBLIC_URL":   "http://" + addr,
		"SCORING_LOG_LEVEL":    "warn",
		"NATS_URL":             natsURL,
		"NATS_NAMESPACE":       fmt.Sprintf("conformance%d", os.Getpid()),
	}
	serviceCtx, stopService := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() {
		served <- app.Main(serviceCtx, nil, func(k string) string { return env[k] }, io.Discard)
	}()
	defer func() {
		stopService()
		<-served
	}()
	base := "http://" + addr
	if err := loadtest.WaitHTTP(ctx, base+"/readyz", 60*time.Second); err != nil {
		select {
		case serr := <-served:
			served <- serr // for the deferred wait
			return 0, fmt.Errorf("the service did not start: %w", serr)
		default:
		}
		return 0, err
	}

	cmd := exec.CommandContext(ctx, node, suite, "server", "--url", base+"/mcp",
		"--expected-failures", baselinePath(), "-o", outDir)
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return 0, err
	}
	return 0, nil
}
