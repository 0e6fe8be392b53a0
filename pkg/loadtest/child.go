package loadtest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// stopGrace is how long Stop waits for a child to shut down before it kills it.
const stopGrace = 20 * time.Second

// Child is this binary run again in a role: a bench runs the service under test (and any baseline)
// as processes of their own, as they would run in production, so that none shares a heap, a garbage
// collector or a scheduler with another or with the load.
//
// A child is told to stop in two ways at once: SIGTERM, which the service's own signal handling
// turns into a graceful shutdown, and the end of its standard input, a pipe from the parent, which
// ChildContext turns into a cancelled context. The pipe also ends when the parent dies without
// cleaning up (a kill -9), so no child is left running against a database nobody will drop.
type Child struct {
	cmd   *exec.Cmd
	stdin io.Closer
}

// ChildOption configures StartChild.
type ChildOption func(*exec.Cmd)

// WithStdout sends the child's standard output to w; by default it is discarded. The child's
// standard error is always the parent's.
func WithStdout(w io.Writer) ChildOption { return func(c *exec.Cmd) { c.Stdout = w } }

// StartChild starts this binary again with roleVar=role and env added to its environment. The
// child's main reads roleVar to know what to play, and passes its context through ChildContext.
func StartChild(roleVar, role string, env map[string]string, opts ...ChildOption) (*Child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// Not CommandContext: a cancelled run must stop the child gracefully (Stop), not kill it, and
	// before the parent drops the database the child is connected to.
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), roleVar+"="+role)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	for _, o := range opts {
		o(cmd)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", role, err)
	}
	return &Child{cmd: cmd, stdin: stdin}, nil
}

// Stop asks the child to shut down gracefully (SIGTERM and the end of its standard input) and waits
// for it, killing it if it has not exited within 20 s.
func (c *Child) Stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	_ = c.stdin.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopGrace):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// ChildContext returns a context that also ends when this process's standard input ends: in a
// child started by StartChild, when the parent stops it or dies. Call it only in a child; it reads
// standard input to the end.
func ChildContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // returns when the parent closes the pipe or dies
		cancel()
	}()
	return ctx, cancel
}

// FreeAddr returns a loopback address with a port that was free a moment ago.
func FreeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer ln.Close()
	return ln.Addr().String()
}

// WaitHTTP polls url every 100 ms until it answers 200, for up to limit or until ctx ends.
func WaitHTTP(ctx context.Context, url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := http.DefaultClient.Do(req); err == nil {
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
