package platform_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/platform"
)

func getenv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func spec(t *testing.T, dbURL string) platform.Spec {
	t.Helper()
	s, err := platform.LoadSpec(getenv(map[string]string{
		"DEMO_DATABASE_URL": dbURL, "DEMO_ADMIN_TOKEN": "0123456789abcdef",
		"NATS_URL": natstest.URL(), "NATS_NAMESPACE": natstest.Namespace(t),
	}), "demo", "DEMO_", "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestReadyzFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	proxy, dbURL := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := platform.Open(ctx, spec(t, dbURL), getenv(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	readyz := "http://" + p.Server.HTTPAddr() + "/readyz"

	status := func() int {
		resp, err := http.Get(readyz)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status(); got != 200 {
		t.Fatalf("/readyz with the database up: got %d, want 200", got)
	}
	proxy.Cut()
	if got := status(); got != 503 {
		t.Fatalf("/readyz with the database unreachable: got %d, want 503", got)
	}
	proxy.Restore()
	deadline := time.Now().Add(10 * time.Second)
	for status() != 200 {
		if time.Now().After(deadline) {
			t.Fatal("/readyz did not return to 200 after the database came back")
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	s := spec(t, pgtest.NewDatabase(t))
	specOf := func(func(string) string) (platform.Spec, error) { return s, nil }
	err := platform.Command(context.Background(), []string{"migrate"}, getenv(nil), &out, specOf,
		func(context.Context, func(string) string, io.Writer) (*platform.Platform, error) {
			t.Error("migrate must not start the service")
			return nil, errors.New("started")
		})
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	var sawApplied, sawDone bool
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		sawApplied = sawApplied || (rec["msg"] == "migration applied" && rec["set"] == "outbox")
		sawDone = sawDone || rec["msg"] == "migrations up to date"
	}
	if !sawApplied || !sawDone {
		t.Errorf("log: got %s, want the outbox migration applied and a final line", out.String())
	}
	if err := platform.Command(context.Background(), []string{"frobnicate"}, getenv(nil), io.Discard, specOf, nil); err == nil {
		t.Error("unknown command: got nil, want an error")
	}
}

// With no argument the binary serves what boot opened until its context ends, then closes it.
func TestServeCommandRunsWhatBootOpened(t *testing.T) {
	t.Parallel()
	s := spec(t, pgtest.NewDatabase(t))
	ctx, cancel := context.WithCancel(context.Background())
	booted := make(chan *platform.Platform, 1)
	done := make(chan error, 1)
	go func() {
		done <- platform.Command(ctx, nil, getenv(nil), io.Discard,
			func(func(string) string) (platform.Spec, error) { return s, errors.New("serve must not read the spec") },
			func(ctx context.Context, getenv func(string) string, stdout io.Writer) (*platform.Platform, error) {
				p, err := platform.Open(ctx, s, getenv, stdout)
				booted <- p
				return p, err
			})
	}()
	p := <-booted
	if p == nil {
		t.Fatal("boot failed")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + p.Server.HTTPAddr() + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the booted service never answered /healthz: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: got %v, want a clean stop", err)
	}
}

func TestLoadSpecNamesEveryBadVariable(t *testing.T) {
	t.Parallel()
	_, err := platform.LoadSpec(getenv(map[string]string{"DEMO_HTTP_ADDR": "nope", "NATS_URL": "ftp://x"}), "demo", "DEMO_", ":1", ":2")
	if err == nil {
		t.Fatal("got nil, want an error")
	}
	for _, v := range []string{"DEMO_HTTP_ADDR:", "DEMO_DATABASE_URL:", "DEMO_ADMIN_TOKEN:", "NATS_URL:"} {
		if !strings.Contains(err.Error(), "\n"+v) {
			t.Errorf("error %q has no line for %s", err, v)
		}
	}
}
