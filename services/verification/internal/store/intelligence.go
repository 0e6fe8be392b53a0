package store

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// Intelligence is the registry-intelligence persistence: it implements intelligence.SyncStore and
// intelligence.ReadStore on a pgx pool (tables of migration 00002).
type Intelligence struct {
	pool   *pgxpool.Pool
	events Events
}

var (
	_ intelligence.SyncStore  = (*Intelligence)(nil)
	_ intelligence.ReadStore  = (*Intelligence)(nil)
	_ intelligence.SweepStore = (*Intelligence)(nil)
)

// NewIntelligence returns the registry-intelligence store; events encodes the change events it commits.
func NewIntelligence(pool *pgxpool.Pool, events Events) *Intelligence {
	return &Intelligence{pool: pool, events: events}
}

// WithRegistryLock holds a session-level advisory lock on the registry for the duration of fn, on a
// dedicated connection, so that no two replicas poll the same registry at once. A crashed holder's
// lock goes with its connection.
func (r *Intelligence) WithRegistryLock(ctx context.Context, registry string, fn func(context.Context) error) error {
	conn, err := r.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended('intel-registry:' || $1, 0))`, registry).Scan(&locked); err != nil {
		return err
	}
	if !locked {
		return fault.ErrSyncInProgress
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended('intel-registry:' || $1, 0))`, registry)
	}()
	return fn(ctx)
}

// RegistryState returns the registry's sync position, creating its row on first use.
func (r *Intelligence) RegistryState(ctx context.Context, registry string) (intelligence.RegistryState, error) {
	st := intelligence.RegistryState{SinceLastPoll: -1}
	var hwm, fullDone *time.Time
	var sinceLastPoll *float64
	err := r.pool.QueryRow(ctx, `
WITH created AS (
    INSERT INTO intel_registries (url) VALUES ($1) ON CONFLICT (url) DO NOTHING
    RETURNING high_water_mark, full_sync_done_at, last_poll_at
)
SELECT high_water_mark, full_sync_done_at, extract(epoch FROM now() - last_poll_at)::float8 FROM (
    SELECT * FROM created
    UNION ALL
    SELECT high_water_mark, full_sync_done_at, last_poll_at FROM intel_registries WHERE url = $1
) r`, registry).Scan(&hwm, &fullDone, &sinceLastPoll)
	if err != nil {
		return st, err
	}
	st.FullSyncDone = fullDone != nil
	if hwm != nil {
		st.HighWaterMark = *hwm
	}
	if sinceLastPoll != nil {
		st.SinceLastPoll = time.Duration(*sinceLastPoll * float64(time.Second))
	}
	return st, nil
}

// FinishPoll records a poll's outcome; last_poll_at is when the poll started. A successful poll moves the high-water mark (never backwards)
// and marks the full sync done; a failed one only counts the failure.
func (r *Intelligence) FinishPoll(ctx context.Context, registry string, o intelligence.PollOutcome) error {
	if !o.OK {
		_, err := r.pool.Exec(ctx, `
UPDATE intel_registries SET last_poll_at = now() - make_interval(secs => $4), consecutive_failures = consecutive_failures + 1,
    last_error = $2, last_skipped = $3
WHERE url = $1`, registry, o.Error, o.Skipped, o.Took.Seconds())
		return err
	}
	var hwm *time.Time
	if !o.HighWaterMark.IsZero() {
		hwm = &o.HighWaterMark
	}
	_, err := r.pool.Exec(ctx, `
UPDATE intel_registries SET
    high_water_mark = greatest(high_water_mark, $2),
    full_sync_done_at = coalesce(full_sync_done_at, now()),
    last_poll_at = now() - make_interval(secs => $4), last_success_at = now(), consecutive_failures = 0, last_error = '',
    last_skipped = $3
WHERE url = $1`, registry, hwm, o.Skipped, o.Took.Seconds())
	return err
}

// cursorPrefix versions the cursor format, so that a later format can refuse old cursors cleanly.
const cursorPrefix = "s1:"

// encodeCursor returns the opaque cursor of the position after the row with this seq.
func encodeCursor(seq int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.FormatInt(seq, 10)))
}

// decodeCursor returns the seq a cursor stands for; 0 for the first page.
func decodeCursor(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, fault.ErrBadCursor
	}
	digits, ok := strings.CutPrefix(string(b), cursorPrefix)
	if !ok {
		return 0, fault.ErrBadCursor
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || seq <= 0 {
		return 0, fault.ErrBadCursor
	}
	return seq, nil
}
