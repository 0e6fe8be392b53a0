package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	"github.com/trustlayer/trustlayer/services/scoring/app"
)

const adminToken = "scoring-test-admin-token"

// stack is one scoring service started in-process.
type stack struct {
	t    testing.TB
	base string
	grpc string // the gRPC listener's address
	pool *pgxpool.Pool
	env  map[string]string
	logs *syncBuffer
	stop func()
	// routes lists what the HTTP server serves (ops_test.go checks the API description against it).
	routes func() []serve.Route
}

// syncBuffer collects the service's log lines; the service writes from many goroutines.
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

// testEnv is a fresh database and NATS namespace, plus extra variables.
func testEnv(t testing.TB, extra map[string]string) map[string]string {
	env := map[string]string{
		"SCORING_DATABASE_URL":         pgtest.NewDatabase(t),
		"SCORING_ADMIN_TOKEN":          adminToken,
		"SCORING_HTTP_ADDR":            "127.0.0.1:0",
		"SCORING_GRPC_ADDR":            "127.0.0.1:0",
		"SCORING_USAGE_FLUSH_INTERVAL": "100ms",
		"NATS_URL":                     natstest.URL(),
		"NATS_NAMESPACE":               natstest.Namespace(t),
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

func startService(t testing.TB, extra map[string]string) *stack {
	return startWithEnv(t, testEnv(t, extra))
}

// startWithEnv starts the service; stop (also run at cleanup) shuts it down gracefully.
func startWithEnv(t testing.TB, env map[string]string) *stack {
	return startAdjusted(t, env, nil)
}

// startAdjusted starts the service with its configuration changed by adjust (when not nil).
func startAdjusted(t testing.TB, env map[string]string, adjust func(*app.Config)) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	getenv := func(k string) string { return env[k] }
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		t.Fatal(err)
	}
	if adjust != nil {
		adjust(&cfg)
	}
	logs := &syncBuffer{}
	p, err := platform.Open(ctx, cfg.Spec, getenv, logs)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(ctx, cfg, p); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-done
			p.Close()
		})
	}
	t.Cleanup(stop)
	return &stack{t: t, base: "http://" + p.Server.HTTPAddr(), grpc: p.Server.GRPCAddr(), pool: p.Pool, env: env, logs: logs, stop: stop, routes: p.Server.Routes}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) obj(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %s is not a JSON object", r.body)
	}
	return m
}

func (s *stack) call(method, path string, body any, header map[string]string) reply {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		r = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

var admin = map[string]string{"X-Admin-Token": adminToken}

func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// trialKey issues a trial key.
func (s *stack) trialKey() string {
	s.t.Helper()
	r := s.call("POST", "/v1/keys/trial", nil, nil)
	if r.status != 201 {
		s.t.Fatalf("trial key: %d %s", r.status, r.body)
	}
	return r.obj(s.t)["api_key"].(string)
}

// paidKey issues a key on the paid plan (no 1 request/s limit), for tests that score a lot.
func (s *stack) paidKey() string { return s.issueKey("paid") }

// issueKey issues a key on plan through the admin route.
func (s *stack) issueKey(plan string) string {
	s.t.Helper()
	r := s.call("POST", "/v1/apikeys/issue", map[string]any{"plan": plan}, admin)
	if r.status != 201 {
		s.t.Fatalf("%s key: %d %s", plan, r.status, r.body)
	}
	return r.obj(s.t)["api_key"].(string)
}

// denialClaim is a valid denial payload.
func denialClaim() map[string]any {
	return map[string]any{
		"external_claim_id": "CLM-1001", "service_date": "2026-10-01", "provider_id": 1234567,
		"payer_id": 60054, "cpt_code": "99214", "icd10_code": "E11.9", "billed_amount": 245.0,
		"place_of_service": "11", "network_status": "in_network",
	}
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}
