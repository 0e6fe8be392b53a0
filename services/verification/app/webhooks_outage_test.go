package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/natstest"
)

// TestNATSOutageLosesNothing stops NATS, commits changes, and starts it again: every change is
// delivered once (first attempts do not go through NATS), and the changes' events wait in the outbox
// until NATS is back.
func TestNATSOutageLosesNothing(t *testing.T) {
	t.Parallel()
	nats := natstest.Start(t)
	s := startWebhooks(t, catalog{server: true}, nats.URL(), nil)
	key := s.newKey("acme")
	recv := newReceiver(t)
	endpointID, _ := s.endpoint(key, recv.URL)
	s.watch(key, server, nil)
	s.publish(change(server, "version_bump", "low"))
	s.settled(key, endpointID, 1) // the pipeline runs before the outage

	nats.Stop()
	const during = 5
	for range during {
		s.publish(change(server, "remote_url_changed", "high"))
	}
	time.Sleep(300 * time.Millisecond) // let the relays fail against the stopped server
	if n := s.Count(`SELECT count(*) FROM outbox WHERE published_at IS NULL`); n != during {
		t.Fatalf("pending outbox rows while NATS is down = %d, want %d", n, during)
	}
	nats.Restart()

	for _, d := range s.settled(key, endpointID, 1+during) {
		if d["status"] != "succeeded" {
			t.Errorf("delivery %v: want succeeded", d)
		}
	}
	ids := map[string]bool{}
	for _, r := range recv.got() {
		ids[r.header.Get("webhook-id")] = true
	}
	if len(ids) != 1+during {
		t.Errorf("receiver saw %d distinct events, want %d", len(ids), 1+during)
	}
}

// TestChangeHandledOnce publishes the same change twice (a registry sync that re-sent it): the
// matcher's inbox makes the second a no-op.
func TestChangeHandledOnce(t *testing.T) {
	t.Parallel()
	s := startWebhooks(t, catalog{server: true}, "", nil)
	key := s.newKey("acme")
	recv := newReceiver(t)
	endpointID, _ := s.endpoint(key, recv.URL)
	s.watch(key, server, nil)
	c := change(server, "remote_url_changed", "high")
	s.publish(c)
	s.publish(c)
	eventually(t, "both copies to be handled", func() bool {
		return s.Count(`SELECT count(*) FROM outbox WHERE subject LIKE 'intel.change.%' AND published_at IS NULL`) == 0
	})
	s.settled(key, endpointID, 1)
	marker := change(server, "version_bump", "low") // handled after both copies were consumed
	s.publish(marker)
	s.settled(key, endpointID, 2)
	if n := s.Count(`SELECT count(*) FROM webhook_events WHERE change_id = $1`, c.GetChangeId()); n != 1 {
		t.Errorf("events for the change = %d, want 1", n)
	}
}

func TestWatchFilters(t *testing.T) {
	t.Parallel()
	s := startWebhooks(t, catalog{server: true, "io.github.acme/other": true}, "", nil)
	key := s.newKey("acme")
	recv := newReceiver(t)
	chosen, _ := s.endpoint(key, recv.URL+"/chosen")
	ignored, _ := s.endpoint(key, recv.URL+"/ignored")
	s.watch(key, server, map[string]any{"change_types": []string{"remote_url_changed", "package_changed"}, "min_risk": "medium", "endpoint_ids": []string{chosen}})

	s.publish(change(server, "version_bump", "high"))                       // type filtered out
	s.publish(change(server, "remote_url_changed", "low"))                  // below min_risk
	s.publish(change("io.github.acme/other", "remote_url_changed", "high")) // server not watched
	keep := change(server, "package_changed", "medium")
	s.publish(keep)
	eventually(t, "all four changes to be handled", func() bool {
		return s.Count(`SELECT count(*) FROM webhook_inbox`) == 4
	})
	got := s.settled(key, chosen, 1)
	d := s.must("GET", "/v1/intelligence/webhooks/deliveries/"+got[0]["id"].(string), key, nil, http.StatusOK)
	if d["change_id"] != keep.GetChangeId() {
		t.Errorf("delivered change %v, want %s", d["change_id"], keep.GetChangeId())
	}
	if n := len(s.deliveries(key, ignored)); n != 0 {
		t.Errorf("endpoint outside endpoint_ids got %d deliveries, want 0", n)
	}
}
