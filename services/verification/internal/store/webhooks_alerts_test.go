package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// TestWebhookRecordEvent: an organization's own event goes once per key to each of its endpoints
// that takes its type and can receive, with a job each, and to no other organization's.
func TestWebhookRecordEvent(t *testing.T) {
	t.Parallel()
	pool, s, all := webhookFixture(t)
	ctx := context.Background()
	org := all.OrganizationID
	endpoint := func(org uuid.UUID, types ...string) webhooks.Endpoint {
		t.Helper()
		e, err := s.CreateEndpoint(ctx, webhooks.Endpoint{ID: uuid.New(), OrganizationID: org, URL: "https://hooks.example.com/" + uuid.NewString(),
			EventTypes: append([]string{}, types...)}, "whsec_AAAA", 10)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	alerts := endpoint(org, webhooks.EventTypeWatchAlert)
	endpoint(org, webhooks.EventTypeIntelChange)           // another type only
	revoked := endpoint(org, webhooks.EventTypeWatchAlert) // revoked
	if err := s.RevokeEndpoint(ctx, org, revoked.ID); err != nil {
		t.Fatal(err)
	}
	disabled := endpoint(org)
	if _, err := pool.Exec(ctx, `UPDATE webhook_endpoints SET disabled_at = now(), disabled_reason = 'gone' WHERE id = $1`, disabled.ID); err != nil {
		t.Fatal(err)
	}
	other := uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO organizations (id, name) VALUES ($1, 'other')`, other); err != nil {
		t.Fatal(err)
	}
	endpoint(other)

	jobs := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := jobs()
	ev := webhooks.Event{ID: uuid.New(), ChangeID: "watch.alert:" + uuid.NewString(), Type: webhooks.EventTypeWatchAlert, Payload: []byte(`{"type":"watch.alert"}`)}
	n, err := s.RecordEvent(ctx, org, ev, time.Hour)
	if err != nil || n != 2 {
		t.Fatalf("RecordEvent = %d, %v; want 2 deliveries (the endpoint of all types and the watch.alert one)", n, err)
	}
	rows, err := pool.Query(ctx, `SELECT endpoint_id FROM webhook_deliveries WHERE event_id = $1 AND status = 'pending' ORDER BY endpoint_id`, ev.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uuid.UUID]bool{}
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got[id] = true
	}
	if len(got) != 2 || !got[all.ID] || !got[alerts.ID] {
		t.Errorf("deliveries to %v, want %s and %s", got, all.ID, alerts.ID)
	}
	if d := jobs() - before; d != 2 {
		t.Errorf("%d jobs enqueued, want 2", d)
	}

	// The same key again: nothing.
	again := ev
	again.ID = uuid.New()
	if n, err := s.RecordEvent(ctx, org, again, time.Hour); err != nil || n != 0 {
		t.Errorf("RecordEvent of a key recorded before = %d, %v; want 0", n, err)
	}
	// A type no endpoint of an organization without a catch-all takes: nothing stored.
	lonely := uuid.New()
	if _, err := pool.Exec(ctx, `INSERT INTO organizations (id, name) VALUES ($1, 'lonely')`, lonely); err != nil {
		t.Fatal(err)
	}
	endpoint(lonely, webhooks.EventTypeIntelChange)
	recovered := webhooks.Event{ID: uuid.New(), ChangeID: "watch.recovered:" + uuid.NewString(), Type: webhooks.EventTypeWatchRecovered, Payload: []byte(`{}`)}
	if n, err := s.RecordEvent(ctx, lonely, recovered, time.Hour); err != nil || n != 0 {
		t.Errorf("RecordEvent without a receiving endpoint = %d, %v; want 0", n, err)
	}
	var events int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM webhook_events WHERE id = $1`, recovered.ID).Scan(&events); err != nil || events != 0 {
		t.Errorf("%d events stored for no endpoint (%v)", events, err)
	}
}
