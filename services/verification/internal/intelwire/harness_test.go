package intelwire_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelwire"
	"github.com/trustlayer/trustlayer/services/verification/internal/readcache"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// stack is a platform with registry intelligence registered, syncing a fixture registry, with no
// authentication interceptor (the service's composition root adds it).
type stack struct {
	t    *testing.T
	base string
	pool *pgxpool.Pool
	bus  *bus.Bus
	reg  *registryfixture.Registry
}

// startStack starts the platform after prepare has published the registry's first listing, so that
// the sync loop's first poll (at start) is the baseline.
func startStack(t *testing.T, prepare func(*registryfixture.Registry)) *stack {
	t.Helper()
	return startStackWith(t, prepare, nil)
}

// startStackWith is startStack with the server state reads cached in reads, which is also the
// gateway's codec, as in the service (nil: the defaults of intelwire.Register).
func startStackWith(t *testing.T, prepare func(*registryfixture.Registry), reads *readcache.Cache) *stack {
	t.Helper()
	reg := registryfixture.New(t)
	prepare(reg)
	ctx, cancel := context.WithCancel(context.Background())
	env := map[string]string{
		"VERIFICATION_DATABASE_URL":           pgtest.NewDatabase(t),
		"VERIFICATION_ADMIN_TOKEN":            "intelwire-test-admin-token",
		"VERIFICATION_HTTP_ADDR":              "127.0.0.1:0",
		"VERIFICATION_GRPC_ADDR":              "127.0.0.1:0",
		"VERIFICATION_REGISTRY_URLS":          reg.URL,
		"VERIFICATION_REGISTRY_POLL_INTERVAL": "1s",
		"VERIFICATION_REGISTRY_MAX_ATTEMPTS":  "1",
		"VERIFICATION_REGISTRY_PAGE_SIZE":     "2",
		"VERIFICATION_ALLOW_PRIVATE_CIDRS":    "127.0.0.0/8",
		"NATS_URL":                            natstest.URL(),
		"NATS_NAMESPACE":                      natstest.Namespace(t),
	}
	getenv := func(k string) string { return env[k] }
	var settings intelwire.Settings
	spec, err := platform.LoadSpec(getenv, "verification", "VERIFICATION_", "127.0.0.1:0", "127.0.0.1:0", &settings)
	if err != nil {
		t.Fatal(err)
	}
	spec.Migrations = append(spec.Migrations, store.Migrations())
	spec.Gateway = append(spec.Gateway, gateway.WithValidationStyle(gateway.FastAPI))
	var opts []intelwire.Option
	if reads != nil {
		spec.Gateway = append(spec.Gateway, gateway.WithCodec(reads.Codec))
		opts = append(opts, intelwire.WithReadCache(reads))
	}
	p, err := platform.Open(ctx, spec, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := intelwire.Register(ctx, p, settings, opts...); err != nil {
		t.Fatal(err)
	}
	// The stream exists before the first event is relayed, so no test waits on provisioning.
	if _, err := p.Bus.EnsureStream(ctx, bus.IntelChanges); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	t.Cleanup(func() {
		_ = p.Bus.JS.DeleteStream(context.Background(), p.Bus.StreamName(bus.IntelChanges.Name))
		cancel()
		<-done
		p.Close()
	})
	return &stack{t: t, base: "http://" + p.Server.HTTPAddr(), pool: p.Pool, bus: p.Bus, reg: reg}
}

type reply struct {
	status int
	body   []byte
}

func (r reply) obj(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %s is not a JSON object", r.body)
	}
	return m
}

// call sends a request without any credential.
func (s *stack) call(method, path string, body any) reply {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, ok := body.(string)
		if !ok {
			raw, err := json.Marshal(body)
			if err != nil {
				s.t.Fatal(err)
			}
			b = string(raw)
		}
		r = strings.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: b}
}

// get fails the test unless GET path answers 200, and returns the object.
func (s *stack) get(path string) map[string]any {
	s.t.Helper()
	r := s.call(http.MethodGet, path, nil)
	if r.status != http.StatusOK {
		s.t.Fatalf("GET %s: got %d %s, want 200", path, r.status, r.body)
	}
	return r.obj(s.t)
}

// eventually polls cond every 50 ms for up to 20 s.
func (s *stack) eventually(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// items returns the items of a list answer.
func items(t *testing.T, m map[string]any) []map[string]any {
	t.Helper()
	raw, ok := m["items"].([]any)
	if !ok {
		t.Fatalf("answer %v has no items list", m)
	}
	out := make([]map[string]any, len(raw))
	for i, it := range raw {
		out[i] = it.(map[string]any)
	}
	return out
}

// wantValidation fails the test unless r is a FastAPI 422 whose first entry has this loc.
func wantValidation(t *testing.T, what string, r reply, loc ...any) {
	t.Helper()
	if r.status != http.StatusUnprocessableEntity {
		t.Fatalf("%s: got %d %s, want 422", what, r.status, r.body)
	}
	var body struct {
		Detail []struct {
			Loc  []any  `json:"loc"`
			Msg  string `json:"msg"`
			Type string `json:"type"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || len(body.Detail) == 0 {
		t.Fatalf("%s: got %s, want an HTTPValidationError", what, r.body)
	}
	got, _ := json.Marshal(body.Detail[0].Loc)
	want, _ := json.Marshal(loc)
	if string(got) != string(want) || body.Detail[0].Msg == "" || body.Detail[0].Type == "" {
		t.Errorf("%s: got %s, want loc %s with msg and type", what, r.body, want)
	}
}

// wantCoded fails the test unless r is status with {"detail":{"error":code,"message":...}}.
func wantCoded(t *testing.T, what string, r reply, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("%s: got %d %s, want %d", what, r.status, r.body, status)
	}
	detail, _ := r.obj(t)["detail"].(map[string]any)
	if detail["error"] != code || detail["message"] == "" {
		t.Errorf("%s: got %s, want detail.error %s with a message", what, r.body, code)
	}
}
