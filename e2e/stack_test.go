package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/platform"
	platformv1 "github.com/trustlayer/trustlayer/proto/platform/v1"
	ingestion "github.com/trustlayer/trustlayer/services/ingestion/app"
	scoring "github.com/trustlayer/trustlayer/services/scoring/app"
	verification "github.com/trustlayer/trustlayer/services/verification/app"
)

// service is one service's entry points, as its cmd uses them.
type service struct {
	name   string
	prefix string
	// open loads the configuration, opens the platform and registers the service's APIs.
	open func(ctx context.Context, getenv func(string) string) (*platform.Platform, platform.Spec, error)
}

// opener adapts a service's LoadConfig and Register.
func opener[C any](load func(func(string) string) (C, error), spec func(C) platform.Spec,
	register func(context.Context, C, *platform.Platform) error) func(context.Context, func(string) string) (*platform.Platform, platform.Spec, error) {
	return func(ctx context.Context, getenv func(string) string) (*platform.Platform, platform.Spec, error) {
		cfg, err := load(getenv)
		if err != nil {
			return nil, platform.Spec{}, err
		}
		p, err := platform.Open(ctx, spec(cfg), getenv, io.Discard)
		if err != nil {
			return nil, platform.Spec{}, err
		}
		if err := register(ctx, cfg, p); err != nil {
			p.Close()
			return nil, platform.Spec{}, err
		}
		return p, spec(cfg), nil
	}
}

var services = []service{
	{verification.Name, verification.EnvPrefix, opener(verification.LoadConfig,
		func(c verification.Config) platform.Spec { return c.Spec }, verification.Register)},
	{scoring.Name, scoring.EnvPrefix, opener(scoring.LoadConfig,
		func(c scoring.Config) platform.Spec { return c.Spec }, scoring.Register)},
	{ingestion.Name, ingestion.EnvPrefix, opener(ingestion.LoadConfig,
		func(c ingestion.Config) platform.Spec { return c.Spec }, ingestion.Register)},
}

type running struct {
	service
	http string
	grpc string
}

// startStack starts the three services in-process, each with its own fresh database, on one shared
// NATS namespace (as one deployment), and stops them when the test ends.
func startStack(t *testing.T) []running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	namespace := natstest.Namespace(t)
	var out []running
	var dones []chan error
	for _, s := range services {
		env := map[string]string{
			s.prefix + "DATABASE_URL": pgtest.NewDatabase(t),
			s.prefix + "ADMIN_TOKEN":  "e2e-admin-token-0123456789",
			s.prefix + "HTTP_ADDR":    "127.0.0.1:0",
			s.prefix + "GRPC_ADDR":    "127.0.0.1:0",
			s.prefix + "BLOB_URL":     "file://" + t.TempDir() + "?create_dir=1",
			"NATS_URL":                natstest.URL(),
			"NATS_NAMESPACE":          namespace,
		}
		getenv := func(k string) string { return env[k] }
		p, spec, err := s.open(ctx, getenv)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx); p.Close() }()
		dones = append(dones, done)
		for _, st := range spec.Streams {
			t.Cleanup(func() { _ = p.Bus.JS.DeleteStream(context.Background(), p.Bus.StreamName(st.Name)) })
		}
		out = append(out, running{service: s, http: "http://" + p.Server.HTTPAddr(), grpc: p.Server.GRPCAddr()})
	}
	t.Cleanup(func() {
		cancel()
		for _, d := range dones {
			select {
			case err := <-d:
				if err != nil {
					t.Errorf("service stopped with %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("a service did not stop")
			}
		}
	})
	return out
}

func get(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET %s: body is not a JSON object: %v", url, err)
	}
	return resp.StatusCode, body
}

func TestStackServesProbesBuildAndNotFound(t *testing.T) {
	t.Parallel()
	for _, s := range startStack(t) {
		t.Run(s.name, func(t *testing.T) {
			paths := []string{"/healthz", "/readyz"}
			if s.name == scoring.Name {
				paths = append(paths, "/health")
			}
			for _, p := range paths {
				if code, body := get(t, s.http+p); code != 200 {
					t.Errorf("GET %s: got %d %v, want 200", p, code, body)
				}
			}
			code, build := get(t, s.http+"/v1/build")
			if code != 200 || build["service"] != s.name {
				t.Errorf("GET /v1/build: got %d %v, want 200 naming %s", code, build, s.name)
			}
			for _, field := range []string{"version", "commit", "build_time", "go_version"} {
				if v, _ := build[field].(string); v == "" {
					t.Errorf("GET /v1/build: %s missing in %v", field, build)
				}
			}
			for _, p := range []string{"/v1/no-such-route", "/nothing"} {
				code, body := get(t, s.http+p)
				if code != 404 || len(body) != 1 || body["detail"] != "Not Found" {
					t.Errorf("GET %s: got %d %v, want 404 {\"detail\":\"Not Found\"}", p, code, body)
				}
			}

			conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			health, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil || health.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("gRPC health: got %v %v, want SERVING", health.GetStatus(), err)
			}
			b, err := platformv1.NewBuildServiceClient(conn).GetBuild(ctx, &platformv1.GetBuildRequest{})
			if err != nil || b.GetService() != s.name || b.GetVersion() != build["version"] {
				t.Errorf("gRPC GetBuild: got %v %v, want the same build as over HTTP", b, err)
			}
		})
	}
}
