package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/app"
)

// profileVar names the file the service child writes its CPU profile to (-cpuprofile).
const profileVar = "VERIFICATION_BENCH_CPUPROFILE"

// roleVar names the role of a child process of the bench; "service" is the only one.
const roleVar = "VERIFICATION_BENCH_ROLE"

// child runs this binary again in a role, with env added to its environment.
type child struct {
	cmd   *exec.Cmd
	stdin io.Closer
}

func startChild(role string, env map[string]string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// Not CommandContext: on Ctrl-C the parent stops the child itself (stop), gracefully, before it
	// drops the database the child is connected to.
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), roleVar+"="+role)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// The service logs (JSON, warnings and errors only) go to the bench's stderr, apart from its report.
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// The child stops when this pipe closes, which also happens when the parent dies without
	// cleaning up (a kill -9): no service is left running against a database nobody will drop.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", role, err)
	}
	return &child{cmd: cmd, stdin: stdin}, nil
}

// stop asks the child to shut down gracefully and waits for it.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	_ = c.stdin.Close()
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
	if os.Getenv(roleVar) != "service" {
		return false, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // returns when the parent closes the pipe or dies
		cancel()
	}()
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
	// Exactly the service binary's entry point (cmd/verification), with its defaults.
	return true, app.Main(ctx, nil, os.Getenv, os.Stdout)
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
