package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/periodic"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// MatcherConcurrency is how many changes one replica matches at once: each is one short transaction,
// and changes are independent (idempotent by change id), so their order does not matter.
const MatcherConcurrency = 16

// matcherPoll is how often an idle matcher looks at its queue without a wake-up, in case one was lost
// (the listener reconnecting, say).
const matcherPoll = time.Second

// ErrChangeDropped wraps why a queued change could never be matched: it left the queue.
var ErrChangeDropped = errors.New("change dropped")

// RunMatcher turns queued changes into deliveries until ctx ends: MatcherConcurrency loops, each
// taking one change at a time (Store.MatchNext), woken by Wake when a change is queued or when the
// change a matcher took has others queued behind it and, one of them, every matcherPoll otherwise.
// Several replicas may run it: a change is taken by one of them.
//
// The replica that matches a change sends the first attempts of its deliveries itself, during the
// transaction that takes the change, rather than through the work queue (firstAttempts): the
// outcomes of receivers that answer at once are recorded in that same transaction with the
// deliveries, so that a change costs one transaction, not a job per delivery with its outbox row,
// relay, broker round trip, claim and record. Attempts take the replica's delivery slots
// (Config.Workers, shared with the work queue's jobs). An attempt this replica never records (it
// stopped, or crashed) becomes due when its lease runs out, and the scheduler enqueues its job like
// any retry's. RunMatcher returns when ctx ends and every first attempt has ended.
func (s *Service) RunMatcher(ctx context.Context) error {
	var loops sync.WaitGroup
	for range MatcherConcurrency {
		loops.Go(func() { s.matchLoop(ctx) })
	}
	// The loops start asleep and wake one another while changes are queued behind the ones they take,
	// and one wake-up a poll rather than one per loop: an idle replica uses one connection a second,
	// not one per matcher. A matcher that takes the last queued change wakes none: one change at a
	// time costs one transaction, not one more that finds the queue empty.
	s.Wake() // what was queued before the start
	poll := time.NewTicker(matcherPoll)
	defer poll.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-poll.C:
			s.Wake()
		}
	}
	loops.Wait()
	s.sending.Wait()
	return ctx.Err()
}

func (s *Service) matchLoop(ctx context.Context) {
	backoff := matcherPoll
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		}
		first := &firstAttempts{s: s, ctx: ctx, leased: s.now()}
		found, err := s.store.MatchNext(ctx, s.Wake, s.eventOf, LeaseFor(s.cfg.Timeout), first.send)
		first.finish(err == nil)
		switch {
		case errors.Is(err, ErrChangeDropped):
			s.log.Error("webhook matcher: change dropped", "error", err)
			s.Wake()
		case err != nil:
			if ctx.Err() == nil {
				s.log.Warn("webhook matcher: change not matched; will retry", "error", err, "retry_in", backoff.String())
			}
			_ = periodic.Sleep(ctx, backoff) // the loop's condition sees ctx end
			backoff = min(2*backoff, 30*time.Second)
			s.Wake()
		case found:
			backoff = matcherPoll
		}
	}
}

// eventOf builds the event of a change (Store.MatchNext calls it); a change without an id or a
// server is refused.
func (s *Service) eventOf(c Change) (Event, error) {
	if c.ID == "" || c.Namespace == "" || c.Name == "" {
		return Event{}, fault.ErrInvalidChange
	}
	return newEvent(c, s.now())
}

// Wake wakes a matcher, if none is waking already: changes were queued. One wake-up may stand for
// many changes; each matcher takes one at a time and wakes another while more are queued.
func (s *Service) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
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

// changeEventSpace is the name space of the change events' ids (RFC 9562 name-based UUIDs).
var changeEventSpace = uuid.MustParse("9b0f6a8e-3c1d-5e2f-8a47-6d1c2b3e4f50")

func newEvent(c Change, now time.Time) (Event, error) {
	// The id derives from the change's, so that a change matched again (its transaction rolled
	// back after its first attempts went out) reaches receivers under the same webhook-id.
	id := uuid.NewSHA1(changeEventSpace, []byte(c.ID))
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
