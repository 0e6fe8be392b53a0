package meter

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// shardCount splits the key table so that Admits of different keys rarely share a lock.
const shardCount = 64

// keyTable maps key ids to their state. A sharded map rather than a sync.Map: the lookup of a string
// in a plain map allocates nothing, and eviction needs to delete under the same lock that Admit's
// lookup takes, so that no Admit keeps using a state that was dropped.
type keyTable struct {
	seed   maphash.Seed
	shards [shardCount]shard
}

type shard struct {
	mu   sync.RWMutex
	keys map[string]*keyState
	// Pads the shard to 64 bytes, a cache line: RLock writes the mutex, and neighbouring shards on
	// one line would make Admits of unrelated keys contend.
	_ [32]byte
}

func newKeyTable() *keyTable {
	t := &keyTable{seed: maphash.MakeSeed()}
	for i := range t.shards {
		t.shards[i].keys = make(map[string]*keyState)
	}
	return t
}

func (t *keyTable) shard(keyID string) *shard {
	return &t.shards[maphash.String(t.seed, keyID)%shardCount]
}

// lookup returns the key's state, or nil when the key has none.
func (t *keyTable) lookup(keyID string) *keyState {
	s := t.shard(keyID)
	s.mu.RLock()
	ks := s.keys[keyID]
	s.mu.RUnlock()
	return ks
}

// get returns the key's state, creating it on the key's first use. Only UUIDs become keys: the key
// id is a UUID column of every row the meter writes (and a foreign key of the usage counters), and a
// row the database rejects would fail its batch on every retry.
func (t *keyTable) get(keyID string) (*keyState, error) {
	if ks := t.lookup(keyID); ks != nil {
		return ks, nil
	}
	if _, ok := parseUUID(keyID); !ok {
		return nil, fmt.Errorf("meter: key id %q is not a UUID", keyID)
	}
	s := t.shard(keyID)
	s.mu.Lock()
	defer s.mu.Unlock()
	ks := s.keys[keyID]
	if ks == nil {
		// A clone, so that the table does not keep alive the request buffer the id was cut from.
		ks = &keyState{keyID: strings.Clone(keyID)}
		s.keys[ks.keyID] = ks
	}
	return ks, nil
}

// evictIdle drops the state of keys unused for idle with nothing running or unwritten, so that
// memory follows the active keys. The rate bucket of such a key is full again (the slowest plan,
// trial, refills its burst in 5 s), and its usage is reloaded from the sink on its next use.
func (t *keyTable) evictIdle(now time.Time, idle time.Duration) int {
	evicted := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for id, ks := range s.keys {
			ks.mu.Lock()
			if ks.idle(now, idle) {
				ks.evicted = true
				delete(s.keys, id)
				evicted++
			}
			ks.mu.Unlock()
		}
		s.mu.Unlock()
	}
	return evicted
}

// keyState is one key's limits and its usage in the current period on this replica. Its fields are
// guarded by mu.
type keyState struct {
	keyID string

	mu sync.Mutex
	// evicted is set when the table dropped this state; a caller that found it before must look the
	// key up again.
	evicted  bool
	lastUsed time.Time

	limiter *rate.Limiter
	rate    float64 // the limiter's settings, to notice a plan change (a trial upgraded in place)
	burst   int

	inFlight int
	reserved int64 // calls admitted and not yet committed or released

	// Usage of month, the current period. Used = base + pending + inDoubt:
	//   base:    the sink's count at the last load, plus what this replica confirmed writing since;
	//   pending: committed here, not yet in a batch;
	//   inDoubt: in a batch that was sent and not yet confirmed (running, or failed and kept for retry).
	month     int32 // year*12 + month-1, see monthOf
	loaded    bool
	checkedAt time.Time // the last load or refresh attempt
	base      int64
	pending   int64
	inDoubt   int64
	confirmed int64  // calls confirmed since the period began, to correct a load that overlapped a write
	epoch     uint64 // changes whenever a batch of this key and month is sent or confirmed
}

func (ks *keyState) used() int64 { return ks.base + ks.pending + ks.inDoubt }

// roll moves the state to month when it is newer (month rollover, or the key's first use). Running
// tickets keep their reservations: they count against whichever period they commit in.
func (ks *keyState) roll(month int32) {
	if month <= ks.month {
		return
	}
	ks.month, ks.loaded, ks.checkedAt = month, false, time.Time{}
	ks.base, ks.pending, ks.inDoubt, ks.confirmed = 0, 0, 0, 0
	ks.epoch++
}

func (ks *keyState) idle(now time.Time, idle time.Duration) bool {
	return now.Sub(ks.lastUsed) >= idle && ks.inFlight == 0 && ks.reserved == 0 && ks.pending == 0 && ks.inDoubt == 0
}

// needsLoad reports whether the persisted count must be read: never read this period, or last read
// refreshEvery ago (another replica may have written since).
func (ks *keyState) needsLoad(now time.Time, refreshEvery time.Duration) bool {
	return !ks.loaded || now.Sub(ks.checkedAt) >= refreshEvery
}

// loadRequest remembers the state at the start of a read of the sink, to judge the value it returns.
type loadRequest struct {
	month     int32
	epoch     uint64
	inDoubt   int64
	confirmed int64
}

func (ks *keyState) beginLoad(now time.Time) loadRequest {
	ks.checkedAt = now
	return loadRequest{month: ks.month, epoch: ks.epoch, inDoubt: ks.inDoubt, confirmed: ks.confirmed}
}

// applyLoad takes the persisted count v read for r. The read is exact when no batch of this key was
// in doubt at its start and none was sent or confirmed during it: v then holds everything this
// replica wrote and nothing it has not. Otherwise v may or may not include those batches. A first
// load takes the larger reading (v plus what was confirmed meanwhile), which may count an in-doubt
// batch twice: a trial key is then stopped a few calls early until the next exact refresh, never let
// past its quota. A refresh keeps the value it had and tries again at the next refresh interval.
func (ks *keyState) applyLoad(v int64, r loadRequest) {
	if ks.month != r.month {
		return
	}
	switch {
	case ks.epoch == r.epoch && r.inDoubt == 0:
		ks.base, ks.loaded = v, true
	case !ks.loaded:
		ks.base, ks.loaded = v+ks.confirmed-r.confirmed, true
	}
}

// admit applies the plan's limits to a request of n calls and reserves them. The checks that change
// nothing come first, so that a request refused for its in-flight count or quota costs no token.
func (ks *keyState) admit(now time.Time, p Plan, n int) error {
	if ks.inFlight >= p.MaxInFlight {
		return &LimitError{Err: ErrInFlight}
	}
	if left := p.IncludedCalls - ks.used() - ks.reserved; p.HardQuota && int64(n) > left {
		return &LimitError{Err: ErrQuotaExhausted, RetryAfter: periodEnd(ks.month).Sub(now), Needed: int64(n), Remaining: max(left, 0), Included: p.IncludedCalls}
	}
	ks.setRate(now, p)
	if !ks.limiter.AllowN(now, 1) {
		return &LimitError{Err: ErrRateLimited, RetryAfter: ks.nextToken(now)}
	}
	ks.inFlight++
	ks.reserved += int64(n)
	return nil
}

// setRate creates the key's limiter, or retunes it when the plan changed. rate.Limiter.AllowN
// allocates nothing (see TestAdmitAllocatesNothing), so no hand-written bucket is needed.
func (ks *keyState) setRate(now time.Time, p Plan) {
	if ks.limiter == nil {
		ks.limiter = rate.NewLimiter(rate.Limit(p.RatePerSecond), p.Burst)
	} else {
		if ks.rate != p.RatePerSecond {
			ks.limiter.SetLimitAt(now, rate.Limit(p.RatePerSecond))
		}
		if ks.burst != p.Burst {
			ks.limiter.SetBurstAt(now, p.Burst)
		}
	}
	ks.rate, ks.burst = p.RatePerSecond, p.Burst
}

// nextToken is the wait until the key's bucket holds one token again.
func (ks *keyState) nextToken(now time.Time) time.Duration {
	missing := 1 - ks.limiter.TokensAt(now)
	if missing <= 0 || ks.rate <= 0 {
		return 0
	}
	return time.Duration(missing / ks.rate * float64(time.Second))
}

// release ends a ticket of n calls. It leaves lastUsed at the Admit: the clock is half the cost of
// Admit+Release (BenchmarkAdmit), and a key whose last request started idleTTL ago has a full bucket.
func (ks *keyState) release(n int) {
	ks.inFlight--
	ks.reserved -= int64(n)
}

// bill counts k calls committed in month.
func (ks *keyState) bill(k int, month int32) {
	ks.roll(month)
	if month == ks.month {
		ks.pending += int64(k)
	}
}

// send moves calls of month from pending to in doubt: a batch holding them is about to be written.
func (ks *keyState) send(month int32, calls int64) {
	if month != ks.month {
		return
	}
	ks.pending -= calls
	ks.inDoubt += calls
	ks.epoch++
}

// confirm records that a batch holding calls of month was written.
func (ks *keyState) confirm(month int32, calls int64) {
	if month != ks.month {
		return
	}
	ks.inDoubt -= calls
	ks.base += calls
	ks.confirmed += calls
	ks.epoch++
}

// monthOf numbers the calendar month (UTC) of t, so that the hot path compares integers and formats
// a period string only when it writes.
func monthOf(t time.Time) int32 {
	y, m, _ := t.UTC().Date()
	return int32(y*12 + int(m) - 1)
}

// period formats a month number as the usage period of README "Keys, limits and metering", "2026-11".
func period(month int32) string {
	return fmt.Sprintf("%04d-%02d", month/12, month%12+1)
}

// periodEnd is the first instant of the month after month.
func periodEnd(month int32) time.Time {
	return time.Date(int(month/12), time.Month(month%12+1)+1, 1, 0, 0, 0, 0, time.UTC)
}
