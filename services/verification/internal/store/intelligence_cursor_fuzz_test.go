package store

import (
	"errors"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// FuzzDecodeTimelineCursor: a history cursor is client input. Anything decodes to a position or to
// fault.ErrBadCursor, and a position the store issued decodes to itself.
func FuzzDecodeTimelineCursor(f *testing.F) {
	f.Add("")
	f.Add(encodeTimelineCursor(timelinePos{at: time.UnixMicro(1_767_225_600_000_000), kind: kindSnapshot, seq: 42}))
	f.Add(encodeCursor(7))
	f.Add("dDE6MToxOjE")
	f.Fuzz(func(t *testing.T, s string) {
		pos, err := decodeTimelineCursor(s)
		if err != nil {
			if !errors.Is(err, fault.ErrBadCursor) {
				t.Fatalf("%q: got %v, want fault.ErrBadCursor", s, err)
			}
			return
		}
		if s == "" {
			return
		}
		again, err := decodeTimelineCursor(encodeTimelineCursor(pos))
		if err != nil || !again.at.Equal(pos.at) || again.kind != pos.kind || again.seq != pos.seq {
			t.Fatalf("%q: round trip of %+v gave %+v (%v)", s, pos, again, err)
		}
	})
}
