package loadtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
)

// roleVar names the role of a child of the test binary (see TestMain).
const roleVar = "LOADTEST_TEST_ROLE"

// TestMain plays the child roles when StartChild runs the test binary again.
func TestMain(m *testing.M) {
	switch os.Getenv(roleVar) {
	case "":
		os.Exit(m.Run())
	case "graceful":
		// As a bench's child does: SIGTERM and the end of standard input both end the context.
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		ctx, cancel := loadtest.ChildContext(ctx)
		defer cancel()
		fmt.Println("started")
		<-ctx.Done()
		if err := os.WriteFile(os.Getenv("LOADTEST_TEST_MARK"), []byte("stopped"), 0o600); err != nil {
			os.Exit(1)
		}
	case "gomaxprocs":
		fmt.Println(runtime.GOMAXPROCS(0))
	case "stdin-only":
		// Ignores SIGTERM: only the end of standard input can stop it gracefully.
		signal.Ignore(syscall.SIGTERM)
		ctx, cancel := loadtest.ChildContext(context.Background())
		defer cancel()
		fmt.Println("started")
		<-ctx.Done()
		if err := os.WriteFile(os.Getenv("LOADTEST_TEST_MARK"), []byte("stopped"), 0o600); err != nil {
			os.Exit(1)
		}
	}
}

func TestChildStopsGracefully(t *testing.T) {
	t.Parallel()
	for _, role := range []string{"graceful", "stdin-only"} {
		t.Run(role, func(t *testing.T) {
			t.Parallel()
			mark := filepath.Join(t.TempDir(), "mark")
			var out syncBuffer
			c, err := loadtest.StartChild(roleVar, role, map[string]string{"LOADTEST_TEST_MARK": mark}, loadtest.WithStdout(&out))
			if err != nil {
				t.Fatal(err)
			}
			// Stop only once the child handles (or ignores) SIGTERM, so that the signal does not kill it.
			deadline := time.Now().Add(10 * time.Second)
			for out.String() != "started\n" {
				if time.Now().After(deadline) {
					t.Fatalf("child wrote %q in 10s, want \"started\\n\"", out.String())
				}
				time.Sleep(5 * time.Millisecond)
			}
			start := time.Now()
			c.Stop()
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Stop took %s, want a graceful stop well within its 20s grace", d)
			}
			if got, err := os.ReadFile(mark); err != nil || string(got) != "stopped" {
				t.Errorf("child's mark: got %q, %v; want \"stopped\" (a graceful exit)", got, err)
			}
		})
	}
}

// syncBuffer is a buffer that the child's output copier writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestWithCPUsPinsTheChild(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	c, err := loadtest.StartChild(roleVar, "gomaxprocs", nil, loadtest.WithStdout(&out), loadtest.WithCPUs("0"))
	if err != nil {
		t.Fatal(err)
	}
	// It prints and exits; stopping it before it printed would kill it (it ignores no signal).
	deadline := time.Now().Add(10 * time.Second)
	for out.String() == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	c.Stop()
	// The runtime sizes GOMAXPROCS from the affinity mask: one CPU allowed, one P.
	if got := out.String(); got != "1\n" {
		t.Errorf("pinned child's GOMAXPROCS: got %q, want \"1\\n\"", got)
	}
}

func TestWaitHTTPWaitsFor200(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(ts.Close)

	if err := loadtest.WaitHTTP(context.Background(), ts.URL, 10*time.Second); err != nil {
		t.Fatalf("WaitHTTP: got %v, want nil", err)
	}
	if got := calls.Load(); got != 3 {
		t.Errorf("got %d calls, want 3 (two 503s, then the 200)", got)
	}
}

func TestWaitHTTPGivesUp(t *testing.T) {
	t.Parallel()
	addr := loadtest.FreeAddr() // nothing listens there
	if err := loadtest.WaitHTTP(context.Background(), "http://"+addr, 300*time.Millisecond); err == nil {
		t.Error("WaitHTTP on a closed port: got nil, want an error after the limit")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := loadtest.WaitHTTP(ctx, "http://"+addr, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitHTTP with an ended context: got %v, want context.Canceled", err)
	}
}
