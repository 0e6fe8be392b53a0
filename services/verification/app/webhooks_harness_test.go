package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/servicetest"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
)

// catalog is the registry as a webhook test needs it: a set of "namespace/name".
type catalog map[string]bool

// webhookStack is a service whose registry lists the servers of a catalog.
type webhookStack struct {
	*stack
}

// webhookEnv keeps retries fast (the schedule's shape is the production one, its unit is
// milliseconds) and pools small.
var webhookEnv = map[string]string{
	"VERIFICATION_ALLOW_PRIVATE_CIDRS":        "127.0.0.0/8",
	"VERIFICATION_WEBHOOK_WORKERS":            "4", // tests run in parallel on one PostgreSQL
	"VERIFICATION_WEBHOOK_TIMEOUT":            "2s",
	"VERIFICATION_WEBHOOK_RETRY_BASE":         "20ms",
	"VERIFICATION_WEBHOOK_RETRY_MAX":          "100ms",
	"VERIFICATION_WEBHOOK_SCHEDULER_INTERVAL": "20ms",
	"VERIFICATION_LOG_LEVEL":                  "error",
}

// startWebhooks starts the service with the servers of servers in its registry tables (as the sync
// would write them) and, unless natsURL is given, on the shared NATS server. extra overrides
// webhookEnv.
func startWebhooks(t testing.TB, servers catalog, natsURL string, extra map[string]string) *webhookStack {
	t.Helper()
	env := map[string]string{}
	for k, v := range webhookEnv {
		env[k] = v
	}
	if natsURL != "" {
		env["NATS_URL"] = natsURL
	}
	for k, v := range extra {
		env[k] = v
	}
	s := &webhookStack{stack: startService(t, env)}
	for server := range servers {
		ns, name, _ := strings.Cut(server, "/")
		if _, err := s.Pool.Exec(context.Background(), `INSERT INTO intel_servers (id, namespace, name) VALUES ($1, $2, $3)`,
			uuid.New(), ns, name); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// newKey creates an organization with an API key and returns the key.
func (s *webhookStack) newKey(name string) string {
	s.t.Helper()
	_, key := s.stack.newKey(name)
	return key
}

// call sends a request with the bearer key, if any.
func (s *webhookStack) call(method, path, key string, body any) servicetest.Reply {
	s.t.Helper()
	var header map[string]string
	if key != "" {
		header = bearer(key)
	}
	return s.Do(method, path, body, header)
}

// must calls and fails the test unless the status is want; it returns the JSON object answered.
func (s *webhookStack) must(method, path, key string, body any, want int) map[string]any {
	s.t.Helper()
	r := s.call(method, path, key, body)
	if r.Status != want {
		s.t.Fatalf("%s %s: got %d %s, want %d", method, path, r.Status, r.Body, want)
	}
	if want == http.StatusNoContent || len(r.Body) == 0 || r.Body[0] != '{' {
		return nil
	}
	return r.Object(s.t)
}

// endpoint registers url for the key's organization and returns its id and secret.
func (s *webhookStack) endpoint(key, url string) (string, string) {
	s.t.Helper()
	e := s.must("POST", "/v1/intelligence/webhooks/endpoints", key, map[string]any{"url": url}, http.StatusCreated)
	return e["id"].(string), e["secret"].(string)
}

// watch watches namespace/name with the given body.
func (s *webhookStack) watch(key, server string, body map[string]any) map[string]any {
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
func (s *webhookStack) publish(c *verificationv1.IntelChange) {
	s.t.Helper()
	payload, err := proto.Marshal(c)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := outbox.Enqueue(context.Background(), s.Pool, outbox.Event{Subject: "intel.change." + c.GetRisk(), Payload: payload}); err != nil {
		s.t.Fatal(err)
	}
}
