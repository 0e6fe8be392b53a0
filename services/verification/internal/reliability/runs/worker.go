package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/gate"
)

// WorkerConfig configures a worker.
type WorkerConfig struct {
	// Owner names this worker in leases (unique per replica).
	Owner string
	// Concurrency bounds the runs one worker has in flight.
	Concurrency int
	// Lease is how long a claimed run is the worker's; it must outlast the run's audits.
	Lease time.Duration
	// Poll is how often an idle worker looks for queued runs.
	Poll time.Duration
	// MaxAttempts bounds how often a run is claimed (a worker that dies mid-run leaves its lease to
	// pass); the next claim past it fails the run with attempts_exhausted.
	MaxAttempts int
	Log         *slog.Logger
}

// Work claims and runs queued runs until ctx ends.
func (s *Service) Work(ctx context.Context, cfg WorkerConfig) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	done := make(chan struct{}, cfg.Concurrency)
	inFlight := 0
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-done:
			inFlight--
		case <-timer.C:
		}
		for len(done) > 0 {
			<-done
			inFlight--
		}
		if free := cfg.Concurrency - inFlight; free > 0 {
			claimed, err := s.d.Store.ClaimRuns(ctx, cfg.Owner, s.d.Now().UTC(), cfg.Lease, free, cfg.MaxAttempts)
			if err != nil && ctx.Err() == nil {
				cfg.Log.Warn("reliability worker: claim runs", "error", err)
			}
			for _, c := range claimed {
				inFlight++
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.process(ctx, cfg, c)
					done <- struct{}{}
				}()
			}
		}
		timer.Reset(cfg.Poll)
	}
}

// WorkOnce claims up to cfg.Concurrency runs, runs them and returns how many it claimed (tests and
// benchmarks drive the worker with it).
func (s *Service) WorkOnce(ctx context.Context, cfg WorkerConfig) (int, error) {
	claimed, err := s.d.Store.ClaimRuns(ctx, cfg.Owner, s.d.Now().UTC(), cfg.Lease, cfg.Concurrency, cfg.MaxAttempts)
	if err != nil {
		return 0, err
	}
	var wg sync.WaitGroup
	for _, c := range claimed {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.process(ctx, cfg, c)
		}()
	}
	wg.Wait()
	return len(claimed), nil
}

// releaseTimeout bounds the release of a lease by a stopping worker.
const releaseTimeout = 5 * time.Second

// process runs one claimed run to its end. A run stopped by the worker's own shutdown stays
// running with its lease ended now, so that another replica takes it again at once (attempts bound
// this); a run that outlives its lease is left for its lease to pass.
func (s *Service) process(parent context.Context, cfg WorkerConfig, c Claimed) {
	ctx, cancel := context.WithTimeout(parent, cfg.Lease)
	defer cancel()
	release := func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(parent), releaseTimeout)
		defer rcancel()
		if err := s.d.Store.ReleaseRun(rctx, cfg.Owner, c.Run.ID, s.d.Now().UTC()); err != nil {
			cfg.Log.Warn("reliability worker: release a run at shutdown", "run", c.Run.ID, "error", err)
		}
	}
	f, err := s.execute(ctx, c)
	switch {
	case err != nil && parent.Err() != nil:
		release()
		return
	case err != nil:
		if ctx.Err() == nil {
			cfg.Log.Warn("reliability worker: run", "run", c.Run.ID, "error", err)
		}
		return
	}
	err = s.d.Store.FinishRun(ctx, cfg.Owner, f)
	switch {
	case err == nil || errors.Is(err, ErrLeaseLost):
	case parent.Err() != nil:
		release()
	case ctx.Err() == nil:
		cfg.Log.Warn("reliability worker: record run", "run", c.Run.ID, "error", err)
	}
}

// auditRecord is one evaluator's audit of a run.
type auditRecord struct {
	evaluator string
	rec       audits.Record
	took      time.Duration
}

// execute audits the run's target and decides it; the error is only a stop of the worker itself.
func (s *Service) execute(ctx context.Context, c Claimed) (Finish, error) {
	started := s.d.Now().UTC()
	if c.Exhausted {
		return s.failed(c, nil, started, FailureAttemptsExhausted,
			"the run was taken up and not finished too many times: scan again"), nil
	}
	h := audits.Holder{Issuer: s.d.Issuer, Subject: "reliability:" + c.Run.OrganizationID.String()}
	var recs []auditRecord
	for _, ev := range evaluatorOrder(c.Target.Evaluators) {
		t0 := time.Now()
		rec, err := s.d.Auditor.Run(ctx, ev, audit.Target{URL: c.Target.URL}, h)
		if err != nil {
			if ctx.Err() != nil {
				return Finish{}, ctx.Err()
			}
			code, msg := failure(err)
			return s.failed(c, recs, started, code, msg), nil
		}
		recs = append(recs, auditRecord{evaluator: ev, rec: rec, took: time.Since(t0)})
	}
	sum, err := summarize(recs)
	if err != nil {
		return s.failed(c, recs, started, FailureAuditFailed, "the service could not read the audit report"), nil
	}
	f := Finish{RunID: c.Run.ID, Summary: &sum}
	f.setAudits(recs)
	policy, err := s.d.Store.Policy(ctx, c.Run.RepositoryID)
	if err != nil && ctx.Err() != nil {
		return Finish{}, ctx.Err()
	}
	if err != nil {
		return s.failed(c, recs, started, FailureDependency, "a dependency of the service is unavailable"), nil
	}
	var evaluation gate.Evaluation
	baseline, base, err := s.d.Store.CurrentBaseline(ctx, c.Run.TargetID)
	switch {
	case err != nil && ctx.Err() != nil:
		return Finish{}, ctx.Err()
	case errors.Is(err, ErrNoBaseline) || err == nil && base.Summary == nil:
		f.Changes, evaluation = []reliability.Change{}, gate.NoBaseline()
	case err != nil:
		return s.failed(c, recs, started, FailureDependency, "a dependency of the service is unavailable"), nil
	default:
		f.BaselineRunID = &base.ID
		f.Changes = gate.Diff(*base.Summary, sum)
		evaluation = gate.Evaluate(policy.Policy, f.Changes)
	}
	f.Decision, f.Reasons = evaluation.Decision, evaluation.Reasons
	f.State = map[reliability.Decision]reliability.State{
		reliability.Allow: reliability.Succeeded, reliability.NeedApproval: reliability.NeedsApproval, reliability.Block: reliability.Blocked,
	}[evaluation.Decision]
	if !reliability.CanMove(reliability.Running, f.State) {
		return Finish{}, fmt.Errorf("no transition running -> %s", f.State)
	}
	f.FinishedAt = s.d.Now().UTC().Truncate(time.Microsecond)
	var baselineID any
	if f.BaselineRunID != nil {
		baselineID = map[string]any{"baseline_id": baseline.ID, "run_id": base.ID, "action": baseline.Action, "promoted_at": baseline.CreatedAt}
	}
	f.Evidence, err = s.evidence(c, f, recs, started, baselineID, policy)
	if err != nil {
		return Finish{}, err
	}
	return f, nil
}

// evaluatorOrder runs the conformance audit first (its listing is the surface a diff compares).
func evaluatorOrder(in []string) []string {
	var out []string
	for _, k := range []string{audits.KindConformance, audits.KindReadiness} {
		if slices.Contains(in, k) {
			out = append(out, k)
		}
	}
	return out
}

// setAudits records the ids of the run's audits.
func (f *Finish) setAudits(recs []auditRecord) {
	for _, r := range recs {
		id := r.rec.ID
		if r.evaluator == audits.KindConformance {
			f.ConformanceAuditID = &id
		} else {
			f.ReadinessAuditID = &id
		}
	}
}

// failed is the finish of a run whose audit could not be completed.
func (s *Service) failed(c Claimed, recs []auditRecord, started time.Time, code, msg string) Finish {
	f := Finish{RunID: c.Run.ID, State: reliability.Failed, FailureCode: code, FailureMessage: msg,
		FinishedAt: s.d.Now().UTC().Truncate(time.Microsecond)}
	f.setAudits(recs)
	ev, err := s.evidence(c, f, recs, started, nil, StoredPolicy{})
	if err == nil {
		f.Evidence = ev
	}
	return f
}

// failure is the stable code and safe message of an audit that could not be completed: never an
// internal error's text.
func failure(err error) (string, string) {
	if te, ok := safehttp.AsTargetError(err); ok {
		return FailureTargetRefused, "target refused (" + te.Code + "): " + te.Message
	}
	if errors.Is(err, audits.ErrUnavailable) {
		return FailureDependency, "a dependency of the service is unavailable: scan again later"
	}
	return FailureAuditFailed, "the service could not complete the audit: scan again later"
}

// reportFields are what a summary reads of a stored report (conformance or readiness).
type reportFields struct {
	Verdict         string `json:"verdict"`
	Score           *int   `json:"score"`
	ProductionReady bool   `json:"production_ready"`
	Checks          []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"checks"`
	Rules []struct {
		ID     string `json:"id"`
		Passed bool   `json:"passed"`
	} `json:"rules"`
	Surface *struct {
		Hash string `json:"hash"`
	} `json:"surface"`
}

// summarize reads a run's summary from its audits' reports.
func summarize(recs []auditRecord) (gate.Summary, error) {
	sum := gate.Summary{Checks: []gate.Check{}, Tools: []surfaceTool{}}
	for _, r := range recs {
		var f reportFields
		if err := json.Unmarshal(r.rec.Report, &f); err != nil {
			return gate.Summary{}, err
		}
		switch r.evaluator {
		case audits.KindConformance:
			sum.Verdict = f.Verdict
			for _, c := range f.Checks {
				sum.Checks = append(sum.Checks, gate.Check{ID: c.ID, Evaluator: r.evaluator, Status: c.Status})
			}
		case audits.KindReadiness:
			sum.ReadinessScore, sum.ProductionReady = f.Score, f.ProductionReady
			for _, rule := range f.Rules {
				st := gate.StatusSuccess
				if !rule.Passed {
					st = gate.StatusFailure
				}
				sum.Checks = append(sum.Checks, gate.Check{ID: rule.ID, Evaluator: r.evaluator, Status: st})
			}
		}
		if !sum.Listed && r.rec.Listing != nil {
			sum.Listed, sum.Tools = true, append([]surfaceTool{}, r.rec.Listing.Tools...)
			if f.Surface != nil {
				sum.SurfaceSHA256 = f.Surface.Hash
			}
		}
	}
	return sum, nil
}
