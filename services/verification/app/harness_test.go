package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/verification/app"
)

const adminToken = "verification-test-admin-token"

// stack is one verification service started in-process.
type stack struct {
	t       *testing.T
	base    string
	pool    *pgxpool.Pool
	blobURL string
}

func startService(t *testing.T, extra ...map[string]string) *stack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	env := map[string]string{
		"VERIFICATION_DATABASE_URL": pgtest.NewDatabase(t),
		"VERIFICATION_ADMIN_TOKEN":  adminToken,
		"VERIFICATION_HTTP_ADDR":    "127.0.0.1:0",
		"VERIFICATION_GRPC_ADDR":    "127.0.0.1:0",
		"VERIFICATION_BLOB_URL":     "file://" + t.TempDir() + "?create_dir=1",
		"NATS_URL":                  natstest.URL(),
		"NATS_NAMESPACE":            natstest.Namespace(t),
	}
	for _, e := range extra {
		for k, v := range e {
			env[k] = v
		}
	}
	getenv := func(k string) string { return env[k] }
	cfg, err := app.LoadConfig(getenv)
	if err != nil {
		t.Fatal(err)
	}
	p, err := platform.Open(ctx, cfg.Spec, getenv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Register(ctx, cfg, p); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	t.Cleanup(func() {
		for _, st := range cfg.Spec.Streams {
			_ = p.Bus.JS.DeleteStream(context.Background(), p.Bus.StreamName(st.Name))
		}
		cancel()
		<-done
		p.Close()
	})
	return &stack{t: t, base: "http://" + p.Server.HTTPAddr(), pool: p.Pool, blobURL: env["VERIFICATION_BLOB_URL"]}
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

// call sends a request; header values are set as given ("X-Admin-Token", "Authorization").
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
	return reply{status: resp.StatusCode, body: b}
}

var admin = map[string]string{"X-Admin-Token": adminToken}

func bearer(key string) map[string]string { return map[string]string{"Authorization": "Bearer " + key} }

// newKey creates an organization and issues it a key; it returns the organization id and the key.
func (s *stack) newKey(orgName string) (string, string) {
	s.t.Helper()
	org := s.call("POST", "/v1/intelligence/organizations", map[string]any{"name": orgName}, admin)
	if org.status != 201 {
		s.t.Fatalf("create organization: %d %s", org.status, org.body)
	}
	id := org.obj(s.t)["id"].(string)
	key := s.call("POST", "/v1/intelligence/organizations/"+id+"/api-keys", map[string]any{"name": "ci"}, admin)
	if key.status != 201 {
		s.t.Fatalf("issue key: %d %s", key.status, key.body)
	}
	return id, key.obj(s.t)["api_key"].(string)
}
