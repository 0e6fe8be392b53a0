package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Event types of the watch API's runs (README, "Runs, scheduling and alerts"): they go to every
// endpoint of the run's organization that takes them, without a watch of a registry server.
const (
	EventTypeWatchAlert     = "watch.alert"
	EventTypeWatchRecovered = "watch.recovered"
)

// EventTypes lists the event types an endpoint may declare.
var EventTypes = []string{EventTypeIntelChange, EventTypeWatchAlert, EventTypeWatchRecovered}

// OrgEvent is an event of one organization's own (a watch run's alert or recovery), delivered to
// each of its endpoints that takes its type.
type OrgEvent struct {
	OrganizationID uuid.UUID
	// Type is EventTypeWatchAlert or EventTypeWatchRecovered.
	Type string
	// Key makes the event idempotent: a second Publish of a key delivers nothing. It is stored as
	// the event's change_id, which delivery listings show.
	Key string
	// At is the event's timestamp.
	At time.Time
	// Data is the event's data, a JSON object.
	Data json.RawMessage
}

// orgEventBody is the JSON receivers get, in the Standard Webhooks shape, as EventBody is.
type orgEventBody struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Timestamp time.Time       `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

// Publish records e once per key: its body {type, id, timestamp, data}, built once and stored so that
// every attempt and replay sends the same bytes, and one pending delivery (with its job) to every
// endpoint of the organization that is neither revoked nor disabled and takes e.Type, in one
// transaction (Store.RecordEvent). It returns how many deliveries it created.
func (s *Service) Publish(ctx context.Context, e OrgEvent) (int, error) {
	if e.Type != EventTypeWatchAlert && e.Type != EventTypeWatchRecovered {
		return 0, fmt.Errorf("webhooks: %q is not an organization event type", e.Type)
	}
	if e.Key == "" || !json.Valid(e.Data) {
		return 0, fmt.Errorf("webhooks: an organization event needs a key and JSON data")
	}
	id := uuid.Must(uuid.NewV7())
	at := e.At
	if at.IsZero() {
		at = s.now()
	}
	body, err := json.Marshal(orgEventBody{Type: e.Type, ID: id.String(), Timestamp: at.UTC(), Data: e.Data})
	if err != nil {
		return 0, err
	}
	return s.store.RecordEvent(ctx, e.OrganizationID, Event{ID: id, ChangeID: e.Key, Type: e.Type, Payload: body}, s.cfg.RequeueAfter)
}

// knownEventType reports whether an endpoint may declare t.
func knownEventType(t string) bool { return slices.Contains(EventTypes, t) }
