package webhooks

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// eventStore records the events Publish hands it; the rest of Store is not used.
type eventStore struct {
	Store
	org uuid.UUID
	ev  Event
}

func (s *eventStore) RecordEvent(_ context.Context, org uuid.UUID, ev Event, _ time.Duration) (int, error) {
	s.org, s.ev = org, ev
	return 1, nil
}

func TestEndpointEventTypes(t *testing.T) {
	s := testService()
	e, err := s.checkEndpoint(NewEndpoint{URL: "https://hooks.example.com/in",
		EventTypes: []string{EventTypeWatchAlert, EventTypeIntelChange, EventTypeWatchAlert, EventTypeWatchRecovered}})
	if err != nil || !slices.Equal(e.EventTypes, []string{EventTypeWatchAlert, EventTypeIntelChange, EventTypeWatchRecovered}) {
		t.Errorf("event types %q, %v; want each known type once", e.EventTypes, err)
	}
	if _, err := s.checkEndpoint(NewEndpoint{URL: "https://hooks.example.com/in", EventTypes: []string{"watch.*"}}); err == nil {
		t.Error("an unknown event type was accepted")
	}
}

func TestPublish(t *testing.T) {
	st := &eventStore{}
	s := NewService(st, nil, Config{RequeueAfter: time.Minute})
	org := uuid.New()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	n, err := s.Publish(context.Background(), OrgEvent{OrganizationID: org, Type: EventTypeWatchAlert, Key: "watch.alert:1", At: at,
		Data: json.RawMessage(`{"run":{"alert":true}}`)})
	if err != nil || n != 1 {
		t.Fatalf("Publish = %d, %v", n, err)
	}
	var body struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(st.ev.Payload, &body); err != nil {
		t.Fatal(err)
	}
	if st.org != org || st.ev.ChangeID != "watch.alert:1" || st.ev.Type != EventTypeWatchAlert || body.Type != EventTypeWatchAlert ||
		body.ID != st.ev.ID.String() || !body.Timestamp.Equal(at) || string(body.Data) != `{"run":{"alert":true}}` {
		t.Errorf("event %+v, body %s", st.ev, st.ev.Payload)
	}
	// Signed like any event, it verifies with the reference library.
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	h, err := SignedHeaders(secret, st.ev.ID.String(), time.Now(), st.ev.Payload)
	if err != nil {
		t.Fatal(err)
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(st.ev.Payload, h); err != nil {
		t.Errorf("Verify: %v", err)
	}

	for name, e := range map[string]OrgEvent{
		"intel.change": {Type: EventTypeIntelChange, Key: "k", Data: json.RawMessage(`{}`)},
		"no key":       {Type: EventTypeWatchRecovered, Data: json.RawMessage(`{}`)},
		"bad data":     {Type: EventTypeWatchRecovered, Key: "k", Data: json.RawMessage(`{`)},
	} {
		if _, err := s.Publish(context.Background(), e); err == nil {
			t.Errorf("%s: published", name)
		}
	}
}
