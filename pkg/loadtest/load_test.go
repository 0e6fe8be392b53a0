package loadtest_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
)

// counter answers 200, or 500 to requests whose i query parameter is a multiple of failEvery, and
// counts what it was sent.
type counter struct {
	failEvery int
	hits      atomic.Int64
	bodies    atomic.Int64 // requests that came with the body the test sends
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.hits.Add(1)
	if b, _ := io.ReadAll(r.Body); string(b) == "payload" && r.Method == http.MethodPost &&
		r.Header.Get("Content-Type") == "text/plain" {
		c.bodies.Add(1)
	}
	if i, _ := strconv.Atoi(r.URL.Query().Get("i")); c.failEvery > 0 && i%c.failEvery == 0 {
		http.Error(w, "planned failure", http.StatusInternalServerError)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

func post(base string) loadtest.Request {
	header := http.Header{"Content-Type": {"text/plain"}}
	return func(i int) (string, string, []byte, http.Header) {
		return http.MethodPost, base + "?i=" + strconv.Itoa(i), []byte("payload"), header
	}
}

func TestClosedLoopCountsRequestsAndFailures(t *testing.T) {
	t.Parallel()
	srv := &counter{failEvery: 4}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	r := loadtest.ClosedLoop(context.Background(), loadtest.NewClient(4, 5*time.Second), post(ts.URL), 4, 200*time.Millisecond)

	if r.Requests == 0 || int64(r.Requests) != srv.hits.Load() {
		t.Fatalf("Requests: got %d, want the %d the server answered (and more than 0)", r.Requests, srv.hits.Load())
	}
	if got := srv.bodies.Load(); got != int64(r.Requests) {
		t.Errorf("requests with the method, body and header of the Request: got %d, want %d", got, r.Requests)
	}
	// Requests are numbered 1..n, so every fourth failed.
	if want := r.Requests / 4; r.Failed != want {
		t.Errorf("Failed: got %d, want %d of %d", r.Failed, want, r.Requests)
	}
	if r.FirstError == nil || !strings.Contains(r.FirstError.Error(), "status 500: planned failure") {
		t.Errorf("FirstError: got %v, want the status and the body of a failed answer", r.FirstError)
	}
	if r.Elapsed < 200*time.Millisecond || r.P50 <= 0 || r.P50 > r.P99 || r.P99 > r.Max {
		t.Errorf("got Elapsed %s, P50 %s, P99 %s, Max %s; want at least the run's length and 0 < P50 <= P99 <= Max",
			r.Elapsed, r.P50, r.P99, r.Max)
	}
	if want := float64(r.Requests-r.Failed) / r.Elapsed.Seconds(); r.RPS() != want {
		t.Errorf("RPS: got %f, want %f", r.RPS(), want)
	}
}

func TestClosedLoopStopsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(&counter{})
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()

	start := time.Now()
	r := loadtest.ClosedLoop(ctx, loadtest.NewClient(2, 5*time.Second), post(ts.URL), 2, time.Minute)

	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("ClosedLoop returned after %s, want soon after its context ended (100ms)", d)
	}
	if r.Requests == 0 || r.Failed != 0 {
		t.Errorf("got %d failed of %d, want requests and no failures (a request cut by the context is not a failure)", r.Failed, r.Requests)
	}
}

func TestOpenLoopSendsTheRateForTheDuration(t *testing.T) {
	t.Parallel()
	srv := &counter{failEvery: 10}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	// 200 requests/s for 250ms: 50 requests, the last due at 49 x 5ms = 245ms.
	r := loadtest.OpenLoop(context.Background(), func(i int) (string, string, []byte, http.Header) {
		return http.MethodGet, ts.URL + "?i=" + strconv.Itoa(i), nil, nil
	}, loadtest.Schedule{Rate: 200, Duration: 250 * time.Millisecond, Conns: 8})

	if r.Requests != 50 || srv.hits.Load() != 50 {
		t.Errorf("got %d requests, %d answered; want 50", r.Requests, srv.hits.Load())
	}
	// i runs 0..49: 0, 10, 20, 30 and 40 fail.
	if r.Failed != 5 {
		t.Errorf("Failed: got %d, want 5", r.Failed)
	}
	if r.Elapsed < 245*time.Millisecond || r.Elapsed > 5*time.Second {
		t.Errorf("Elapsed: got %s, want the schedule's 245ms and not much more", r.Elapsed)
	}
	if r.P50 <= 0 || r.P50 > r.P99 || r.P99 > r.Max {
		t.Errorf("got P50 %s, P99 %s, Max %s; want 0 < P50 <= P99 <= Max", r.P50, r.P99, r.Max)
	}
}

func TestOpenLoopTimelineKeepsTheOrderRequestsWereDue(t *testing.T) {
	t.Parallel()
	// The 7th request (i = 6) is answered 100ms late; the others at once.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("i") == "6" {
			time.Sleep(100 * time.Millisecond)
		}
	}))
	t.Cleanup(ts.Close)

	r := loadtest.OpenLoop(context.Background(), func(i int) (string, string, []byte, http.Header) {
		return http.MethodGet, ts.URL + "?i=" + strconv.Itoa(i), nil, nil
	}, loadtest.Schedule{Rate: 100, Duration: 200 * time.Millisecond, Conns: 4})

	if len(r.Timeline) != r.Requests || r.Requests != 20 {
		t.Fatalf("got %d latencies for %d requests, want 20 of each", len(r.Timeline), r.Requests)
	}
	if slowest := slices.Index(r.Timeline, slices.Max(r.Timeline)); slowest != 6 || r.Timeline[6] < 100*time.Millisecond {
		t.Errorf("the slowest request is at %d (%s), want the 7th (index 6), at least 100ms", slowest, r.Timeline[slowest])
	}
	if r.Max != r.Timeline[6] {
		t.Errorf("Max %s, want the slowest of the timeline, %s: sorting for the percentiles must not reorder it", r.Max, r.Timeline[6])
	}
}

func TestOpenLoopLeavesTheWarmupOut(t *testing.T) {
	t.Parallel()
	// 100 requests/s: 10 in the 100ms warm-up, then 20 measured. The warm-up's are slow and fail.
	srv := &counter{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if i, _ := strconv.Atoi(r.URL.Query().Get("i")); i < 10 {
			time.Sleep(50 * time.Millisecond)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	r := loadtest.OpenLoop(context.Background(), func(i int) (string, string, []byte, http.Header) {
		return http.MethodGet, ts.URL + "?i=" + strconv.Itoa(i), nil, nil
	}, loadtest.Schedule{Rate: 100, Warmup: 100 * time.Millisecond, Duration: 200 * time.Millisecond, Conns: 4})

	if r.Requests != 20 || len(r.Timeline) != 20 || srv.hits.Load() != 20 {
		t.Errorf("got %d requests, %d latencies, %d measured answers; want the 20 after the warm-up", r.Requests, len(r.Timeline), srv.hits.Load())
	}
	if r.Failed != 0 || r.Max >= 50*time.Millisecond {
		t.Errorf("got %d failed, max %s; want the warm-up's failures and slow answers left out", r.Failed, r.Max)
	}
	if r.Elapsed < 190*time.Millisecond || r.Elapsed > 5*time.Second {
		t.Errorf("Elapsed: got %s, want the measured part's 190ms and not much more", r.Elapsed)
	}
}

func TestOpenLoopStopsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	srv := &counter{}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()

	start := time.Now()
	r := loadtest.OpenLoop(ctx, post(ts.URL), loadtest.Schedule{Rate: 100, Duration: time.Minute, Conns: 4})

	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("OpenLoop returned after %s, want soon after its context ended (100ms)", d)
	}
	// About 10 requests were due in 100ms, not the 6,000 of the minute. The ones in flight when the
	// context ended (at most one per worker) may be cut off before the server saw them.
	hits := srv.hits.Load()
	if r.Requests == 0 || r.Requests > 100 || hits > int64(r.Requests) || int64(r.Requests)-hits > 4 {
		t.Errorf("got %d requests, %d answered; want the few due before the context ended, all but those in flight answered", r.Requests, hits)
	}
	if r.Max > time.Second {
		t.Errorf("Max: got %s, want only the requests that were sent in the percentiles", r.Max)
	}
}

func TestSummarisePercentiles(t *testing.T) {
	t.Parallel()
	lat := make([]time.Duration, 100)
	for i := range lat {
		lat[i] = time.Duration(i+1) * time.Millisecond
	}
	rand.Shuffle(len(lat), func(i, j int) { lat[i], lat[j] = lat[j], lat[i] })

	r := loadtest.Summarise(lat, 120, 7, 2*time.Second)

	want := loadtest.Result{Requests: 120, Failed: 7, Elapsed: 2 * time.Second,
		P50: 51 * time.Millisecond, P99: 100 * time.Millisecond, Max: 100 * time.Millisecond}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got %+v, want %+v", r, want)
	}
	if got := r.RPS(); got != 56.5 {
		t.Errorf("RPS: got %f, want (120-7)/2 = 56.5", got)
	}
	if got := loadtest.Summarise(nil, 0, 0, time.Second); got.P50 != 0 || got.P99 != 0 || got.Max != 0 {
		t.Errorf("no latencies: got %+v, want zero percentiles", got)
	}
}

func TestOverIsTheShareOfSlowRequests(t *testing.T) {
	t.Parallel()
	r := loadtest.Result{Timeline: []time.Duration{time.Millisecond, 6 * time.Millisecond, 5 * time.Millisecond, 9 * time.Millisecond}}
	if got := r.Over(5 * time.Millisecond); got != 0.5 {
		t.Errorf("Over(5ms): got %v, want 0.5 (6ms and 9ms of four; 5ms is not over)", got)
	}
	if got := (loadtest.Result{}).Over(time.Millisecond); got != 0 {
		t.Errorf("no timeline: got %v, want 0", got)
	}
}

func TestFetchReturnsTheBodyAndFailsOnAnotherStatus(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(&counter{failEvery: 2})
	t.Cleanup(ts.Close)
	client := loadtest.NewClient(1, 5*time.Second)

	body, err := loadtest.Fetch(context.Background(), client, http.MethodGet, ts.URL+"?i=1", nil, nil)
	if err != nil || string(body) != "ok" {
		t.Errorf("Fetch: got %q, %v; want \"ok\", nil", body, err)
	}
	err = loadtest.Send(context.Background(), client, http.MethodGet, ts.URL+"?i=2", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "GET "+ts.URL+"?i=2: status 500") {
		t.Errorf("Send: got %v, want the method, URL and status of the failure", err)
	}
}
