package app_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const server = "io.github.acme/weather"

// deliveries lists an endpoint's deliveries (newest first).
func (s *webhookStack) deliveries(key, endpointID string) []any {
	s.t.Helper()
	page := s.must("GET", "/v1/intelligence/webhooks/endpoints/"+endpointID+"/deliveries", key, nil, http.StatusOK)
	return page["items"].([]any)
}

// settled waits until the endpoint has n deliveries none of which is pending, and returns them.
func (s *webhookStack) settled(key, endpointID string, n int) []map[string]any {
	s.t.Helper()
	var out []map[string]any
	eventually(s.t, "deliveries to settle", func() bool {
		items := s.deliveries(key, endpointID)
		if len(items) != n {
			return false
		}
		out = out[:0]
		for _, it := range items {
			d := it.(map[string]any)
			if d["status"] == "pending" {
				return false
			}
			out = append(out, d)
		}
		return true
	})
	return out
}

func TestFailsTwiceThenSucceeds(t *testing.T) {
	t.Parallel()
	s := startWebhooks(t, catalog{server: true}, "", nil)
	key := s.newKey("acme")
	recv := newReceiver(t, http.StatusInternalServerError, http.StatusServiceUnavailable)
	endpointID, secret := s.endpoint(key, recv.URL+"/hooks?token=abc")
	s.watch(key, server, nil)
	c := change(server, "remote_url_changed", "high")
	s.publish(c)

	list := s.settled(key, endpointID, 1)
	d := s.must("GET", "/v1/intelligence/webhooks/deliveries/"+list[0]["id"].(string), key, nil, http.StatusOK)
	if d["status"] != "succeeded" || d["change_id"] != c.GetChangeId() || d["attempt_count"] != 3.0 {
		t.Fatalf("delivery = %v, want succeeded after 3 attempts for change %s", d, c.GetChangeId())
	}
	attempts := d["attempts"].([]any)
	wantCodes := []float64{500, 503, 200}
	for i, a := range attempts {
		a := a.(map[string]any)
		if a["attempt"] != float64(i+1) || a["status_code"] != wantCodes[i] {
			t.Errorf("attempt %d = %v, want status %v", i+1, a, wantCodes[i])
		}
		if (a["error"] == "") != (i == 2) {
			t.Errorf("attempt %d error = %q, want an error only on failures", i+1, a["error"])
		}
	}
	for i, a := range attempts {
		// Failed attempts keep what the receiver answered too (safehttp.Error.Excerpt).
		if got := a.(map[string]any)["response_excerpt"]; got != `{"ok":true}` {
			t.Errorf("attempt %d response excerpt = %q, want the receiver's body", i+1, got)
		}
	}

	reqs := recv.got()
	if len(reqs) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(reqs))
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range reqs {
		if id := r.header.Get("webhook-id"); id != d["event_id"] {
			t.Errorf("request %d webhook-id = %q, want the event id %q", i+1, id, d["event_id"])
		}
		if err := wh.Verify(r.body, r.header); err != nil {
			t.Errorf("request %d: signature does not verify: %v", i+1, err)
		}
		if string(r.body) != string(reqs[0].body) {
			t.Errorf("request %d body differs from the first", i+1)
		}
	}
	var body struct {
		Type      string         `json:"type"`
		ID        string         `json:"id"`
		Timestamp time.Time      `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(reqs[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != "intel.change" || body.ID != d["event_id"] || body.Data["change_id"] != c.GetChangeId() ||
		body.Data["change_type"] != "remote_url_changed" || body.Data["new_value"] != "https://b.example/mcp" {
		t.Errorf("payload = %s, want the documented intel.change event", reqs[0].body)
	}
	if s.Count(`SELECT count(*) FROM webhook_attempts`) != 3 {
		t.Error("want 3 attempt records")
	}
}

func TestGoneDisablesEndpointAtOnce(t *testing.T) {
	t.Parallel()
	s := startWebhooks(t, catalog{server: true}, "", nil)
	key := s.newKey("acme")
	recv := newReceiver(t, http.StatusGone)
	endpointID, _ := s.endpoint(key, recv.URL)
	s.watch(key, server, nil)
	s.publish(change(server, "remote_url_changed", "high"))

	d := s.settled(key, endpointID, 1)[0]
	if d["status"] != "failed" || d["failure_reason"] != "endpoint_gone" || d["attempt_count"] != 1.0 {
		t.Fatalf("delivery = %v, want failed (endpoint_gone) after 1 attempt", d)
	}
	endpoints := s.call("GET", "/v1/intelligence/webhooks/endpoints", key, nil)
	var list []map[string]any
	_ = json.Unmarshal(endpoints.Body, &list)
	if len(list) != 1 || list[0]["status"] != "disabled" || list[0]["disabled_reason"] != "gone" {
		t.Fatalf("endpoints = %s, want the endpoint disabled (gone)", endpoints.Body)
	}

	// A disabled endpoint gets no new deliveries, and replay is refused until it is enabled.
	s.publish(change(server, "version_bump", "low"))
	eventually(t, "the second change to be handled", func() bool {
		return s.Count(`SELECT count(*) FROM webhook_inbox`) == 2
	})
	if n := len(s.deliveries(key, endpointID)); n != 1 {
		t.Errorf("deliveries after disabling = %d, want 1", n)
	}
	replay := s.call("POST", "/v1/intelligence/webhooks/deliveries/"+d["id"].(string)+"/replay", key, nil)
	if replay.Status != http.StatusConflict {
		t.Errorf("replay to a disabled endpoint: got %d %s, want 409", replay.Status, replay.Body)
	}
	e := s.must("POST", "/v1/intelligence/webhooks/endpoints/"+endpointID+"/enable", key, nil, http.StatusOK)
	if e["status"] != "active" || e["disabled_reason"] != "" {
		t.Errorf("enabled endpoint = %v, want active", e)
	}
	s.must("POST", "/v1/intelligence/webhooks/deliveries/"+d["id"].(string)+"/replay", key, nil, http.StatusOK)
	s.settled(key, endpointID, 2)
}

func TestDisableThreshold(t *testing.T) {
	t.Parallel()
	s := startWebhooks(t, catalog{server: true}, "", map[string]string{
		"VERIFICATION_WEBHOOK_MAX_ATTEMPTS":  "2",
		"VERIFICATION_WEBHOOK_DISABLE_AFTER": "2",
	})
	key := s.newKey("acme")
	recv := newReceiver(t, 500, 500, 500, 500, 500, 500)
	endpointID, _ := s.endpoint(key, recv.URL)
	s.watch(key, server, nil)

	s.publish(change(server, "remote_url_changed", "high"))
	first := s.settled(key, endpointID, 1)[0]
	if first["status"] != "exhausted" || first["attempt_count"] != 2.0 {
		t.Fatalf("delivery = %v, want exhausted after 2 attempts", first)
	}
	s.publish(change(server, "remote_url_changed", "high"))
	s.settled(key, endpointID, 2)
	var status, reason string
	var failures int
	if err := s.Pool.QueryRow(t.Context(), `SELECT CASE WHEN disabled_at IS NULL THEN 'active' ELSE 'disabled' END,
coalesce(disabled_reason, ''), consecutive_failures FROM webhook_endpoints`).Scan(&status, &reason, &failures); err != nil {
		t.Fatal(err)
	}
	if status != "disabled" || reason != "failing" || failures != 2 {
		t.Fatalf("endpoint = %s (%s, %d failures), want disabled (failing) after 2 exhausted deliveries", status, reason, failures)
	}
	enabled := s.must("POST", "/v1/intelligence/webhooks/endpoints/"+endpointID+"/enable", key, nil, http.StatusOK)
	if enabled["status"] != "active" || enabled["consecutive_failures"] != 0.0 {
		t.Errorf("enabled endpoint = %v, want active with 0 failures", enabled)
	}
}

func TestReplayKeepsEventID(t *testing.T) {
	t.Parallel()
	s := startWebhooks(t, catalog{server: true}, "", nil)
	key := s.newKey("acme")
	recv := newReceiver(t)
	endpointID, secret := s.endpoint(key, recv.URL)
	s.watch(key, server, nil)
	s.publish(change(server, "remote_url_changed", "high"))
	original := s.settled(key, endpointID, 1)[0]

	r := s.must("POST", "/v1/intelligence/webhooks/deliveries/"+original["id"].(string)+"/replay", key, nil, http.StatusOK)
	if r["event_id"] != original["event_id"] || r["replay_of"] != original["id"] || r["delivery_id"] == original["id"] {
		t.Fatalf("replay = %v, want a new delivery of event %v replaying %v", r, original["event_id"], original["id"])
	}
	s.settled(key, endpointID, 2)
	replayed := s.must("GET", "/v1/intelligence/webhooks/deliveries/"+r["delivery_id"].(string), key, nil, http.StatusOK)
	if replayed["status"] != "succeeded" || replayed["event_id"] != original["event_id"] {
		t.Errorf("replayed delivery = %v, want succeeded with the original event id", replayed)
	}
	reqs := recv.got()
	if len(reqs) != 2 || reqs[0].header.Get("webhook-id") != reqs[1].header.Get("webhook-id") || string(reqs[0].body) != string(reqs[1].body) {
		t.Fatalf("receiver got %d requests; want 2 with the same webhook-id and body", len(reqs))
	}
	wh, _ := standardwebhooks.NewWebhook(secret)
	if err := wh.Verify(reqs[1].body, reqs[1].header); err != nil {
		t.Errorf("replay signature: %v", err)
	}
	if again := s.must("GET", "/v1/intelligence/webhooks/deliveries/"+original["id"].(string), key, nil, http.StatusOK); again["attempt_count"] != 1.0 {
		t.Errorf("original delivery after replay = %v, want its single attempt untouched", again)
	}
}

// TestSlowFirstAttemptRecordsItself: a receiver that answers after the matcher's transaction has
// committed (it waits only a few milliseconds for first attempts) still gets one attempt, recorded by
// the attempt itself, and the delivery's lease ends with it.
func TestSlowFirstAttemptRecordsItself(t *testing.T) {
	t.Parallel()
	s := startWebhooks(t, catalog{server: true}, "", nil)
	key := s.newKey("acme")
	var calls atomic.Int32
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(slow.Close)
	endpointID, _ := s.endpoint(key, slow.URL)
	s.watch(key, server, nil)
	s.publish(change(server, "remote_url_changed", "high"))

	list := s.settled(key, endpointID, 1)
	d := s.must("GET", "/v1/intelligence/webhooks/deliveries/"+list[0]["id"].(string), key, nil, http.StatusOK)
	if d["status"] != "succeeded" || d["attempt_count"] != 1.0 || calls.Load() != 1 {
		t.Fatalf("delivery = %v after %d POSTs, want succeeded after one", d, calls.Load())
	}
	if n := s.Count(`SELECT count(*) FROM webhook_deliveries WHERE lease_until IS NOT NULL`); n != 0 {
		t.Errorf("leased deliveries = %d, want none", n)
	}
}
