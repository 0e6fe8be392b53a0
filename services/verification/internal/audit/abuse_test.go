package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/audittest"
	"github.com/trustlayer/trustlayer/services/verification/internal/audit/probe"
)

// The promises to targets and to the service: an audit sends at most Limits.MaxRequests requests,
// at most Limits.MaxConcurrent at once (both held for every fixture by TestEngineDefects and
// TestEngineCorrectServers through wantServerSaw), reads at most Limits.MaxResponseBytes of any
// answer, waits at most Limits.RequestTimeout for one, and ends by Config.Deadline; what a target
// does becomes findings, and only the service's own caller leaving ends an audit without a report.

// endlessCursors is Dual, but every list method, in either era, answers one new item and a new
// nextCursor, forever.
func endlessCursors() http.Handler {
	inner := audittest.Dual()
	var n atomic.Int64
	keys := map[string]string{"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resourceTemplates"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &m) == nil && keys[m.Method] != "" && len(m.ID) > 0 {
				k := n.Add(1)
				item := map[string]any{"name": fmt.Sprintf("item_%d", k), "uri": fmt.Sprintf("file:///item/%d", k),
					"uriTemplate": fmt.Sprintf("file:///item/%d/{x}", k), "description": "One more item.",
					"inputSchema": map[string]any{"type": "object"}}
				result := map[string]any{keys[m.Method]: []any{item}, "nextCursor": fmt.Sprintf("cursor-%d", k)}
				if r.Header.Get(headerMethod) != "" {
					result["resultType"], result["ttlMs"], result["cacheScope"] = "complete", 0, "private"
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		inner.ServeHTTP(w, r)
	})
}

func TestAbuseEndlessCursors(t *testing.T) {
	t.Parallel()
	ca := newCA(t)

	t.Run("default limits", func(t *testing.T) {
		t.Parallel()
		var limits probe.Limits
		srv, e := serveAudited(t, ca, endlessCursors(), Config{})
		rep := conformance(t, e, srv, Target{URL: srv.URL}, limits)
		// The page caps, not the budget, stop the cursors: the checks after the listing still run.
		if c := checkOf(rep, "tools-list-pagination"); c.Status != Warning || !strings.Contains(c.Details, "cursor left") {
			t.Errorf("tools-list-pagination: %s (%s)", c.Status, c.Details)
		}
		if c := checkOf(rep, "session-delete"); c.Status != Success {
			t.Errorf("session-delete: %s (%s)", c.Status, c.Details)
		}
		t.Logf("traffic %+v", rep.Traffic)
	})

	t.Run("small budget", func(t *testing.T) {
		t.Parallel()
		limits := probe.Limits{MaxRequests: 12}
		srv, e := serveAudited(t, ca, endlessCursors(), Config{Limits: limits})
		rep := conformance(t, e, srv, Target{URL: srv.URL}, limits)
		if rep.Traffic.Requests != limits.MaxRequests {
			t.Errorf("traffic %+v, want the budget spent", rep.Traffic)
		}
		spent := 0
		for _, c := range rep.Checks {
			if c.Status == Skipped && strings.Contains(c.Details, probe.ErrBudget.Error()) {
				spent++
			}
		}
		if spent == 0 {
			t.Errorf("no skipped check says the budget was spent: %+v", rep.Checks)
		}
	})
}

// settleGoroutines waits for the goroutine count to come back to at most want, and returns it.
func settleGoroutines(want int) int {
	n := runtime.NumGoroutine()
	for deadline := time.Now().Add(5 * time.Second); n > want && time.Now().Before(deadline); n = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

// TestAbuseStreamForever is not parallel: it counts the process's goroutines.
func TestAbuseStreamForever(t *testing.T) {
	ca := newCA(t)
	before := runtime.NumGoroutine()
	limits := probe.Limits{RequestTimeout: time.Second}
	deadline := 3 * time.Second
	srv, e := serveAudited(t, ca, audittest.StreamForever(), Config{Limits: limits, Deadline: deadline})
	start := time.Now()
	rep, err := e.Conformance(context.Background(), Target{URL: srv.URL})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Conformance: %v", err)
	}
	wantReport(t, rep, limits)
	if took > deadline+time.Second {
		t.Errorf("the audit took %s, its deadline is %s", took, deadline)
	}
	if rep.Verdict != VerdictFail || rep.Eras[0].Status != EraBroken {
		t.Errorf("verdict %s, era %+v", rep.Verdict, rep.Eras[0])
	}
	if c := checkOf(rep, "server-initialize"); c.Status != Failure || !strings.Contains(c.Details, "no complete answer within 1s") {
		t.Errorf("server-initialize: %s (%s)", c.Status, c.Details)
	}
	if srv.Requests() > rep.Traffic.Requests {
		t.Errorf("the server saw %d requests, the report counts %d", srv.Requests(), rep.Traffic.Requests)
	}
	srv.Close()
	if n := settleGoroutines(before + 2); n > before+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines before the audit, %d after:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// TestAbuseDeadline: a server that stalls past the audit's deadline gets a report, cut at the
// deadline, whose unfinished checks say so.
func TestAbuseDeadline(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	deadline := 1500 * time.Millisecond
	srv, e := serveAudited(t, ca, audittest.StreamForever(), Config{Deadline: deadline})
	start := time.Now()
	rep, err := e.Conformance(context.Background(), Target{URL: srv.URL})
	if took := time.Since(start); took > deadline+time.Second {
		t.Errorf("the audit took %s, its deadline is %s", took, deadline)
	}
	if err != nil {
		t.Fatalf("Conformance: %v", err)
	}
	wantReport(t, rep, probe.Limits{})
	if rep.Eras[0].Status != EraBroken || !strings.Contains(rep.Eras[0].Details, errDeadline.Error()) {
		t.Errorf("era %+v", rep.Eras[0])
	}
	if c := checkOf(rep, "ping"); c.Status != Skipped || !strings.Contains(c.Details, errDeadline.Error()) {
		t.Errorf("ping: %s (%s)", c.Status, c.Details)
	}
	// A stall past the deadline is a finding, as a request timeout is: a server that never answered
	// does not pass.
	for _, id := range []string{"server-initialize", "server-discover"} {
		if c := checkOf(rep, id); c.Status != Failure || !strings.Contains(c.Details, errDeadline.Error()) {
			t.Errorf("%s: %s (%s)", id, c.Status, c.Details)
		}
	}
	if rep.Verdict != VerdictFail {
		t.Errorf("verdict %s for a server that never answered: %+v, eras %+v", rep.Verdict, rep.Counts, rep.Eras)
	}
}

// TestAbuseHuge is not parallel: it measures the process's allocations.
func TestAbuseHuge(t *testing.T) {
	ca := newCA(t)
	var limits probe.Limits
	srv, e := serveAudited(t, ca, audittest.Huge(10<<20), Config{Deadline: 10 * time.Second})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rep, err := e.Conformance(context.Background(), Target{URL: srv.URL})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatalf("Conformance: %v", err)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&after)
	wantReport(t, rep, limits)
	tr := rep.Traffic
	if tr.BytesReceived > int64(tr.Requests)*probe.DefaultLimits.MaxResponseBytes || tr.Truncated < 1 {
		t.Errorf("traffic %+v", tr)
	}
	if c := checkOf(rep, "server-initialize"); c.Status != Failure || !strings.Contains(c.Details, "byte cap") {
		t.Errorf("server-initialize: %s (%s)", c.Status, c.Details)
	}
	// Each answer is read up to 1 MiB and parsed; the 10 MiB body is never held whole.
	if allocated > 32<<20 {
		t.Errorf("the audit allocated %d MiB for %d requests", allocated>>20, tr.Requests)
	}
	if growth := int64(after.HeapAlloc) - int64(before.HeapAlloc); growth > 8<<20 {
		t.Errorf("the heap grew by %d MiB", growth>>20)
	}
	t.Logf("traffic %+v; allocated %.1f MiB", tr, float64(allocated)/(1<<20))
}

func TestAbuseSlow(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	limits := probe.Limits{RequestTimeout: 500 * time.Millisecond}
	deadline := 5 * time.Second
	srv, e := serveAudited(t, ca, audittest.Slow(2*limits.RequestTimeout, audittest.Correct()), Config{Limits: limits, Deadline: deadline})
	start := time.Now()
	rep, err := e.Conformance(context.Background(), Target{URL: srv.URL})
	if took := time.Since(start); took > deadline {
		t.Errorf("the audit took %s, its deadline is %s", took, deadline)
	}
	if err != nil {
		t.Fatalf("Conformance: %v", err)
	}
	wantReport(t, rep, limits)
	if rep.Verdict != VerdictFail || rep.Eras[0].Status != EraBroken || rep.Eras[1].Status != EraBroken {
		t.Errorf("verdict %s, eras %+v", rep.Verdict, rep.Eras)
	}
	for _, id := range []string{"server-initialize", "server-discover"} {
		if c := checkOf(rep, id); c.Status != Failure || !strings.Contains(c.Details, "no complete answer within 500ms") {
			t.Errorf("%s: %s (%s)", id, c.Status, c.Details)
		}
	}

	start = time.Now()
	rr, err := e.Readiness(context.Background(), Target{URL: srv.URL})
	if took := time.Since(start); took > deadline {
		t.Errorf("the readiness audit took %s, its deadline is %s", took, deadline)
	}
	if err != nil {
		t.Fatalf("Readiness: %v", err)
	}
	wantReadinessReport(t, rr, limits)
	if rr.ProductionReady || rr.Eras[0].Status != EraBroken {
		t.Errorf("readiness: production ready %v, score %d, eras %+v", rr.ProductionReady, rr.Score, rr.Eras)
	}
}

func TestAbuseDown(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	target := audittest.Down()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	e := auditorFor(t, ca, port, Config{})
	start := time.Now()
	rep, err := e.Conformance(context.Background(), Target{URL: target})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the audit of a refused port took %s", took)
	}
	if err != nil {
		t.Fatalf("Conformance: %v", err)
	}
	wantReport(t, rep, probe.Limits{})
	if rep.Verdict != VerdictFail || rep.Eras[0].Status != EraBroken || rep.Eras[1].Status != EraBroken {
		t.Errorf("verdict %s, eras %+v", rep.Verdict, rep.Eras)
	}
	if c := checkOf(rep, "server-initialize"); c.Status != Failure {
		t.Errorf("server-initialize: %s (%s)", c.Status, c.Details)
	}
	for _, c := range rep.Checks {
		if c.Status == Failure && !strings.Contains(c.Details, "connection refused") {
			t.Errorf("%s fails without saying the connection was refused: %s", c.ID, c.Details)
		}
	}
}

// TestAbuseCallerLeft: when the service's own caller goes away, the audit stops promptly and
// returns the context's cause, not a report.
func TestAbuseCallerLeft(t *testing.T) {
	t.Parallel()
	ca := newCA(t)
	srv, e := serveAudited(t, ca, audittest.Slow(5*time.Second, audittest.Correct()), Config{})
	target := Target{URL: srv.URL}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if rep, err := e.Conformance(ctx, target); !errors.Is(err, context.Canceled) || rep != nil {
		t.Errorf("a canceled context: report %v, error %v", rep != nil, err)
	}
	if rep, err := e.Readiness(ctx, target); !errors.Is(err, context.Canceled) || rep != nil {
		t.Errorf("readiness, a canceled context: report %v, error %v", rep != nil, err)
	}

	left := errors.New("the caller left")
	for name, audit := range map[string]func(context.Context) (any, error){
		"conformance": func(ctx context.Context) (any, error) { return e.Conformance(ctx, target) },
		"readiness":   func(ctx context.Context) (any, error) { return e.Readiness(ctx, target) },
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(200*time.Millisecond, func() { cancel(left) })
		start := time.Now()
		rep, err := audit(ctx)
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: returned %s after the caller left", name, took-200*time.Millisecond)
		}
		if !errors.Is(err, left) {
			t.Errorf("%s: error %v, want %v", name, err, left)
		}
		if err == nil {
			t.Errorf("%s: a report %+v", name, rep)
		}
	}
}
