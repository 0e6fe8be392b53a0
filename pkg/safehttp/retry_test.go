package safehttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// failFirst answers status (with headers) to the first n requests and 200 "ok" afterwards; it checks
// that every attempt carries the same body.
func failFirst(t *testing.T, n int64, status int, headers map[string]string, wantBody string) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	return countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if got, _ := io.ReadAll(r.Body); string(got) != wantBody {
			t.Errorf("request body: got %q, want %q", got, wantBody)
		}
		if calls.Add(1) <= n {
			for k, v := range headers {
				w.Header().Set(k, v)
			}
			w.WriteHeader(status)
			_, _ = io.WriteString(w, "try later")
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
}

// recordSleeps makes c record back-off waits instead of sleeping.
func recordSleeps(c *Client) func() []time.Duration {
	var mu sync.Mutex
	var waits []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Duration(nil), waits...)
	}
}

func TestRetriesTransientFailuresThenSucceeds(t *testing.T) {
	t.Parallel()
	for _, status := range []int{503, 429, 502, 500, 504, 408} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			srv, hits := failFirst(t, 2, status, nil, "payload")
			c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly})

			resp, err := c.Do(context.Background(), &Request{Method: http.MethodPost, URL: srv.URL, Body: []byte("payload")})
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			resp.Body.Close()
			if resp.Attempts != 3 || hits.Load() != 3 {
				t.Errorf("got attempts %d, requests %d; want 3, 3", resp.Attempts, hits.Load())
			}
		})
	}
}

func TestRetriesExhausted(t *testing.T) {
	t.Parallel()
	srv, hits := failFirst(t, 100, http.StatusServiceUnavailable, nil, "")
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly, MaxAttempts: 4})

	_, err := c.Do(context.Background(), &Request{URL: srv.URL})
	e := wantKind(t, err, KindStatus)
	if e.Status != 503 || e.Attempts != 4 || hits.Load() != 4 || Permanent(err) {
		t.Errorf("got status %d, attempts %d, requests %d, permanent %v; want 503, 4, 4, false",
			e.Status, e.Attempts, hits.Load(), Permanent(err))
	}
}

func TestNoRetryOnPermanentFailures(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 403, 404, 410, 422, 501, 505} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			t.Parallel()
			srv, hits := failFirst(t, 100, status, nil, "")
			c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly})

			_, err := c.Do(context.Background(), &Request{URL: srv.URL})
			e := wantKind(t, err, KindStatus)
			if e.Status != status || e.Attempts != 1 || hits.Load() != 1 || !Permanent(err) {
				t.Errorf("got status %d, attempts %d, requests %d, permanent %v; want %d, 1, 1, true",
					e.Status, e.Attempts, hits.Load(), Permanent(err), status)
			}
		})
	}
	t.Run("blocked", func(t *testing.T) {
		t.Parallel()
		c, dials := newTestClient(t, Policy{}, WithLookup(staticDNS(map[string][]string{"x.test": {"10.0.0.1"}})))
		_, err := c.Do(context.Background(), &Request{URL: "http://x.test/"})
		e := wantKind(t, err, KindBlockedAddress)
		if e.Attempts != 1 || len(dials.list()) != 0 {
			t.Errorf("got attempts %d, dials %v; want 1, none", e.Attempts, dials.list())
		}
	})
}

func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(20 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name    string
		status  int
		header  string
		atLeast time.Duration
	}{
		{"429 seconds", http.StatusTooManyRequests, "2", 2 * time.Second},
		{"503 HTTP-date", http.StatusServiceUnavailable, date, 18 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := failFirst(t, 1, tt.status, map[string]string{"Retry-After": tt.header}, "")
			c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly})
			waits := recordSleeps(c)

			resp, err := c.Do(context.Background(), &Request{URL: srv.URL})
			if err != nil {
				t.Fatalf("Do: %v", err)
			}
			resp.Body.Close()
			got := waits()
			if resp.Attempts != 2 || len(got) != 1 || got[0] < tt.atLeast || got[0] > DefaultMaxRetryAfter {
				t.Errorf("got attempts %d, waits %v; want 2 attempts, one wait in [%v, %v]", resp.Attempts, got, tt.atLeast, DefaultMaxRetryAfter)
			}
		})
	}
}

func TestRetryAfterBeyondCapEndsRetries(t *testing.T) {
	t.Parallel()
	srv, hits := failFirst(t, 100, http.StatusTooManyRequests, map[string]string{"Retry-After": "3600"}, "")
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly})
	waits := recordSleeps(c)

	_, err := c.Do(context.Background(), &Request{URL: srv.URL})
	e := wantKind(t, err, KindStatus)
	if e.Attempts != 1 || hits.Load() != 1 || len(waits()) != 0 {
		t.Errorf("got attempts %d, requests %d, waits %v; want 1, 1, none", e.Attempts, hits.Load(), waits())
	}
	if e.RetryAfter != time.Hour || Permanent(err) {
		t.Errorf("got RetryAfter %v, permanent %v; want 1h for the caller's schedule, false", e.RetryAfter, Permanent(err))
	}
}

func TestBackoffJitterBounded(t *testing.T) {
	t.Parallel()
	c := New(Policy{}, WithBackoff(100*time.Millisecond, 2*time.Second))
	for n := 1; n <= 12; n++ {
		nominal := min(100*time.Millisecond<<(n-1), 2*time.Second)
		seen := map[time.Duration]bool{}
		for range 200 {
			d := c.backoff(n)
			if d < nominal/2 || d > nominal {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, d, nominal/2, nominal)
			}
			seen[d] = true
		}
		if len(seen) < 10 {
			t.Errorf("backoff(%d): %d distinct values in 200 draws, want jitter", n, len(seen))
		}
	}
	if d := c.backoff(1000); d > 2*time.Second {
		t.Errorf("backoff(1000) = %v, want at most the 2s cap (no overflow)", d)
	}
}

func TestTimeoutPerAttempt(t *testing.T) {
	t.Parallel()
	srv, hits := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // hangs until the client gives up
	})
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly, Timeout: 100 * time.Millisecond, MaxAttempts: 2})

	start := time.Now()
	_, err := c.Do(context.Background(), &Request{URL: srv.URL})
	elapsed := time.Since(start)
	e := wantKind(t, err, KindTimeout)
	if e.Attempts != 2 || hits.Load() != 2 || Permanent(err) {
		t.Errorf("got attempts %d, requests %d, permanent %v; want 2, 2, false", e.Attempts, hits.Load(), Permanent(err))
	}
	if elapsed < 200*time.Millisecond || elapsed > 5*time.Second {
		t.Errorf("took %v, want about two 100ms attempts", elapsed)
	}
}

func TestTimeoutCoversBodyRead(t *testing.T) {
	t.Parallel()
	srv, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		// More than the sniff window, so that Do returns before the stall.
		_, _ = io.WriteString(w, strings.Repeat("x", 600))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly, Timeout: 200 * time.Millisecond})

	resp, err := c.Do(context.Background(), &Request{URL: srv.URL})
	if err != nil {
		t.Fatalf("Do: %v", err)
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	wantKind(t, err, KindTimeout)
}

func TestConnectionRefusedRetried(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, dials := newTestClient(t, Policy{AllowPrivate: loopbackOnly})

	_, err := c.Do(context.Background(), &Request{URL: url})
	e := wantKind(t, err, KindNetwork)
	if e.Attempts != 3 || len(dials.list()) != 3 || Permanent(err) {
		t.Errorf("got attempts %d, dials %d, permanent %v; want 3, 3, false", e.Attempts, len(dials.list()), Permanent(err))
	}
}

func TestCanceledDuringBackoff(t *testing.T) {
	t.Parallel()
	srv, hits := failFirst(t, 100, http.StatusServiceUnavailable, nil, "")
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly}, WithBackoff(time.Hour, time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)

	_, err := c.Do(ctx, &Request{URL: srv.URL})
	wantKind(t, err, KindCanceled)
	if !errors.Is(err, context.Canceled) || hits.Load() != 1 {
		t.Errorf("got %v after %d requests, want context.Canceled after 1", err, hits.Load())
	}
}

func TestDeadlineShorterThanBackoffStopsRetries(t *testing.T) {
	t.Parallel()
	srv, hits := failFirst(t, 100, http.StatusBadGateway, nil, "")
	c, _ := newTestClient(t, Policy{AllowPrivate: loopbackOnly}, WithBackoff(time.Minute, time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	_, err := c.Do(ctx, &Request{URL: srv.URL})
	e := wantKind(t, err, KindStatus)
	if e.Status != 502 || hits.Load() != 1 {
		t.Errorf("got status %d after %d requests, want 502 after 1", e.Status, hits.Load())
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{"7", 7 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"soon", 0},
		{"99999999999999999", 365 * 24 * time.Hour},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q): got %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestRetryableStatus(t *testing.T) {
	t.Parallel()
	for code := 100; code < 600; code++ {
		want := code == 408 || code == 425 || code == 429 || code >= 500 && code != 501 && code != 505
		if got := retryableStatus(code); got != want {
			t.Errorf("retryableStatus(%d): got %v, want %v", code, got, want)
		}
	}
}
