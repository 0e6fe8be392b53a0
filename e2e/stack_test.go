package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/servicetest"
	platformv1 "github.com/trustlayer/trustlayer/proto/platform/v1"
	ingestion "github.com/trustlayer/trustlayer/services/ingestion/app"
	scoring "github.com/trustlayer/trustlayer/services/scoring/app"
	verification "github.com/trustlayer/trustlayer/services/verification/app"
)

// service is one service's entry point, as its cmd uses it.
type service struct {
	name   string
	prefix string
	boot   servicetest.Boot
}

var services = []service{
	{verification.Name, verification.EnvPrefix, verification.Boot},
	{scoring.Name, scoring.EnvPrefix, scoring.Boot},
	{ingestion.Name, ingestion.EnvPrefix, ingestion.Boot},
}

type running struct {
	service
	http string
	grpc string
}

// startStack starts the three services in-process, each with its own fresh database, on one shared
// NATS namespace (as one deployment); each must stop cleanly when the test ends.
func startStack(t *testing.T) []running {
	t.Helper()
	namespace := natstest.Namespace(t)
	var out []running
	for _, s := range services {
		env := servicetest.Env(t, s.prefix, map[string]string{
			s.prefix + "ADMIN_TOKEN": "e2e-admin-token-0123456789",
			s.prefix + "BLOB_URL":    "file://" + t.TempDir() + "?create_dir=1",
			"NATS_NAMESPACE":         namespace,
		})
		svc := servicetest.Start(t, env, s.boot)
		t.Cleanup(func() {
			if err := svc.Stop(); err != nil {
				t.Errorf("%s stopped with %v", s.name, err)
			}
		})
		out = append(out, running{service: s, http: svc.URL, grpc: svc.GRPCAddr})
	}
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
