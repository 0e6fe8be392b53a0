// Package meter enforces the per-key limits of the scoring routes (request rate, requests in flight,
// the trial's monthly quota) and meters the billable calls: each successful scoring call is counted
// in memory and written to the Sink in batches, together with its request record.
//
// Its routes are the usage area's (usage.proto, api/usage.go, store/usage.go): GET /v1/limits and
// GET /v1/usage. The package is named for what it does on every scoring request rather than for
// those two readers: score admits each request through it before deciding and commits the billed
// calls after, and feedback finds the request records it keeps; a package usage would hide both.
//
// Consistency (README "Keys, limits and metering": usage reports are eventually consistent within the batch flush
// interval). A replica reads a key's persisted count for the period once, then counts locally: the
// count it enforces is that reading, plus the calls it wrote since, plus those still buffered, plus
// those admitted and still running. With several replicas each one enforces the quota from the
// database state at its last reading plus its own traffic: it rereads a key in use with a hard quota
// every RefreshIntervals flush intervals, so the replicas converge, and a trial key may pass its
// quota by what the other replicas admitted within that window.
package meter

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
)

const (
	defaultFlushInterval = time.Second
	// RefreshIntervals is how many flush intervals a replica enforces a hard quota on its last reading
	// of the persisted count before it reads it again: the window in which replicas may disagree.
	RefreshIntervals = 10
	// defaultMaxBatch is the number of pending records that starts a flush before the next tick, so
	// that heavy traffic writes batches of bounded size (about 5 MB of records) rather than one per
	// second of any size. Every flush also updates one usage counter per key it carries, so flushing
	// more often costs PostgreSQL more: with 1,000 active keys, 5,000-record batches cost it 5.4 µs
	// of CPU per record and 20,000-record batches 3.65 µs (BenchmarkWriteBatch/keys=1000). One replica
	// serving up to 20,000 requests/s flushes once per interval.
	defaultMaxBatch = 20_000
	// idleTTL is how long an unused key keeps its state in memory.
	idleTTL = 10 * time.Minute
	// finalFlushTimeout bounds the flush at shutdown, which runs after Run's context ended.
	finalFlushTimeout = 10 * time.Second
)

// Meter holds the limits state of every active key and the usage not yet written. It is safe for
// concurrent use.
type Meter struct {
	sink          Sink
	now           func() time.Time
	log           *slog.Logger
	upgradeURL    string
	flushInterval time.Duration
	refreshEvery  time.Duration
	maxBatch      int

	keys *keyTable
	// kick asks Run for a flush before the next tick, when maxBatch records are pending.
	kick chan struct{}

	mu        sync.Mutex
	usage     map[usageKey]int64 // calls committed and not yet taken into a batch
	records   []Record
	recordIDs map[recordKey]struct{} // request ids of the records not yet taken into a batch
	// takenIDs are the request ids of the outstanding batch's records, dropped whole once it is
	// written: deleting them one by one from recordIDs held mu, and a replica's only processor, for
	// a millisecond after each flush of 12,000 records.
	takenIDs map[recordKey]struct{}

	// flushMu makes flushes take turns, so that a batch is written by one flush at a time and in
	// order; outstanding is the batch whose write failed, retried with its ID by the next flush.
	flushMu     sync.Mutex
	outstanding *pendingBatch
	lastSweep   time.Time // owned by Run
}

type usageKey struct {
	keyID string
	month int32
}

// pendingBatch is a batch with the month of each usage delta (keys[i] is Usage[i]'s key and month).
type pendingBatch struct {
	batch Batch
	keys  []usageKey
}

// Option configures a Meter.
type Option func(*Meter)

// WithFlushInterval sets how often Run writes the pending usage (default 1 s): the delay after which
// usage reports and other replicas see a call. Non-positive values are ignored.
func WithFlushInterval(d time.Duration) Option {
	return func(m *Meter) {
		if d > 0 {
			m.flushInterval = d
		}
	}
}

// WithClock sets the meter's clock (default time.Now): tests step it to refill buckets and to cross
// a month.
func WithClock(now func() time.Time) Option { return func(m *Meter) { m.now = now } }

// WithUpgradeURL names where an account on a hard-quota plan upgrades: the refusal of a request
// past the quota (LimitError) and the usage of such a key (Usage) carry it.
func WithUpgradeURL(u string) Option { return func(m *Meter) { m.upgradeURL = u } }

// WithLogger sets where failed flushes and dropped records are reported (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(m *Meter) { m.log = l } }

// WithMaxBatch sets the number of pending request records at which Run flushes without waiting for
// the next tick (default 5,000). Non-positive values are ignored.
func WithMaxBatch(n int) Option {
	return func(m *Meter) {
		if n > 0 {
			m.maxBatch = n
		}
	}
}

// New returns a Meter writing to sink. Call Run to flush in the background.
func New(sink Sink, opts ...Option) *Meter {
	m := &Meter{
		sink:          sink,
		now:           time.Now,
		log:           slog.Default(),
		flushInterval: defaultFlushInterval,
		maxBatch:      defaultMaxBatch,
		keys:          newKeyTable(),
		kick:          make(chan struct{}, 1),
		usage:         make(map[usageKey]int64),
		recordIDs:     make(map[recordKey]struct{}),
	}
	for _, o := range opts {
		o(m)
	}
	m.refreshEvery = RefreshIntervals * m.flushInterval
	return m
}

// Admit applies the key's limits to a scoring request of n calls (1, or the items of a batch): the
// in-flight bound, for a hard quota that n calls remain (counting persisted, buffered and reserved
// calls), then the request rate (one token per request, whatever n). A refusal is a *LimitError
// wrapping ErrInFlight, ErrQuotaExhausted or ErrRateLimited; a batch larger than what remains is
// refused whole. Other errors (an invalid key id or n, the key's usage unreadable at its first use in
// a period) mean the request cannot be metered.
//
// The first Admit of a hard-quota key in a period reads its usage from the sink, and so does one
// every RefreshIntervals flush intervals; every other Admit allocates nothing.
func (m *Meter) Admit(ctx context.Context, keyID string, plan Plan, n int) (Ticket, error) {
	if n < 1 {
		return Ticket{}, fmt.Errorf("meter: admit %d calls, want at least 1", n)
	}
	now := m.now()
	ks, err := m.lockKey(ctx, keyID, now, plan.HardQuota)
	if err != nil {
		return Ticket{}, err
	}
	err = ks.admit(now, plan, n)
	ks.mu.Unlock()
	if err != nil {
		if le, ok := err.(*LimitError); ok && le.Err == ErrQuotaExhausted {
			le.UpgradeURL = m.upgradeURL
		}
		return Ticket{}, err
	}
	return Ticket{m: m, ks: ks, n: n}, nil
}

// Unlimited admits a request of n calls without a limit and without counting it: the ticket's
// Commit queues the request records alone, and its Release does nothing. It is the "limits and
// metering off" side of the benchmarks. The records stay because they are not metering's: the
// feedback route checks request ids against them, so a service that neither limited nor metered
// would still store them.
func (m *Meter) Unlimited(n int) Ticket {
	return Ticket{m: m, n: n}
}

// lockKey returns the key's state locked and moved to the period of now, with its persisted usage
// read (or refreshed when stale) if load is set.
func (m *Meter) lockKey(ctx context.Context, keyID string, now time.Time, load bool) (*keyState, error) {
	month := monthOf(now)
	for {
		ks, err := m.keys.get(keyID)
		if err != nil {
			return nil, err
		}
		ks.mu.Lock()
		if ks.evicted {
			ks.mu.Unlock()
			continue
		}
		ks.roll(month)
		ks.lastUsed = now
		if !load || !ks.needsLoad(now, m.refreshEvery) {
			return ks, nil
		}
		first := !ks.loaded
		req := ks.beginLoad(now)
		ks.mu.Unlock()
		v, err := m.sink.Usage(ctx, ks.keyID, period(req.month))
		if err != nil {
			if first {
				return nil, fmt.Errorf("meter: read usage of key %s: %w", keyID, err)
			}
			// The last reading stays in force; beginLoad set checkedAt, so the next try is one
			// refresh interval away rather than on every request.
			m.log.WarnContext(ctx, "meter: refresh usage failed; enforcing the last value read", "key_id", keyID, "error", err)
		}
		ks.mu.Lock()
		if err == nil {
			ks.applyLoad(v, req)
		}
		ks.mu.Unlock()
		// Look again: the state may have been evicted or moved to a new month meanwhile.
	}
}

// Ticket is an admitted request's claim on its key's in-flight slot and reserved calls. End it with
// Commit or Release; both are no-ops on an ended ticket, so `defer t.Release()` right after Admit
// frees the slot on every path and a Commit before it bills. Keep a ticket in one variable: ending
// two copies of it would free its slot twice.
type Ticket struct {
	m  *Meter    // nil once ended, and on the zero Ticket
	ks *keyState // nil on a ticket of Unlimited, which holds no slot and bills nothing
	n  int
}

// Release ends a request that billed nothing (it failed, or was not a 2xx).
func (t *Ticket) Release() {
	ks := t.ks
	t.m, t.ks = nil, nil
	if ks == nil {
		return
	}
	ks.mu.Lock()
	ks.release(t.n)
	ks.mu.Unlock()
}

// Commit ends a request that succeeded with k billable calls (0 <= k <= n: failed items of a batch
// are not billed) in the period of the clock now, and queues the request records for the next flush.
// Records that NewRecord refuses (those the database would reject, and request ids the service does
// not make) are dropped and logged, so that they cannot block the batch they are in; duplicates of a
// pending request id are dropped too. k outside [0, n] panics:
// it is a bug of the caller, and billing past the reservation could pass a hard quota.
func (t *Ticket) Commit(k int, recs ...RequestRecord) {
	if t.m == nil {
		return
	}
	if k < 0 || k > t.n {
		panic(fmt.Sprintf("meter: commit of %d calls on a ticket admitted for %d", k, t.n))
	}
	ks, m := t.ks, t.m
	t.m, t.ks = nil, nil
	month := monthOf(m.now())
	var (
		keyID string // only a billed call needs it
		calls int64
	)
	if ks != nil {
		// The key's state counts the calls before the meter's buffer holds them, so that a flush
		// taking the buffer in between never moves more out of ks.pending than it holds.
		ks.mu.Lock()
		ks.release(t.n)
		ks.bill(k, month)
		ks.mu.Unlock()
		keyID, calls = ks.keyID, int64(k)
	}
	// One record, the common case, is packed on the stack.
	var one [1]Record
	packed := one[:0]
	if len(recs) > 1 {
		packed = make([]Record, 0, len(recs))
	}
	m.enqueue(keyID, month, calls, m.pack(packed, recs))
}

// pack appends to dst the records of recs that the database would take, logging each one dropped.
func (m *Meter) pack(dst []Record, recs []RequestRecord) []Record {
	for _, r := range recs {
		p, err := NewRecord(r)
		if err != nil {
			m.log.Error("meter: request record dropped", "request_id", r.RequestID, "key_id", r.KeyID, "reason", err)
			continue
		}
		dst = append(dst, p)
	}
	return dst
}

func (m *Meter) enqueue(keyID string, month int32, calls int64, recs []Record) {
	m.mu.Lock()
	if calls > 0 {
		m.usage[usageKey{keyID: keyID, month: month}] += calls
	}
	for _, r := range recs {
		if m.pending(r.id) {
			continue
		}
		m.recordIDs[r.id] = struct{}{}
		m.records = append(m.records, r)
	}
	full := len(m.records) >= m.maxBatch
	m.mu.Unlock()
	if full {
		select {
		case m.kick <- struct{}{}:
		default: // a flush is already asked for
		}
	}
}

// PendingRecord reports whether the record of requestID is buffered here and not yet confirmed
// written. Feedback that cannot find a request id in the database asks this, and when it is true
// calls Flush and reads again.
func (m *Meter) PendingRecord(requestID string) bool {
	id, ok := parseRequestID(requestID)
	if !ok {
		return false // the meter never buffers a record under any other id
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pending(id)
}

// pending reports whether the record of id is buffered or in the outstanding batch; m.mu is held.
func (m *Meter) pending(id recordKey) bool {
	_, ok := m.recordIDs[id]
	if !ok {
		_, ok = m.takenIDs[id]
	}
	return ok
}

// Flush writes everything pending, as one Sink.WriteBatch (one transaction). When the write fails the
// batch is kept with its ID and the next Flush writes it again before anything newer: the sink
// applies an ID once, so a write that failed after committing is not counted twice, and one that did
// not commit loses nothing. Flushes take turns; a Flush returns once what was pending at its start,
// or at the end of the batch it retried, is written. While the sink fails, the pending usage and
// records stay in memory.
func (m *Meter) Flush(ctx context.Context) error {
	m.flushMu.Lock()
	defer m.flushMu.Unlock()
	for {
		fresh := m.outstanding == nil
		if fresh {
			pb, ok := m.take()
			if !ok {
				return nil
			}
			m.outstanding = &pb
		}
		b := m.outstanding.batch
		if err := m.sink.WriteBatch(ctx, b); err != nil {
			return fmt.Errorf("meter: write batch %s (%d usage rows, %d records; kept for the next flush): %w",
				b.ID, len(b.Usage), len(b.Records), err)
		}
		m.confirm(*m.outstanding)
		m.outstanding = nil
		if fresh {
			return nil
		}
	}
}

// take moves everything pending into a new batch and marks its calls in doubt.
func (m *Meter) take() (pendingBatch, bool) {
	m.mu.Lock()
	if len(m.usage) == 0 && len(m.records) == 0 {
		m.mu.Unlock()
		return pendingBatch{}, false
	}
	pb := pendingBatch{
		batch: Batch{ID: uuid.NewString(), Usage: make([]UsageDelta, 0, len(m.usage)), Records: m.records},
		keys:  make([]usageKey, 0, len(m.usage)),
	}
	for k, calls := range m.usage {
		pb.keys = append(pb.keys, k)
		pb.batch.Usage = append(pb.batch.Usage, UsageDelta{KeyID: k.keyID, Period: period(k.month), Calls: calls})
	}
	clear(m.usage)
	// Sized like the batch just taken: growing from empty by doubling was a quarter of
	// BenchmarkCommit's CPU profile, and the bytes per op fell from about 670 to 400 without it.
	m.records = make([]Record, 0, len(pb.batch.Records))
	// take runs only when no batch is outstanding (Flush), so takenIDs holds nothing to keep.
	m.takenIDs, m.recordIDs = m.recordIDs, make(map[recordKey]struct{}, len(m.recordIDs))
	m.mu.Unlock()

	for i, k := range pb.keys {
		if ks := m.keys.lookup(k.keyID); ks != nil {
			ks.mu.Lock()
			ks.send(k.month, pb.batch.Usage[i].Calls)
			ks.mu.Unlock()
		}
	}
	return pb, true
}

// confirm records that pb was written.
func (m *Meter) confirm(pb pendingBatch) {
	for i, k := range pb.keys {
		if ks := m.keys.lookup(k.keyID); ks != nil {
			ks.mu.Lock()
			ks.confirm(k.month, pb.batch.Usage[i].Calls)
			ks.mu.Unlock()
		}
	}
	m.mu.Lock()
	m.takenIDs = nil
	m.mu.Unlock()
}

// Run flushes every flush interval (and early when WithMaxBatch records are pending) and drops the
// state of idle keys, until ctx ends. Then it flushes once more with a fresh context bounded to 10 s,
// so that a graceful shutdown loses nothing, and returns: nil, or the final flush's error. Cancel ctx
// after the servers have drained: a call committed after Run returned is written only by a later
// Flush. A failed flush during the run is logged and retried at the next tick. Run once per Meter.
func (m *Meter) Run(ctx context.Context) error {
	tick := time.NewTicker(m.flushInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
			err := m.Flush(final)
			cancel()
			return err
		case <-tick.C:
		case <-m.kick:
		}
		if err := m.Flush(ctx); err != nil && ctx.Err() == nil {
			m.log.WarnContext(ctx, "meter: flush failed; retrying at the next tick", "error", err)
		}
		// Sweeping costs a pass over every key; a tenth of the idle time keeps memory within 10 %
		// of the bound at a small fraction of that cost.
		if now := m.now(); now.Sub(m.lastSweep) >= idleTTL/10 {
			m.lastSweep = now
			m.keys.evictIdle(now, idleTTL)
		}
	}
}

// Usage is a key's metered usage in the current period as this replica sees it: the usage envelope of
// GET /v1/usage and the live part of GET /v1/limits.
type Usage struct {
	// Plan is the plan's name.
	Plan string
	// Period is the calendar month (UTC) counted, "2026-11".
	Period string
	// Used is the billable calls of the period: the persisted count as last read (at most
	// RefreshIntervals flush intervals ago), plus the calls this replica wrote or buffered since.
	Used int64
	// Unwritten is the part of Used not yet in the database; it is written within FlushInterval.
	Unwritten int64
	// Included is the plan's included calls per period.
	Included int64
	// Remaining is Included minus Used, not below zero: the calls left before the quota (HardQuota)
	// or before overage billing starts.
	Remaining int64
	// HardQuota says that the key is refused (402) once Remaining is zero.
	HardQuota bool
	// UpgradeURL is where a HardQuota key's account upgrades (WithUpgradeURL); empty otherwise.
	UpgradeURL string
	// Overage is the calls beyond Included that a plan without a hard quota is billed for.
	Overage int64
	// InFlight is the key's scoring requests running on this replica now.
	InFlight int
	// FlushInterval is the delay after which a call is in the database: the bound of the README's
	// "eventually consistent within the batch flush interval".
	FlushInterval time.Duration
	// ResetsAt is the start of the next period, when Used starts again from zero.
	ResetsAt time.Time
	// AsOf is when the snapshot was taken.
	AsOf time.Time
}

// Snapshot returns the key's usage in the current period, reading the persisted count when this
// replica has none or it is older than RefreshIntervals flush intervals (a failed refresh keeps the
// last value read).
func (m *Meter) Snapshot(ctx context.Context, keyID string, plan Plan) (Usage, error) {
	now := m.now()
	ks, err := m.lockKey(ctx, keyID, now, true)
	if err != nil {
		return Usage{}, err
	}
	defer ks.mu.Unlock()
	u := Usage{
		Plan:          plan.Name,
		Period:        period(ks.month),
		Used:          ks.used(),
		Unwritten:     ks.pending + ks.inDoubt,
		Included:      plan.IncludedCalls,
		HardQuota:     plan.HardQuota,
		InFlight:      ks.inFlight,
		FlushInterval: m.flushInterval,
		ResetsAt:      periodEnd(ks.month),
		AsOf:          now,
	}
	u.Remaining = max(0, u.Included-u.Used)
	if plan.HardQuota {
		u.UpgradeURL = m.upgradeURL
	} else {
		u.Overage = max(0, u.Used-u.Included)
	}
	return u, nil
}
