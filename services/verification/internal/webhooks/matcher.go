package webhooks

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// HandleChange turns a change into deliveries: one per endpoint of each organization whose active
// watch of the server matches it (Store.RecordChange). It is idempotent by change id and returns how
// many deliveries it created.
func (s *Service) HandleChange(ctx context.Context, c Change) (int, error) {
	if c.ID == "" || c.Namespace == "" || c.Name == "" {
		return 0, fault.ErrInvalidChange
	}
	ev, err := newEvent(c, s.now())
	if err != nil {
		return 0, err
	}
	return s.store.RecordChange(ctx, c, ev, s.cfg.RequeueAfter)
}

// EventBody is the JSON every receiver gets, in the Standard Webhooks shape {type, timestamp, data}
// plus the event id (equal to the webhook-id header):
//
//	{"type":"intel.change","id":"<uuid>","timestamp":"<RFC 3339>","data":{"change_id":...,
//	 "namespace":...,"name":...,"from_version":...,"to_version":...,"change_type":...,"risk":...,
//	 "summary":...,"field":...,"old_value":...,"new_value":...,"detected_at":"<RFC 3339>"}}
//
// timestamp is when the change was detected. The body is built once per change and stored, so every
// attempt and replay sends the same bytes.
type EventBody struct {
	Type      string     `json:"type"`
	ID        string     `json:"id"`
	Timestamp time.Time  `json:"timestamp"`
	Data      ChangeData `json:"data"`
}

// ChangeData is the data of an intel.change event: the IntelChange fields.
type ChangeData struct {
	ChangeID    string    `json:"change_id"`
	Namespace   string    `json:"namespace"`
	Name        string    `json:"name"`
	FromVersion string    `json:"from_version"`
	ToVersion   string    `json:"to_version"`
	ChangeType  string    `json:"change_type"`
	Risk        string    `json:"risk"`
	Summary     string    `json:"summary"`
	Field       string    `json:"field"`
	OldValue    string    `json:"old_value"`
	NewValue    string    `json:"new_value"`
	DetectedAt  time.Time `json:"detected_at"`
}

func newEvent(c Change, now time.Time) (Event, error) {
	id := uuid.Must(uuid.NewV7())
	at := c.DetectedAt
	if at.IsZero() {
		at = now
	}
	at = at.UTC()
	body, err := json.Marshal(EventBody{
		Type: EventTypeIntelChange, ID: id.String(), Timestamp: at,
		Data: ChangeData{
			ChangeID: c.ID, Namespace: c.Namespace, Name: c.Name, FromVersion: c.FromVersion, ToVersion: c.ToVersion,
			ChangeType: c.ChangeType, Risk: c.Risk, Summary: c.Summary, Field: c.Field, OldValue: c.OldValue,
			NewValue: c.NewValue, DetectedAt: at,
		},
	})
	if err != nil {
		return Event{}, err
	}
	return Event{ID: id, ChangeID: c.ID, Type: EventTypeIntelChange, Payload: body}, nil
}
