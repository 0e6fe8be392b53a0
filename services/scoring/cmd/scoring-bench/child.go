package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/trustlayer/trustlayer/services/scoring/app"
	"github.com/trustlayer/trustlayer/services/scoring/internal/decision"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
	"github.com/trustlayer/trustlayer/services/scoring/internal/model"
	"github.com/trustlayer/trustlayer/services/scoring/internal/policysignal"
)

// profileVar names the file the service child writes its CPU profile to (-cpuprofile).
const profileVar = "SCORING_BENCH_CPUPROFILE"

// roleVar names the role of a child process of the bench: the service or the baseline.
const roleVar = "SCORING_BENCH_ROLE"

// child runs this binary again in a role, with env added to its environment.
type child struct{ cmd *exec.Cmd }

func startChild(role string, env map[string]string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// Not CommandContext: a cancelled run must stop the child gracefully (stop), not kill it.
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), roleVar+"="+role)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", role, err)
	}
	return &child{cmd: cmd}, nil
}

// stop asks the child to shut down gracefully and waits for it.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// serveRole runs the role named in the environment, if any, and reports whether it did.
func serveRole(ctx context.Context) (bool, error) {
	switch os.Getenv(roleVar) {
	case "service", "service-unmetered":
		if path := os.Getenv(profileVar); path != "" {
			f, err := os.Create(path)
			if err != nil {
				return true, err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return true, err
			}
			defer pprof.StopCPUProfile()
		}
		// Exactly the service binary's entry point, with its defaults (GOGC included); the unmetered
		// twin only swaps the limiter of the scoring routes for one that admits and meters nothing.
		var adjust func(*app.Config)
		if os.Getenv(roleVar) == "service-unmetered" {
			adjust = func(c *app.Config) { c.Limiter = unlimited{} }
		}
		return true, app.MainWith(ctx, nil, os.Getenv, os.Stdout, adjust)
	case "baseline":
		models, err := model.Load()
		if err != nil {
			return true, err
		}
		mux := http.NewServeMux()
		mux.Handle("POST /v1/score", baseline{engine: decision.New(models, policysignal.NewIndex(), decision.Config{})})
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
		srv := &http.Server{Addr: os.Getenv("BENCH_BASELINE_ADDR"), Handler: mux}
		go func() { <-ctx.Done(); _ = srv.Close() }()
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return true, err
		}
		return true, nil
	}
	return false, nil
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHTTP(ctx context.Context, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer within %s", url, limit)
}

// unlimited admits every request and meters none: the "off" side of the limits-and-metering run.
type unlimited struct{}

func (unlimited) Admit(context.Context, string, meter.Plan, int) (meter.Ticket, error) {
	return meter.Ticket{}, nil
}
