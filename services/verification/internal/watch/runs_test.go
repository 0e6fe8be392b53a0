package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/safehttp"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// memRuns is RunStore in memory, with the same leases as the database's.
type memRuns struct {
	mu      sync.Mutex
	lease   time.Duration
	watches map[uuid.UUID]*memWatch
	runs    []Run
	failOn  string // a method that fails
}

type memWatch struct {
	w          Watch
	rules      *Rules
	leaseUntil time.Time
}

func newMemRuns() *memRuns { return &memRuns{lease: time.Minute, watches: map[uuid.UUID]*memWatch{}} }

func (m *memRuns) add(w Watch, rules *Rules) Watch {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w.ID == uuid.Nil {
		w.ID = uuid.Must(uuid.NewV7())
	}
	if w.Status == "" {
		w.Status = StatusActive
	}
	if w.IntervalSeconds == 0 {
		w.IntervalSeconds = 60
	}
	if w.Evaluator == "" {
		w.Evaluator = EvaluatorConformance
	}
	if w.TargetHost == "" {
		w.TargetHost = "mcp.example.com"
	}
	w.TargetURL = "https://" + w.TargetHost + "/mcp"
	m.watches[w.ID] = &memWatch{w: w, rules: rules}
	return w
}

func (m *memRuns) Lease() time.Duration { return m.lease }

func (m *memRuns) start(mw *memWatch, trigger string, now time.Time) Claimed {
	for i := range m.runs {
		if m.runs[i].WatchID == mw.w.ID && m.runs[i].Status == RunRunning {
			m.runs[i].Status, m.runs[i].Error = RunFailed, "abandoned"
		}
	}
	mw.leaseUntil = now.Add(m.lease)
	r := Run{ID: uuid.Must(uuid.NewV7()), WatchID: mw.w.ID, Status: RunRunning, Trigger: trigger, StartedAt: now}
	m.runs = append(m.runs, r)
	return Claimed{Watch: mw.w, Rules: mw.rules, Run: r}
}

func (m *memRuns) ClaimDue(_ context.Context, c Claim) ([]Claimed, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failOn == "ClaimDue" {
		return nil, errors.New("database down")
	}
	var due []Watch
	for _, mw := range m.watches {
		if mw.w.Status == StatusActive && !mw.w.NextRunAt.After(c.Now) && !mw.leaseUntil.After(c.Now) && !slices.Contains(c.SkipHosts, mw.w.TargetHost) {
			due = append(due, mw.w)
		}
	}
	slices.SortFunc(due, func(a, b Watch) int { return a.NextRunAt.Compare(b.NextRunAt) })
	due = due[:min(len(due), c.Candidates)]
	picked := due
	if c.Pick != nil {
		picked = c.Pick(due)
	}
	var out []Claimed
	for _, w := range picked {
		out = append(out, m.start(m.watches[w.ID], TriggerSchedule, c.Now))
	}
	return out, nil
}

func (m *memRuns) NextDue(_ context.Context, now time.Time) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var next time.Time
	for _, mw := range m.watches {
		if mw.w.Status == StatusActive && mw.w.NextRunAt.After(now) && (next.IsZero() || mw.w.NextRunAt.Before(next)) {
			next = mw.w.NextRunAt
		}
	}
	return next, !next.IsZero(), nil
}

func (m *memRuns) StartRun(_ context.Context, org, id uuid.UUID, now time.Time) (Claimed, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mw := m.watches[id]
	switch {
	case mw == nil || mw.w.OrganizationID != org:
		return Claimed{}, false, fault.ErrNotFound
	case mw.w.Status != StatusActive:
		return Claimed{}, false, fault.ErrWatchNotActive
	case mw.leaseUntil.After(now):
		for _, r := range m.runs {
			if r.WatchID == id && r.Status == RunRunning {
				return Claimed{Watch: mw.w, Rules: mw.rules, Run: r}, false, nil
			}
		}
	}
	return m.start(mw, TriggerManual, now), true, nil
}

func (m *memRuns) GetRun(_ context.Context, watchID, runID uuid.UUID) (Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.runs {
		if r.ID == runID && r.WatchID == watchID {
			return r, nil
		}
	}
	return Run{}, fault.ErrNotFound
}

func (m *memRuns) PreviousRun(_ context.Context, watchID, exclude uuid.UUID) (*Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := len(m.runs) - 1; i >= 0; i-- {
		if r := m.runs[i]; r.WatchID == watchID && r.ID != exclude && r.Status == RunSucceeded {
			return &r, nil
		}
	}
	return nil, nil
}

func (m *memRuns) FinishRun(_ context.Context, r Run, next time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failOn == "FinishRun" {
		return errors.New("database down")
	}
	for i := range m.runs {
		if m.runs[i].ID == r.ID {
			if m.runs[i].Status != RunRunning {
				return ErrRunAbandoned
			}
			m.runs[i] = r
			mw := m.watches[r.WatchID]
			mw.leaseUntil, mw.w.NextRunAt = time.Time{}, next
			return nil
		}
	}
	return fault.ErrNotFound
}

func (m *memRuns) ListRuns(_ context.Context, org, id uuid.UUID, p Page) ([]Run, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if mw := m.watches[id]; mw == nil || mw.w.OrganizationID != org {
		return nil, "", fault.ErrNotFound
	}
	var out []Run
	for i := len(m.runs) - 1; i >= 0 && len(out) < p.Limit; i-- {
		if m.runs[i].WatchID == id {
			out = append(out, m.runs[i])
		}
	}
	return out, "", nil
}

func (m *memRuns) finished(watchID uuid.UUID) []Run {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Run
	for _, r := range m.runs {
		if r.WatchID == watchID && r.Status != RunRunning {
			out = append(out, r)
		}
	}
	return out
}

// fakeAuditor answers a report of the listing and verdict it holds now, or an error.
type fakeAuditor struct {
	mu       sync.Mutex
	listing  *surface.Listing
	verdict  string
	score    int
	err      error
	delay    time.Duration
	holders  []audits.Holder
	inFlight map[string]int // per host
	maxHost  map[string]int
	total    int
	maxTotal int
}

func (a *fakeAuditor) set(l *surface.Listing, verdict string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.listing, a.verdict = l, verdict
}

func (a *fakeAuditor) Run(ctx context.Context, kind string, t audit.Target, h audits.Holder) (audits.Record, error) {
	host := strings.Split(strings.TrimPrefix(t.URL, "https://"), "/")[0]
	a.mu.Lock()
	a.holders = append(a.holders, h)
	if a.inFlight == nil {
		a.inFlight, a.maxHost = map[string]int{}, map[string]int{}
	}
	a.inFlight[host]++
	a.total++
	a.maxHost[host] = max(a.maxHost[host], a.inFlight[host])
	a.maxTotal = max(a.maxTotal, a.total)
	delay, err, l, verdict, score := a.delay, a.err, a.listing, a.verdict, a.score
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.inFlight[host]--
		a.total--
		a.mu.Unlock()
	}()
	select {
	case <-time.After(delay):
	case <-ctx.Done():
		return audits.Record{}, context.Cause(ctx)
	}
	if err != nil {
		return audits.Record{}, err
	}
	report := map[string]any{"verdict": verdict, "checks": []map[string]string{{"id": "ping", "status": "SUCCESS"}}}
	if kind == EvaluatorReadiness {
		report = map[string]any{"score": score, "production_ready": score >= 70, "findings": []map[string]string{}}
	}
	if l != nil {
		report["surface"] = map[string]string{"hash": surface.Digest(*l).Hash}
	}
	body, _ := json.Marshal(report)
	return audits.Record{ID: uuid.New(), Kind: kind, Report: body, Listing: l}, nil
}

// fakeAlerts records the events published.
type fakeAlerts struct {
	mu     sync.Mutex
	events []AlertEvent
	err    error
}

func (f *fakeAlerts) Publish(_ context.Context, ev AlertEvent) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return 0, f.err
	}
	f.events = append(f.events, ev)
	return 1, nil
}

func (f *fakeAlerts) got() []AlertEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]AlertEvent(nil), f.events...)
}

func newRunService(m *memRuns, a *fakeAuditor, al *fakeAlerts) *Service {
	return New(Deps{Runs: m, Auditor: a, Alerts: al})
}

// TestRunNowRugPull: a run-now that finishes answers the run; a tool that gains a path parameter
// under a policy that forbids it is an alert, delivered once with the before and after, and the
// next run without a change recovers.
func TestRunNowRugPull(t *testing.T) {
	m, a, al := newMemRuns(), &fakeAuditor{}, &fakeAlerts{}
	s := newRunService(m, a, al)
	org := uuid.New()
	w := m.add(Watch{OrganizationID: org}, &Rules{SurfaceChanges: []string{surface.ParameterAdded}})
	caller := Caller{OrganizationID: org}
	ctx := context.Background()

	a.set(listing(desc), VerdictPass)
	first, done, err := s.RunNow(ctx, caller, w.ID)
	if err != nil || !done || first.Status != RunSucceeded || first.Alert || first.AuditID == nil || first.Verdict != VerdictPass ||
		first.Trigger != TriggerManual || first.FinishedAt == nil || first.SurfaceHash == "" || len(first.Surface) == 0 {
		t.Fatalf("first run %+v, %v, %v", first, done, err)
	}
	if len(a.holders) != 1 || a.holders[0].Subject != "watch:"+org.String() {
		t.Errorf("holders %+v", a.holders)
	}

	a.set(listing(desc, "path"), VerdictPass)
	second, done, err := s.RunNow(ctx, caller, w.ID)
	if err != nil || !done || !second.Alert || len(second.Reasons) != 1 || len(second.Changes) != 2 {
		t.Fatalf("second run %+v, %v, %v", second, done, err)
	}
	events := al.got()
	if len(events) != 1 || events[0].Type != EventAlert || events[0].Key != "watch.alert:"+second.ID.String() || events[0].OrganizationID != org {
		t.Fatalf("events %+v", events)
	}
	d := events[0].Data
	if d.Run.ID != second.ID || d.PreviousRun == nil || d.PreviousRun.ID != first.ID || len(d.Diff) != 1 ||
		d.Diff[0].Tool != "delete_alert" || d.Diff[0].Before == nil || d.Diff[0].After == nil ||
		strings.Contains(string(d.Diff[0].Before.InputSchema), `"path"`) || !strings.Contains(string(d.Diff[0].After.InputSchema), `"path"`) {
		t.Errorf("alert data %+v", d)
	}
	body, err := json.Marshal(d)
	if err != nil || !strings.Contains(string(body), `"kind":"parameter_added"`) || !strings.Contains(string(body), `"previousRun":{`) {
		t.Errorf("alert JSON %s (%v)", body, err)
	}

	third, _, err := s.RunNow(ctx, caller, w.ID)
	if err != nil || third.Alert || len(third.Changes) != 0 {
		t.Fatalf("third run %+v, %v", third, err)
	}
	if events := al.got(); len(events) != 2 || events[1].Type != EventRecovered || len(events[1].Data.Diff) != 0 {
		t.Errorf("events %+v, want a recovery after the alert", events)
	}
	runs, _, err := s.ListRuns(ctx, caller, w.ID, "", 0)
	if err != nil || len(runs) != 3 || runs[0].ID != third.ID {
		t.Errorf("ListRuns = %d runs, %v", len(runs), err)
	}
}

// TestRunNowStates: a paused or unknown watch; a run still going after the wait; a run already in
// progress is the answer.
func TestRunNowStates(t *testing.T) {
	m, a, al := newMemRuns(), &fakeAuditor{verdict: VerdictPass}, &fakeAlerts{}
	s := newRunService(m, a, al)
	org := uuid.New()
	caller := Caller{OrganizationID: org}
	ctx := context.Background()
	paused := m.add(Watch{OrganizationID: org, Status: StatusPaused}, nil)
	if _, _, err := s.RunNow(ctx, caller, paused.ID); !errors.Is(err, fault.ErrWatchNotActive) {
		t.Errorf("paused: %v", err)
	}
	if _, _, err := s.RunNow(ctx, Caller{OrganizationID: uuid.New()}, paused.ID); !errors.Is(err, fault.ErrNotFound) {
		t.Errorf("another organization's: %v", err)
	}

	defer func(d time.Duration) { runNowWait = d }(runNowWait)
	runNowWait = 50 * time.Millisecond
	a.delay = 400 * time.Millisecond
	w := m.add(Watch{OrganizationID: org}, nil)
	r, done, err := s.RunNow(ctx, caller, w.ID)
	if err != nil || done || r.Status != RunRunning {
		t.Fatalf("slow run: %+v, %v, %v; want it running", r, done, err)
	}
	again, done, err := s.RunNow(ctx, caller, w.ID)
	if err != nil || done || again.ID != r.ID {
		t.Errorf("run-now while running: %+v, %v, %v; want the same run", again, done, err)
	}
	runNowWait = 2 * time.Second
	waited, done, err := s.RunNow(ctx, caller, w.ID)
	if err != nil || !done || waited.ID != r.ID || waited.Status != RunSucceeded {
		t.Errorf("run-now waiting for the running run: %+v, %v, %v", waited, done, err)
	}
}

// TestRunFailures: a run the service could not finish is failed, never an alert.
func TestRunFailures(t *testing.T) {
	org := uuid.New()
	caller := Caller{OrganizationID: org}
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		auditErr  error
		alertsErr error
		want      string
	}{
		{"audit failed", fmt.Errorf("%w: boom at 0xdeadbeef", audits.ErrAuditFailed), nil, "service_audit_failed"},
		{"database down", fmt.Errorf("%w: conn refused", audits.ErrUnavailable), nil, "service_dependency_unavailable"},
		{"target refused", &safehttp.TargetError{Code: "dns_resolution_failed", Message: "the host does not resolve"}, nil, "target refused (dns_resolution_failed)"},
		{"alert not recorded", nil, errors.New("database down"), "service_dependency_unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, a, al := newMemRuns(), &fakeAuditor{verdict: VerdictFail, err: tc.auditErr}, &fakeAlerts{err: tc.alertsErr}
			s := newRunService(m, a, al)
			// Without a policy, the first run is no alert: make it one with noWorseVerdict's rules.
			floor := 101
			w := m.add(Watch{OrganizationID: org, Evaluator: EvaluatorReadiness}, &Rules{MinScore: &floor})
			r, done, err := s.RunNow(ctx, caller, w.ID)
			if err != nil || !done || r.Status != RunFailed || r.Alert || !strings.HasPrefix(r.Error, tc.want) || strings.Contains(r.Error, "0xdeadbeef") {
				t.Errorf("run %+v, %v, %v; want failed with %q", r, done, err, tc.want)
			}
			if got := m.finished(w.ID); len(got) != 1 || got[0].Status != RunFailed {
				t.Errorf("recorded %+v", got)
			}
		})
	}
}

// TestSchedulerSpreads: the scheduler runs every due watch once, at most Concurrency at a time and
// PerHost of one host, and sets each next run one interval (plus up to a tenth) after it started.
func TestSchedulerSpreads(t *testing.T) {
	m, a, al := newMemRuns(), &fakeAuditor{verdict: VerdictPass, delay: 20 * time.Millisecond}, &fakeAlerts{}
	s := newRunService(m, a, al)
	org := uuid.New()
	now := time.Now()
	var ws []Watch
	for i := range 30 {
		ws = append(ws, m.add(Watch{OrganizationID: org, TargetHost: fmt.Sprintf("h%d.example", i%3), NextRunAt: now.Add(-time.Second),
			IntervalSeconds: 3600}, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	done := 0
	var lags []time.Duration
	errc := make(chan error, 1)
	go func() {
		errc <- s.RunScheduler(ctx, SchedulerConfig{Interval: 10 * time.Millisecond, Concurrency: 4, PerHost: 2,
			OnClaim: func(_ Watch, lag time.Duration) { mu.Lock(); lags = append(lags, lag); mu.Unlock() },
			OnDone:  func(Run) { mu.Lock(); done++; mu.Unlock() }})
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		n := done
		mu.Unlock()
		if n >= len(ws) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d runs done", n, len(ws))
		}
	}
	time.Sleep(50 * time.Millisecond) // nothing more is due
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("RunScheduler: %v", err)
	}
	for _, w := range ws {
		runs := m.finished(w.ID)
		if len(runs) != 1 || runs[0].Status != RunSucceeded || runs[0].Trigger != TriggerSchedule {
			t.Errorf("watch %s: runs %+v, want one succeeded", w.ID, runs)
			continue
		}
		next := m.watches[w.ID].w.NextRunAt
		if d := next.Sub(runs[0].StartedAt); d < time.Hour || d >= time.Hour+time.Minute {
			t.Errorf("next run %v after the start, want 1h plus at most a minute", d)
		}
	}
	if a.maxTotal > 4 {
		t.Errorf("%d runs at once, want at most 4", a.maxTotal)
	}
	for host, n := range a.maxHost {
		if n > 2 {
			t.Errorf("%d runs of %s at once, want at most 2", n, host)
		}
	}
	if len(lags) != len(ws) || slices.Max(lags) < time.Second {
		t.Errorf("%d lags, max %v", len(lags), slices.Max(lags))
	}
}

// TestSchedulerSurvivesFailures: a claim that fails is retried; a run whose record fails leaves its
// lease to pass.
func TestSchedulerSurvivesFailures(t *testing.T) {
	m, a, al := newMemRuns(), &fakeAuditor{verdict: VerdictPass}, &fakeAlerts{}
	s := newRunService(m, a, al)
	w := m.add(Watch{OrganizationID: uuid.New(), NextRunAt: time.Now().Add(-time.Second)}, nil)
	m.failOn = "ClaimDue"
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.RunScheduler(ctx, SchedulerConfig{Interval: 5 * time.Millisecond}) }()
	time.Sleep(30 * time.Millisecond)
	m.mu.Lock()
	m.failOn = ""
	m.mu.Unlock()
	for deadline := time.Now().Add(5 * time.Second); len(m.finished(w.ID)) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the watch never ran after the claims recovered")
		}
	}
	cancel()
	<-errc
}

// TestSchedulerSleepsUntilDue: with a long interval, a watch that falls due soon runs when it does,
// not an interval later.
func TestSchedulerSleepsUntilDue(t *testing.T) {
	m, a, al := newMemRuns(), &fakeAuditor{verdict: VerdictPass}, &fakeAlerts{}
	s := newRunService(m, a, al)
	w := m.add(Watch{OrganizationID: uuid.New(), NextRunAt: time.Now().Add(200 * time.Millisecond)}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lags := make(chan time.Duration, 1)
	go func() {
		_ = s.RunScheduler(ctx, SchedulerConfig{Interval: time.Minute, OnClaim: func(_ Watch, lag time.Duration) { lags <- lag }})
	}()
	select {
	case lag := <-lags:
		if lag < 0 || lag > 100*time.Millisecond {
			t.Errorf("claimed %v after it fell due", lag)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not run when it fell due")
	}
	for deadline := time.Now().Add(5 * time.Second); len(m.finished(w.ID)) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run did not finish")
		}
	}
}

// TestSchedulerStopping: a replica that stops ends its runs, records them failed and leaves their
// watches due at once, for another replica.
func TestSchedulerStopping(t *testing.T) {
	m, a, al := newMemRuns(), &fakeAuditor{verdict: VerdictPass, delay: time.Minute}, &fakeAlerts{}
	s := newRunService(m, a, al)
	w := m.add(Watch{OrganizationID: uuid.New(), NextRunAt: time.Now().Add(-time.Second)}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	claimed := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- s.RunScheduler(ctx, SchedulerConfig{OnClaim: func(Watch, time.Duration) { close(claimed) }})
	}()
	<-claimed
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case <-errc:
	case <-time.After(5 * time.Second):
		t.Fatal("the scheduler did not stop with its run in flight")
	}
	runs := m.finished(w.ID)
	if len(runs) != 1 || runs[0].Status != RunFailed || !strings.Contains(runs[0].Error, "stopped") {
		t.Fatalf("runs %+v", runs)
	}
	if next := m.watches[w.ID].w.NextRunAt; time.Until(next) > 0 {
		t.Errorf("next run in %v, want at once", time.Until(next))
	}
}
