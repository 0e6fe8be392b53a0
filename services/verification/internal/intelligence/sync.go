package intelligence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/trustlayer/trustlayer/pkg/periodic"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Source lists the servers of a registry that speaks the official MCP registry API.
type Source interface {
	// ListServers fetches one page. A page that cannot be read as a listing (transport failure, status
	// other than 200, bad JSON, wrong shape) is an error; an item that fails validation is left out of
	// Observations and reported in Skipped.
	ListServers(ctx context.Context, registry string, q ListQuery) (ListPage, error)
}

// ListQuery is one page request.
type ListQuery struct {
	Cursor string
	Limit  int
	// UpdatedSince, when not zero, asks only for entries updated since then (incremental poll).
	UpdatedSince time.Time
}

// ListPage is one page of a listing.
type ListPage struct {
	Observations []Observation
	Skipped      []SkippedItem
	// NextCursor is empty on the last page.
	NextCursor string
}

// SkippedItem is a listing item that failed validation.
type SkippedItem struct {
	Index  int
	Reason string
}

// RegistryState is a registry's sync position.
type RegistryState struct {
	// HighWaterMark is the newest updatedAt of a completed poll; zero before the first one.
	HighWaterMark time.Time
	// FullSyncDone is set once the first full sync completed; until then polls are baselines.
	FullSyncDone bool
	// SinceLastPoll is the time since the last poll (successful or not) started, by the database's
	// clock so that replicas agree; negative before the first poll.
	SinceLastPoll time.Duration
}

// PollOutcome is what a finished poll records about its registry. A successful poll completes the
// full sync (if it was the first) and moves the high-water mark; a failed one changes neither.
type PollOutcome struct {
	// Took is how long the poll ran: the registry records when it started.
	Took          time.Duration
	OK            bool
	HighWaterMark time.Time
	Skipped       int
	Error         string
}

// SyncStore is the persistence the sync needs.
type SyncStore interface {
	// WithRegistryLock runs fn holding the registry's sync lock, which spans replicas. It returns
	// fault.ErrSyncInProgress without calling fn when another holder has it.
	WithRegistryLock(ctx context.Context, registry string, fn func(context.Context) error) error
	// RegistryState returns the registry's position (a zero one for a registry never polled).
	RegistryState(ctx context.Context, registry string) (RegistryState, error)
	// ApplyPage creates the page's servers when new, reads what is known about them with their rows
	// locked, asks decide what to write, and writes it (snapshots, changes with their outbox events,
	// server pointers, last_seen_at of every listed server) in the same transaction.
	ApplyPage(ctx context.Context, registry string, versions []ServerVersion, decide func(Known) (PageWrites, error)) error
	// FinishPoll records a poll's outcome; a failed one keeps the position.
	FinishPoll(ctx context.Context, registry string, o PollOutcome) error
}

// PollResult says what one poll did.
type PollResult struct {
	Registry string
	// Baseline is true for the first full sync, which records history but no changes.
	Baseline      bool
	Incremental   bool
	Pages         int
	Observed      int
	Skipped       int
	Snapshots     int
	Changes       int
	HighWaterMark time.Time
}

// SyncOptions tune the sync.
type SyncOptions struct {
	// PageSize is the limit asked of the registry per page.
	PageSize int
	// Interval is how often the loop polls each registry.
	Interval time.Duration
	// MaxPages bounds one poll, so that a registry that never stops paging cannot hold the lock for
	// ever; the poll fails and its position stays.
	MaxPages int
}

// overlap is subtracted from the high-water mark in incremental polls: a registry stamps updatedAt
// before its transaction commits, so an entry can become visible after a later-stamped one was
// listed. Re-listed entries cost a hash comparison each and write nothing.
const overlap = time.Minute

// Syncer polls registries into the store.
type Syncer struct {
	store      SyncStore
	source     Source
	registries []string
	opts       SyncOptions
	log        *slog.Logger
	now        func() time.Time
}

// NewSyncer returns a Syncer for the registries (base URLs).
func NewSyncer(store SyncStore, source Source, registries []string, opts SyncOptions, log *slog.Logger) *Syncer {
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	if opts.MaxPages <= 0 {
		opts.MaxPages = 10_000
	}
	if opts.Interval <= 0 {
		opts.Interval = 5 * time.Minute
	}
	return &Syncer{store: store, source: source, registries: registries, opts: opts, log: log, now: time.Now}
}

// Run polls every registry at once, then every Interval, until ctx ends. A failed poll is logged and
// retried at the next tick; it never stops the loop. With several replicas each registry is polled
// by one at a time (WithRegistryLock), and a replica skips a registry another polled less than an
// half an interval ago, so that N replicas do not poll N times as often.
func (s *Syncer) Run(ctx context.Context) error {
	pollAll := func(ctx context.Context) {
		for _, r := range s.registries {
			s.pollIfDue(ctx, r)
		}
	}
	pollAll(ctx)
	return periodic.Run(ctx, s.opts.Interval, pollAll)
}

func (s *Syncer) pollIfDue(ctx context.Context, registry string) {
	res, err := s.poll(ctx, registry, true)
	switch {
	case err == nil && res == nil:
		// Polled recently by another replica.
	case err == nil:
		s.log.InfoContext(ctx, "registry polled", "registry", registry, "baseline", res.Baseline, "incremental", res.Incremental,
			"pages", res.Pages, "observed", res.Observed, "skipped", res.Skipped, "snapshots", res.Snapshots, "changes", res.Changes)
	case errors.Is(err, fault.ErrSyncInProgress), ctx.Err() != nil:
	default:
		s.log.WarnContext(ctx, "registry poll failed; retrying at the next poll", "registry", registry, "error", err)
	}
}

// Poll polls one registry now, whenever it was last polled: a full sync first, incremental ones after.
// It returns fault.ErrSyncInProgress when another replica is polling it.
func (s *Syncer) Poll(ctx context.Context, registry string) (PollResult, error) {
	res, err := s.poll(ctx, registry, false)
	if res == nil {
		return PollResult{Registry: registry}, err
	}
	return *res, err
}

// poll returns a nil result without error when onlyIfDue and the registry was polled recently.
func (s *Syncer) poll(ctx context.Context, registry string, onlyIfDue bool) (*PollResult, error) {
	var res *PollResult
	err := s.store.WithRegistryLock(ctx, registry, func(ctx context.Context) error {
		st, err := s.store.RegistryState(ctx, registry)
		if err != nil {
			return err
		}
		// Due once a whole interval has passed since the last poll started, less a little for the
		// ticker's and the lock's delays: the replica that polled last polls again at its own next
		// tick, and the others, whose ticks fall in between, skip. N replicas poll once per interval;
		// when the one that polled stops, the next tick of another takes over.
		if onlyIfDue && st.SinceLastPoll >= 0 && st.SinceLastPoll < s.opts.Interval-dueSlack(s.opts.Interval) {
			return nil
		}
		res = &PollResult{Registry: registry}
		started := time.Now()
		pollErr := s.pages(ctx, registry, st, res)
		outcome := PollOutcome{Took: time.Since(started), OK: pollErr == nil, HighWaterMark: res.HighWaterMark, Skipped: res.Skipped}
		if pollErr != nil {
			outcome.Error = pollErr.Error()
		}
		// Recorded even when the caller's context ended, so that the failure count stays true.
		if err := s.store.FinishPoll(context.WithoutCancel(ctx), registry, outcome); err != nil {
			return errors.Join(pollErr, err)
		}
		return pollErr
	})
	return res, err
}

// dueSlack is how much earlier than a whole interval after the last poll a replica's tick still
// polls: 5 % of the interval, at most 2 s.
func dueSlack(interval time.Duration) time.Duration { return min(interval/20, 2*time.Second) }

// pages walks the listing page by page. Each page is committed on its own: a failure on a later page
// leaves the earlier pages' snapshots (true observations), and the unchanged high-water mark makes the
// next poll list them again, which writes nothing since their content is already recorded.
func (s *Syncer) pages(ctx context.Context, registry string, st RegistryState, res *PollResult) error {
	res.Baseline = !st.FullSyncDone
	q := ListQuery{Limit: s.opts.PageSize}
	if !res.Baseline && !st.HighWaterMark.IsZero() {
		res.Incremental = true
		q.UpdatedSince = st.HighWaterMark.Add(-overlap)
	}
	res.HighWaterMark = st.HighWaterMark
	cursors := map[string]bool{}
	// carry holds the observations of the server a page ended with, for the next page: a server's
	// versions may span two pages, and they are ordered and compared with each other together.
	var carry []Observation
	for {
		if res.Pages >= s.opts.MaxPages {
			return fmt.Errorf("listing has more than %d pages", s.opts.MaxPages)
		}
		page, err := s.source.ListServers(ctx, registry, q)
		if err != nil {
			return fmt.Errorf("page %d: %w", res.Pages+1, err)
		}
		res.Pages++
		res.Skipped += len(page.Skipped)
		for _, sk := range page.Skipped {
			s.log.WarnContext(ctx, "registry item skipped", "registry", registry, "page", res.Pages, "index", sk.Index, "reason", sk.Reason)
		}
		obs := append(carry, page.Observations...)
		if page.NextCursor != "" {
			obs, carry = holdLastServer(obs)
		} else {
			carry = nil
		}
		if err := s.apply(ctx, registry, obs, res); err != nil {
			return fmt.Errorf("page %d: %w", res.Pages, err)
		}
		if page.NextCursor == "" {
			return nil
		}
		if cursors[page.NextCursor] {
			return fmt.Errorf("page %d: the registry returned cursor %q twice", res.Pages, page.NextCursor)
		}
		cursors[page.NextCursor] = true
		q.Cursor = page.NextCursor
	}
}

func (s *Syncer) apply(ctx context.Context, registry string, obs []Observation, res *PollResult) error {
	if len(obs) == 0 {
		return nil
	}
	versions := make([]ServerVersion, 0, len(obs))
	for _, o := range obs {
		versions = append(versions, ServerVersion{Key: o.Server.Key, Version: o.Server.Version})
		if o.UpdatedAt.After(res.HighWaterMark) {
			res.HighWaterMark = o.UpdatedAt
		}
	}
	var w PageWrites
	err := s.store.ApplyPage(ctx, registry, versions, func(k Known) (PageWrites, error) {
		var err error
		w, err = plan(registry, obs, k, res.Baseline, s.now())
		return w, err
	})
	if err != nil {
		return err
	}
	res.Observed += len(obs)
	res.Snapshots += len(w.Snapshots)
	res.Changes += len(w.Changes)
	return nil
}

// maxHeldVersions bounds the observations held back for one server across pages (memory, and the
// size of one page transaction): a server with more versions than this in one poll is applied in
// slices, and a version of a later slice older than the current one is then history backfill.
const maxHeldVersions = 1000

// holdLastServer splits off the observations of the page's last server, to be applied with the next
// page, unless there are more than maxHeldVersions of them.
func holdLastServer(obs []Observation) (apply, hold []Observation) {
	if len(obs) == 0 {
		return obs, nil
	}
	last := obs[len(obs)-1].Server.Key
	for _, o := range obs {
		if o.Server.Key == last {
			hold = append(hold, o)
		} else {
			apply = append(apply, o)
		}
	}
	if len(hold) > maxHeldVersions {
		return obs, nil
	}
	return apply, hold
}
