package readcache

import (
	"testing"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// TestHeadsKeepOnlyWhatNoChangeOvertook runs the orders in which a read (Begin, the database, Add)
// and the listener (Live, Forget, ForgetAll) can interleave, and what the cache must hold after.
func TestHeadsKeepOnlyWhatNoChangeOvertook(t *testing.T) {
	t.Parallel()
	a := intelligence.ServerKey{Namespace: "io.example", Name: "a"}
	b := intelligence.ServerKey{Namespace: "io.example", Name: "b"}
	head := intelligence.ServerHead{ID: uuid.New(), Key: a, CurrentSnapshotID: uuid.New(), ChangeCount: 3}
	type want struct{ ok, exists bool }
	for _, tc := range []struct {
		name string
		// between runs after Begin and before Add, as the listener would.
		before, between func(h *Heads)
		exists          bool
		want            want
	}{
		{name: "live, nothing heard", exists: true, want: want{ok: true, exists: true}},
		{name: "unknown server, nothing heard", exists: false, want: want{ok: true, exists: false}},
		{name: "not live: nothing is kept", before: func(h *Heads) { h.Live(false) }, exists: true},
		{name: "the listener was lost during the read", between: func(h *Heads) { h.Live(false) }, exists: true},
		{name: "the listener came back during the read", before: func(h *Heads) { h.Live(false) }, between: func(h *Heads) { h.Live(true) }, exists: true},
		{name: "the server changed during the read", between: func(h *Heads) { h.Forget(a) }, exists: true},
		{name: "the server appeared during a read that missed it", between: func(h *Heads) { h.Forget(a) }, exists: false},
		{name: "another server changed during the read (one epoch for all)", between: func(h *Heads) { h.Forget(b) }, exists: true},
		{name: "everything changed during the read", between: func(h *Heads) { h.ForgetAll() }, exists: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := NewHeads(10)
			h.Live(true)
			if tc.before != nil {
				tc.before(h)
			}
			token := h.Begin()
			if tc.between != nil {
				tc.between(h)
			}
			h.Add(token, a, head, tc.exists)
			got, exists, ok := h.Head(a)
			if ok != tc.want.ok || exists != tc.want.exists {
				t.Fatalf("after the read: got ok %v exists %v, want ok %v exists %v", ok, exists, tc.want.ok, tc.want.exists)
			}
			if exists && got != head {
				t.Errorf("got head %+v, want %+v", got, head)
			}
		})
	}
}

// TestHeadsForget: a change of a server drops it (known or unknown) and only it; ForgetAll and the
// loss of the listener drop everything; a known server's entry replaces its unknown one.
func TestHeadsForget(t *testing.T) {
	t.Parallel()
	a := intelligence.ServerKey{Namespace: "io.example", Name: "a"}
	b := intelligence.ServerKey{Namespace: "io.example", Name: "b"}
	c := intelligence.ServerKey{Namespace: "io.example", Name: "c"}
	fill := func() *Heads {
		h := NewHeads(10)
		h.Live(true)
		h.Add(h.Begin(), a, intelligence.ServerHead{Key: a}, true)
		h.Add(h.Begin(), b, intelligence.ServerHead{}, false)
		h.Add(h.Begin(), c, intelligence.ServerHead{Key: c}, true)
		return h
	}
	cached := func(h *Heads, k intelligence.ServerKey) bool { _, _, ok := h.Head(k); return ok }

	h := fill()
	h.Forget(a)
	h.Forget(b)
	if cached(h, a) || cached(h, b) || !cached(h, c) {
		t.Errorf("after forgetting a and b: cached a %v, b %v, c %v; want false, false, true", cached(h, a), cached(h, b), cached(h, c))
	}
	h = fill()
	h.ForgetAll()
	if h.Len() != 0 {
		t.Errorf("after ForgetAll: got %d entries, want 0", h.Len())
	}
	h = fill()
	h.Live(false)
	h.Live(true)
	if h.Len() != 0 {
		t.Errorf("after the listener came back: got %d entries, want 0", h.Len())
	}
	h = fill()
	h.Add(h.Begin(), b, intelligence.ServerHead{Key: b}, true)
	if _, exists, ok := h.Head(b); !ok || !exists || h.Len() != 3 {
		t.Errorf("b found after it was unknown: got ok %v exists %v and %d entries, want true, true, 3", ok, exists, h.Len())
	}
}

// TestHeadsAreBounded: an LRU of max heads, and the unknown servers apart, so that reads of made-up
// names do not evict real servers.
func TestHeadsAreBounded(t *testing.T) {
	t.Parallel()
	h := NewHeads(2)
	h.Live(true)
	keys := []intelligence.ServerKey{{Namespace: "x", Name: "1"}, {Namespace: "x", Name: "2"}, {Namespace: "x", Name: "3"}}
	for _, k := range keys {
		h.Add(h.Begin(), k, intelligence.ServerHead{Key: k}, true)
	}
	if _, _, ok := h.Head(keys[0]); ok {
		t.Error("the least recently used head was kept past the bound")
	}
	for range 2 * maxMissing {
		h.Add(h.Begin(), intelligence.ServerKey{Namespace: "made", Name: uuid.NewString()}, intelligence.ServerHead{}, false)
	}
	for _, k := range keys[1:] {
		if _, exists, ok := h.Head(k); !ok || !exists {
			t.Errorf("%v: evicted by unknown servers", k)
		}
	}
	if got := h.Len(); got != 2+maxMissing {
		t.Errorf("got %d entries, want %d", got, 2+maxMissing)
	}
}
