package webhookwire_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/auth"
	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/platform"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/organizations"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhookwire"
)

const adminToken = "webhook-test-admin-token"

// catalog is the registry as the tests see it: a set of "namespace/name".
type catalog map[string]bool

func (c catalog) Exists(_ context.Context, namespace, name string) (bool, error) {
	return c[namespace+"/"+name], nil
}

// stack is one verification platform with the webhook pipeline, started in-process.
type stack struct {
	t    testing.TB
	base string
	pool *pgxpool.Pool
}

// testEnv keeps retries fast (the schedule's shape is the production one, its unit is milliseconds)
// and pools small.
var testEnv = map[string]string{
	"VERIFICATION_ALLOW_PRIVATE_CIDRS":        "127.0.0.0/8",
	"VERIFICATION_WEBHOOK_WORKERS":            "4", // tests run in parallel on one PostgreSQL
	"VERIFICATION_WEBHOOK_TIMEOUT":            "2s",
	"VERIFICATION_WEBHOOK_RETRY_BASE":         "20ms",
	"VERIFICATION_WEBHOOK_RETRY_MAX":          "100ms",
	"VERIFICATION_WEBHOOK_SCHEDULER_INTERVAL": "20ms",
}

// startStack starts the platform against a fresh database and, unless natsURL is given, the shared
// NATS server in a namespace of its own. extra overrides testEnv.
func startStack(t testing.TB, servers catalog, natsURL string, extra map[string]string) *stack {
	t.Helper()
	if natsURL == "" {
		natsURL = natstest.URL()
	}
	env := map[string]string{
		"VERIFICATION_DATABASE_URL": pgtest.NewDatabase(t),
		"VERIFICATION_ADMIN_TOKEN":  adminToken,
		"NATS_URL":                  natsURL,
		"NATS_NAMESPACE":            natstest.Namespace(t),
		"VERIFICATION_LOG_LEVEL":    "error",
	}
	for k, v := range testEnv {
		env[k] = v
	}
	for k, v := range extra {
		env[k] = v
	}
	getenv := func(k string) string { return env[k] }
	var settings webhookwire.Settings
	spec, err := platform.LoadSpec(getenv, "verification", "VERIFICATION_", "127.0.0.1:0", "127.0.0.1:0", &settings)
	if err != nil {
		t.Fatal(err)
	}
	spec.Migrations = append(spec.Migrations, store.Migrations())
	spec.Streams = append(spec.Streams, bus.IntelChanges, bus.WebhookDeliveries)
	spec.Gateway = append(spec.Gateway, gateway.WithValidationStyle(gateway.FastAPI), gateway.WithIncomingHeaders(auth.AdminHeader))
	spec.Unary = func(p *platform.Platform) []grpc.UnaryServerInterceptor {
		return []grpc.UnaryServerInterceptor{api.Authenticate(adminToken, organizations.NewService(store.NewOrganizations(p.Pool)))}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p, err := platform.Open(ctx, spec, getenv, io.Discard)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := webhookwire.Register(ctx, p, settings, servers); err != nil {
		cancel()
		p.Close()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		<-done
		for _, st := range spec.Streams {
			_ = p.Bus.JS.DeleteStream(context.Background(), p.Bus.StreamName(st.Name))
		}
		p.Close()
	})
	return &stack{t: t, base: "http://" + p.Server.HTTPAddr(), pool: p.Pool}
}

// newKey creates an organization with an API key and returns the key.
func (s *stack) newKey(name string) string {
	s.t.Helper()
	tenants := organizations.NewService(store.NewOrganizations(s.pool))
	org, err := tenants.CreateOrganization(context.Background(), name)
	if err != nil {
		s.t.Fatal(err)
	}
	_, key, err := tenants.IssueKey(context.Background(), org.ID, "test")
	if err != nil {
		s.t.Fatal(err)
	}
	return key
}

type reply struct {
	status int
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

// call sends a request with the bearer key.
func (s *stack) call(method, path, key string, body any) reply {
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
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: b}
}

// must calls and fails the test unless the status is want; it returns the JSON object answered.
func (s *stack) must(method, path, key string, body any, want int) map[string]any {
	s.t.Helper()
	r := s.call(method, path, key, body)
	if r.status != want {
		s.t.Fatalf("%s %s: got %d %s, want %d", method, path, r.status, r.body, want)
	}
	if want == http.StatusNoContent || len(r.body) == 0 || r.body[0] != '{' {
		return nil
	}
	return r.obj(s.t)
}

// endpoint registers url for the key's organization and returns its id and secret.
func (s *stack) endpoint(key, url string) (string, string) {
	s.t.Helper()
	e := s.must("POST", "/v1/intelligence/webhooks/endpoints", key, map[string]any{"url": url}, http.StatusCreated)
	return e["id"].(string), e["secret"].(string)
}

// watch watches namespace/name with the given body.
func (s *stack) watch(key, server string, body map[string]any) map[string]any {
	s.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	return s.must("POST", "/v1/intelligence/servers/"+server+"/watch", key, body, http.StatusCreated)
}

// change is an IntelChange for server "namespace/name".
func change(server, changeType, risk string) *verificationv1.IntelChange {
	ns, name, _ := strings.Cut(server, "/")
	return &verificationv1.IntelChange{
		ChangeId: uuid.NewString(), Namespace: ns, Name: name, FromVersion: "1.0.0", ToVersion: "1.1.0",
		ChangeType: changeType, Risk: risk, Summary: "remote URL changed", Field: "remotes[0].url",
		OldValue: "https://a.example/mcp", NewValue: "https://b.example/mcp", DetectedAt: timestamppb.Now(),
	}
}

// publish commits a change to the outbox on intel.change.<risk>, as the registry sync does.
func (s *stack) publish(c *verificationv1.IntelChange) {
	s.t.Helper()
	payload, err := proto.Marshal(c)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := outbox.Enqueue(context.Background(), s.pool, outbox.Event{Subject: "intel.change." + c.GetRisk(), Payload: payload}); err != nil {
		s.t.Fatal(err)
	}
}

func (s *stack) count(query string, args ...any) int {
	s.t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %s waiting for %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
	at     time.Time
}

// receiver is a loopback webhook receiver answering a scripted status per request (then 200).
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	script   []int
	requests []received
}

func newReceiver(t testing.TB, script ...int) *receiver {
	r := &receiver{script: script}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.requests = append(r.requests, received{header: req.Header.Clone(), body: body, at: time.Now()})
		status := http.StatusOK
		if len(r.script) > 0 {
			status, r.script = r.script[0], r.script[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.requests...)
}
