package webhooks

import (
	"errors"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// TestEventOfIsStablePerChange: a change matched again (its transaction rolled back after its first
// attempts went out) gets the same event, id and bytes, so receivers see the same webhook-id; another
// change gets another id; a change without an id or a server is refused.
func TestEventOfIsStablePerChange(t *testing.T) {
	s := testService()
	c := Change{ID: "0b2c6f1e-6a55-4f0e-9a43-3b8a1c2d4e5f", Namespace: "io.github.acme", Name: "weather",
		ChangeType: "version_bump", Risk: "low", DetectedAt: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)}
	first, err := s.eventOf(c)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.eventOf(c)
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != again.ID || string(first.Payload) != string(again.Payload) {
		t.Errorf("matched twice: ids %s and %s, bodies equal %v", first.ID, again.ID, string(first.Payload) == string(again.Payload))
	}
	other := c
	other.ID = "5d1f0a2b-0c3e-4b7a-8f61-2e9d4c7b1a03"
	if ev, _ := s.eventOf(other); ev.ID == first.ID {
		t.Errorf("two changes share event id %s", ev.ID)
	}
	for _, bad := range []Change{{Namespace: "a", Name: "b"}, {ID: c.ID, Name: "b"}, {ID: c.ID, Namespace: "a"}} {
		if _, err := s.eventOf(bad); !errors.Is(err, fault.ErrInvalidChange) {
			t.Errorf("eventOf(%+v) = %v, want ErrInvalidChange", bad, err)
		}
	}
}
