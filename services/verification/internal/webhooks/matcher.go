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
//
// It sends their first attempts itself, from this replica, rather than through the work queue: the
// deliveries are committed already leased to it, so a first attempt costs a POST and its record, not
// an outbox row, a relay, a broker round trip and a claim. It returns once each first attempt has
// one of the replica's delivery slots (Config.Workers, shared with the work queue's jobs), not when
// they end. An attempt this replica never records (it stopped, or crashed) becomes due when its lease
// runs out, and the scheduler enqueues its job like any retry's.
func (s *Service) HandleChange(ctx context.Context, c Change) (int, error) {
	if c.ID == "" || c.Namespace == "" || c.Name == "" {
		return 0, fault.ErrInvalidChange
	}
	ev, err := newEvent(c, s.now())
	if err != nil {
		return 0, err
	}
	leased := s.now()
	claims, err := s.store.RecordChange(ctx, c, ev, LeaseFor(s.cfg.Timeout))
	if err != nil {
		return 0, err
	}
	for _, cl := range claims {
		if !s.slots.acquire(ctx) {
			break // stopping: the leases run out and the scheduler enqueues these
		}
		s.sending.Go(func() {
			defer s.slots.release()
			s.sendFirst(ctx, cl, leased)
		})
	}
	return len(claims), nil
}

// sendFirst makes the first attempt of a delivery that RecordChange leased at leased, unless the lease
// has too little left for a POST and its record: that one is left to expire and go through the work
// queue. A record that fails leaves the delivery leased, the same as a job that was not acknowledged.
func (s *Service) sendFirst(ctx context.Context, c Claim, leased time.Time) {
	if s.now().Sub(leased) > leaseMargin {
		s.log.Warn("webhook delivery: first attempt waited past its lease; the work queue will send it",
			"delivery_id", c.DeliveryID, "endpoint_id", c.Endpoint.ID)
		return
	}
	out, err := s.attempt(ctx, c)
	if err != nil {
		return // stopping: nothing is recorded
	}
	if err := s.store.RecordOutcome(ctx, c, out); err != nil && ctx.Err() == nil {
		s.log.Warn("webhook delivery: first attempt not recorded; the work queue will send it again once its lease runs out",
			"delivery_id", c.DeliveryID, "error", err)
	}
}

// Wait waits for the first attempts in flight, which end soon after the context they were started
// with: call it after the matcher has stopped and before the store's pool closes.
func (s *Service) Wait() { s.sending.Wait() }

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
