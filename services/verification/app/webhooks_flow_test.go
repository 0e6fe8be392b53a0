package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
)

// receiver records the webhook requests it gets.
// TestWatchedRegistryChangeReachesTheWebhook is the whole path: a registry change found by the sync,
// classified, published through the outbox, matched against a watch and delivered, signed, to the
// organization's endpoint.
func TestWatchedRegistryChangeReachesTheWebhook(t *testing.T) {
	t.Parallel()
	reg := registryfixture.New(t)
	reg.Publish(registryfixture.Server("io.example/weather", "1.0.0"))
	s := startService(t, map[string]string{
		"VERIFICATION_REGISTRY_URLS":          reg.URL,
		"VERIFICATION_REGISTRY_POLL_INTERVAL": "1s",
		"VERIFICATION_ALLOW_PRIVATE_CIDRS":    "127.0.0.0/8",
	})
	_, key := s.newKey("Hooks")
	auth := bearer(key)
	eventually(t, "the first sync", func() bool {
		return s.Do("GET", "/v1/intelligence/servers/io.example/weather", nil, auth).Status == 200
	})

	hook := newReceiver(t, http.StatusNoContent)
	ep := s.Do("POST", "/v1/intelligence/webhooks/endpoints", map[string]any{"url": hook.URL + "/in"}, auth)
	secret, _ := ep.Object(t)["secret"].(string)
	if ep.Status != 201 || !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("create endpoint: %d %s", ep.Status, ep.Body)
	}
	if r := s.Do("POST", "/v1/intelligence/servers/io.example/weather/watch", map[string]any{"min_risk": "high"}, auth); r.Status != 201 {
		t.Fatalf("watch: %d %s", r.Status, r.Body)
	}

	// The remote moves to another host: a high-risk change.
	next := registryfixture.Server("io.example/weather", "1.1.0")
	next["remotes"] = []any{map[string]any{"type": "streamable-http", "url": "https://evil.example.net/weather"}}
	reg.Publish(next)

	eventually(t, "a signed delivery", func() bool { return len(hook.got()) > 0 })
	req := hook.got()[0]
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(req.body, req.header); err != nil {
		t.Errorf("signature does not verify: %v", err)
	}
	var event struct {
		Type string         `json:"type"`
		ID   string         `json:"id"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(req.body, &event); err != nil {
		t.Fatal(err)
	}
	if event.Type != "intel.change" || event.ID != req.header.Get("webhook-id") || event.Data["risk"] != "high" ||
		event.Data["namespace"] != "io.example" || event.Data["name"] != "weather" {
		t.Errorf("event: %+v (headers %v)", event, req.header)
	}
	// Only high-risk changes were asked for.
	for _, r := range hook.got() {
		if !strings.Contains(string(r.body), `"risk":"high"`) {
			t.Errorf("a change below the watch's min_risk was delivered: %s", r.body)
		}
	}
}
