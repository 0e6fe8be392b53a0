package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
)

// RunNowWait is how long POST /v1/watch/watches/{id}/runs waits for the run to finish: a run that
// finishes within it is answered 200, one still going 202 (it goes on without the caller).
const RunNowWait = 5 * time.Second

// runNowWait is RunNowWait, shortened by tests.
var runNowWait = RunNowWait

// finishTimeout bounds the recording of a run's outcome, which happens even when the run's own
// context ended (a replica shutting down still releases its leases).
const finishTimeout = 10 * time.Second

// HolderSubjectPrefix starts the subject under which a watch run's audit report is stored: the
// report of a run of organization O is held by "watch:O" of this service's audit issuer (the
// Auditor fills in the issuer), so an audit token of that subject reads it (GET /v1/audits/{id}).
const HolderSubjectPrefix = "watch:"

// RunStore persists runs and the leases that keep a watch from running twice at once: a watch
// whose run is in progress holds a lease (target_watches.lease_until) until its run is recorded or
// Lease has passed. A run whose lease passed is abandoned: the next claim of its watch records it
// failed.
type RunStore interface {
	// Lease is how long a run holds its watch; a run must be recorded within it.
	Lease() time.Duration
	// ClaimDue leases due watches for the scheduler and starts a scheduled run of each, in one
	// transaction (see Claim). Watches other replicas are claiming at the same moment are skipped
	// (FOR UPDATE SKIP LOCKED), and so are leased ones.
	ClaimDue(ctx context.Context, c Claim) ([]Claimed, error)
	// NextDue returns the earliest next run after now of an active watch (found false when none),
	// so that the scheduler sleeps until then rather than a whole interval.
	NextDue(ctx context.Context, now time.Time) (next time.Time, found bool, err error)
	// StartRun leases a watch of the organization for a manual run and starts it (started true),
	// unless a run of it is in progress: then it returns that run (started false). An unknown
	// watch, or another organization's, is fault.ErrNotFound; a paused or archived one
	// fault.ErrWatchNotActive.
	StartRun(ctx context.Context, organizationID, watchID uuid.UUID, now time.Time) (c Claimed, started bool, err error)
	// GetRun returns a run of the watch.
	GetRun(ctx context.Context, watchID, runID uuid.UUID) (Run, error)
	// PreviousRun returns the latest succeeded run of the watch other than exclude, with its
	// surface; nil when there is none.
	PreviousRun(ctx context.Context, watchID, exclude uuid.UUID) (*Run, error)
	// FinishRun records the outcome of a running run, releases its watch's lease and sets the
	// watch's next run, in one transaction; ErrRunAbandoned when the run is no longer running (its
	// lease passed and another claim recorded it failed), and then the watch is left alone.
	FinishRun(ctx context.Context, r Run, nextRunAt time.Time) error
	// ListRuns returns a page of the runs of a watch of the organization that is not archived,
	// newest first, and the next cursor ("" after the last page).
	ListRuns(ctx context.Context, organizationID, watchID uuid.UUID, page Page) ([]Run, string, error)
}

// ErrRunAbandoned: a run's lease passed before its outcome was recorded.
var ErrRunAbandoned = errors.New("watch run abandoned: its lease passed")

// Claim asks RunStore.ClaimDue for due watches.
type Claim struct {
	// Now is the time a watch must be due by (next_run_at <= Now, and no lease past Now).
	Now time.Time
	// Candidates bounds the due watches considered, earliest due first.
	Candidates int
	// SkipHosts are target hosts not to consider (this replica runs as many of theirs as it may).
	SkipHosts []string
	// Pick chooses among the candidates (earliest due first) those to run now; they are leased and
	// get a running run each, the others stay due. It runs inside the claim's transaction.
	Pick func(candidates []Watch) []Watch
}

// Claimed is a leased watch with its policy's rules (nil without a policy) and its running run.
type Claimed struct {
	Watch Watch
	Rules *Rules
	Run   Run
}

// RunNow runs a watch of the caller's now. It answers the run and whether it finished: a run that
// finishes within RunNowWait is answered finished; otherwise the run goes on without the caller and
// is answered as it started. When a run of the watch is already in progress (a scheduled one, or
// another caller's), that run is the answer. A paused or archived watch is fault.ErrWatchNotActive.
func (s *Service) RunNow(ctx context.Context, c Caller, id uuid.UUID) (Run, bool, error) {
	claimed, started, err := s.runs.StartRun(ctx, c.OrganizationID, id, s.clock())
	if err != nil {
		return Run{}, false, err
	}
	timer := time.NewTimer(runNowWait)
	defer timer.Stop()
	if !started {
		return s.awaitRun(ctx, claimed.Run, timer.C)
	}
	done := make(chan Run, 1)
	// The run belongs to the service, not to the request: it goes on when the caller leaves.
	runCtx := context.WithoutCancel(ctx)
	go func() {
		r, err := s.execute(runCtx, claimed)
		if err != nil && s.log != nil {
			s.log.Warn("watch run: could not record the run", "watch", r.WatchID, "run", r.ID, "error", err)
		}
		done <- r
	}()
	select {
	case r := <-done:
		return r, true, nil
	case <-timer.C:
	case <-ctx.Done():
	}
	return claimed.Run, false, nil
}

// awaitRun polls a run that another goroutine (or replica) runs until it finishes or wait fires.
func (s *Service) awaitRun(ctx context.Context, r Run, wait <-chan time.Time) (Run, bool, error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-wait:
			return r, false, nil
		case <-ctx.Done():
			return r, false, nil
		case <-tick.C:
		}
		got, err := s.runs.GetRun(ctx, r.WatchID, r.ID)
		if err != nil {
			return Run{}, false, err
		}
		r = got
		if r.Status != RunRunning {
			return r, true, nil
		}
	}
}

// ListRuns returns a page of the runs of a watch of the caller's, newest first; limit 0 means
// DefaultPageLimit.
func (s *Service) ListRuns(ctx context.Context, c Caller, id uuid.UUID, cursor string, limit int) ([]Run, string, error) {
	if limit <= 0 {
		limit = DefaultPageLimit
	}
	return s.runs.ListRuns(ctx, c.OrganizationID, id, Page{Limit: min(limit, MaxPageLimit), Cursor: cursor})
}

// execute runs a claimed watch through the audit engine, evaluates the run against the previous
// one, delivers its alert (or recovery), and records it with the watch's next run. It returns the
// run as it ended, and the error of its record: the lease of a run that could not be recorded
// passes, and the next claim of its watch records it failed.
func (s *Service) execute(ctx context.Context, c Claimed) (Run, error) {
	lease := s.runs.Lease()
	ctx, cancel := context.WithTimeout(ctx, max(lease-finishTimeout, lease/2))
	defer cancel()
	run := c.Run
	w := c.Watch
	rec, err := s.auditor.Run(ctx, w.Evaluator, audit.Target{URL: w.TargetURL},
		audits.Holder{Subject: HolderSubjectPrefix + w.OrganizationID.String()})
	if err == nil {
		err = s.evaluate(ctx, c, rec, &run)
	}
	next := s.nextRun(run.StartedAt, w.IntervalSeconds)
	if err != nil {
		run = c.Run
		run.Status, run.Error = RunFailed, failure(err)
		if errors.Is(err, context.Canceled) {
			// This replica is stopping: the watch is due again at once, for another to run.
			next = s.clock()
		}
	}
	if run.FinishedAt == nil {
		at := s.clock()
		run.FinishedAt = &at
	}
	// The outcome is recorded even when ctx ended (a shutdown), so that the lease is released.
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer fcancel()
	return run, s.runs.FinishRun(fctx, run, next)
}

// evaluate fills run from an audit's record and delivers the event the run causes.
func (s *Service) evaluate(ctx context.Context, c Claimed, rec audits.Record, run *Run) error {
	cur, hash, err := observe(rec)
	if err != nil {
		return err
	}
	prevRun, err := s.runs.PreviousRun(ctx, c.Watch.ID, run.ID)
	if err != nil {
		return fmt.Errorf("%w: read the previous run: %w", audits.ErrUnavailable, err)
	}
	var prev *Observation
	if prevRun != nil {
		prev = &Observation{Verdict: prevRun.Verdict, Alert: prevRun.Alert, Reasons: prevRun.Reasons, Score: prevRun.Score}
		if len(prevRun.Surface) > 0 {
			var l surface.Listing
			if json.Unmarshal(prevRun.Surface, &l) == nil {
				prev.Listing = &l
			}
		}
	}
	ev := Evaluate(c.Rules, prev, cur)
	auditID := rec.ID
	run.Status, run.AuditID, run.Verdict, run.Score, run.SurfaceHash = RunSucceeded, &auditID, cur.Verdict, cur.Score, hash
	run.Alert, run.Reasons = ev.Alert, ev.Reasons
	run.Surface, run.Changes = nil, []json.RawMessage{}
	if cur.Listing != nil {
		if run.Surface, err = json.Marshal(cur.Listing); err != nil {
			return fmt.Errorf("%w: encode the listing: %w", audits.ErrAuditFailed, err)
		}
	}
	for _, ch := range ev.Changes {
		raw, err := json.Marshal(ch)
		if err != nil {
			return fmt.Errorf("%w: encode a change: %w", audits.ErrAuditFailed, err)
		}
		run.Changes = append(run.Changes, raw)
	}
	if ev.Event == "" || s.alerts == nil {
		return nil
	}
	at := s.clock()
	run.FinishedAt = &at
	alert := newAlertEvent(ev.Event, c, *run, prevRun, prev, cur, ev.Changes)
	if _, err := s.alerts.Publish(ctx, alert); err != nil {
		// The run is recorded failed, so the next run compares with the same previous run and the
		// event is not lost.
		return fmt.Errorf("%w: record the %s event: %w", audits.ErrUnavailable, ev.Event, err)
	}
	return nil
}

// reportFields are the parts of a stored report a run reads.
type reportFields struct {
	Verdict         string `json:"verdict"`
	Score           *int   `json:"score"`
	ProductionReady *bool  `json:"production_ready"`
	Checks          []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"checks"`
	Findings []struct {
		Rule string `json:"rule"`
	} `json:"findings"`
	Surface *struct {
		Hash string `json:"hash"`
	} `json:"surface"`
}

// observe reads what the evaluation needs of an audit's record, and the surface hash.
func observe(rec audits.Record) (Observation, string, error) {
	var f reportFields
	if err := json.Unmarshal(rec.Report, &f); err != nil {
		return Observation{}, "", fmt.Errorf("%w: read the report: %w", audits.ErrAuditFailed, err)
	}
	o := Observation{Verdict: f.Verdict, Listing: rec.Listing}
	if rec.Kind == EvaluatorReadiness && f.Score != nil {
		o.Score = f.Score
		o.Verdict = readinessVerdict(*f.Score, f.ProductionReady != nil && *f.ProductionReady)
	}
	for _, c := range f.Checks {
		if c.Status == string(audit.Failure) {
			o.FailedChecks = append(o.FailedChecks, c.ID)
		}
	}
	for _, fd := range f.Findings {
		if fd.Rule != "" && (len(o.Findings) == 0 || o.Findings[len(o.Findings)-1] != fd.Rule) {
			o.Findings = append(o.Findings, fd.Rule)
		}
	}
	hash := ""
	if f.Surface != nil {
		hash = f.Surface.Hash
	}
	return o, hash, nil
}

// failure is what a failed run says about why: never an internal error's text.
func failure(err error) string {
	if te, ok := safehttp.AsTargetError(err); ok {
		return "target refused (" + te.Code + "): " + te.Message
	}
	switch {
	case errors.Is(err, context.Canceled):
		return "the service stopped before the audit finished"
	case errors.Is(err, context.DeadlineExceeded):
		return "the run did not finish within its lease"
	case errors.Is(err, audits.ErrUnavailable):
		return "service_dependency_unavailable: a dependency of the service is unavailable"
	}
	return "service_audit_failed: the service could not complete the audit"
}

// nextRun is when a watch runs again after a run that started at started: one interval later, plus
// a jitter of up to a tenth of the interval (at most a minute), so that watches created together
// drift apart instead of running in step against the same hosts.
func (s *Service) nextRun(started time.Time, intervalSeconds int) time.Time {
	interval := time.Duration(intervalSeconds) * time.Second
	spread := min(interval/10, time.Minute)
	var jitter time.Duration
	if spread > 0 {
		jitter = time.Duration(rand.Int64N(int64(spread)))
	}
	return started.Add(interval + jitter).UTC().Truncate(time.Microsecond)
}
