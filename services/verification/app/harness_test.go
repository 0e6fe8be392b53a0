package app_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/servicetest"
	"github.com/trustlayer/trustlayer/services/verification/app"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
	"github.com/trustlayer/trustlayer/services/verification/internal/readcache"
)

const adminToken = "verification-test-admin-token"

var admin = servicetest.Admin(adminToken)

func bearer(key string) map[string]string { return servicetest.Bearer(key) }

// stack is one verification service started in-process, with the helpers its tests share.
type stack struct {
	*servicetest.Service
	t       testing.TB
	blobURL string
}

// startService starts the service against a fresh database, a NATS namespace and a blob directory of
// its own; extra overrides the environment.
func startService(t testing.TB, extra ...map[string]string) *stack {
	t.Helper()
	return startWith(t, app.Boot, extra...)
}

// startWith is startService with boot in place of app.Boot.
func startWith(t testing.TB, boot servicetest.Boot, extra ...map[string]string) *stack {
	t.Helper()
	blobURL := "file://" + t.TempDir() + "?create_dir=1"
	env := servicetest.Env(t, app.EnvPrefix, append([]map[string]string{{
		app.EnvPrefix + "ADMIN_TOKEN": adminToken,
		app.EnvPrefix + "BLOB_URL":    blobURL,
		// Watches run when a test asks (run-now), unless it turns the scheduler on: a test's watch
		// of a public address would otherwise be audited in the background.
		app.EnvPrefix + "WATCH_SCHEDULER": "false",
	}}, extra...)...)
	return &stack{Service: servicetest.Start(t, env, boot), t: t, blobURL: blobURL}
}

// bootWithReadCache is app.Boot with the server state answers cached in c, so that a test can watch
// the cache.
func bootWithReadCache(c *readcache.Cache) servicetest.Boot {
	return func(ctx context.Context, getenv func(string) string, logs io.Writer) (*platform.Platform, error) {
		return app.BootWithReadCache(ctx, getenv, logs, c)
	}
}

// newKey creates an organization and issues it a key; it returns the organization id and the key.
func (s *stack) newKey(orgName string) (string, string) {
	s.t.Helper()
	org := s.Must("POST", "/v1/intelligence/organizations", map[string]any{"name": orgName}, admin, http.StatusCreated)
	id := org.Object(s.t)["id"].(string)
	key := s.Must("POST", "/v1/intelligence/organizations/"+id+"/api-keys", map[string]any{"name": "ci"}, admin, http.StatusCreated)
	return id, key.Object(s.t)["api_key"].(string)
}

// registry starts a loopback registry after prepare has published its first listing, and the
// environment of a service that syncs it every second: the sync's first poll (at start) is the
// baseline.
func registry(t testing.TB, prepare func(*registryfixture.Registry)) (*registryfixture.Registry, map[string]string) {
	t.Helper()
	reg := registryfixture.New(t)
	prepare(reg)
	return reg, map[string]string{
		"VERIFICATION_REGISTRY_URLS":          reg.URL,
		"VERIFICATION_REGISTRY_POLL_INTERVAL": "1s",
		"VERIFICATION_REGISTRY_MAX_ATTEMPTS":  "1",
		"VERIFICATION_REGISTRY_PAGE_SIZE":     "2",
		"VERIFICATION_ALLOW_PRIVATE_CIDRS":    "127.0.0.0/8",
	}
}

// eventually polls cond every 20 ms until it holds, for at most 30 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
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
