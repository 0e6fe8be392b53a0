// Package loadtest holds what the load-test commands of the services (scoring-bench,
// verification-bench) share: closed- and open-loop HTTP load with latency percentiles, child
// processes of the bench's own binary that play the service or a baseline, and a throwaway
// PostgreSQL database for one run.
package loadtest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Request builds the i-th request of a run: its method, URL, body (nil for none) and header. The
// header is sent as is and shared by concurrent requests, so it must not change during a run.
type Request func(i int) (method, url string, body []byte, header http.Header)

// Result is what a run measured.
type Result struct {
	Requests int
	Failed   int
	Elapsed  time.Duration
	P50, P99 time.Duration
	Max      time.Duration
	// Timeline is, for an open-loop run, the latency of each request in the order they were due
	// (the i-th at i/rate from the start): when the slow ones came, not only how many there were.
	Timeline []time.Duration
	// Start is when the first measured request of an open-loop run was due (wall clock): with it, a
	// timeline can be laid over a trace of the server (package tailtrace).
	Start time.Time
	// FirstError is the first failure, to say why a run failed.
	FirstError error
}

// RPS is successful requests per second.
func (r Result) RPS() float64 { return float64(r.Requests-r.Failed) / r.Elapsed.Seconds() }

// Over is the share of an open-loop run's requests that took longer than d (0 without a timeline).
// Of a p99 target, it tells how far a run is: under 1 % meets it, whatever the p99 of one run says.
func (r Result) Over(d time.Duration) float64 {
	if len(r.Timeline) == 0 {
		return 0
	}
	n := 0
	for _, l := range r.Timeline {
		if l > d {
			n++
		}
	}
	return float64(n) / float64(len(r.Timeline))
}

// NewClient returns a client that keeps up to 2*conns connections to one host open, so that a run
// measures requests rather than TCP handshakes.
func NewClient(conns int, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, MaxConnsPerHost: conns * 2, IdleConnTimeout: time.Minute,
	}}
}

// Send sends one request and fails unless it answered 200. The answer is read to the end, so that
// the connection is reused and the server pays for writing it.
func Send(ctx context.Context, client *http.Client, method, url string, body []byte, header http.Header) error {
	_, err := do(ctx, client, method, url, body, header, false)
	return err
}

// Fetch is Send that returns the answer's body.
func Fetch(ctx context.Context, client *http.Client, method, url string, body []byte, header http.Header) ([]byte, error) {
	return do(ctx, client, method, url, body, header, true)
}

func do(ctx context.Context, client *http.Client, method, url string, body []byte, header http.Header, keep bool) ([]byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, r)
	if err != nil {
		return nil, err
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s %s: status %d: %s", method, url, resp.StatusCode, answer)
	}
	if keep {
		return io.ReadAll(resp.Body)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return nil, err
}

// failures counts the failed requests of a run and keeps the first cause. A request cut short
// because the run's context ended is not a failure of the server.
type failures struct {
	n     atomic.Int64
	mu    sync.Mutex
	first error
}

func (f *failures) add(ctx context.Context, err error) {
	if err == nil || ctx.Err() != nil {
		return
	}
	f.n.Add(1)
	f.mu.Lock()
	f.first = cmp.Or(f.first, err)
	f.mu.Unlock()
}

// ClosedLoop runs workers that each send the next request as soon as the previous one answered,
// for d or until ctx ends: the path's maximum rate at that concurrency.
func ClosedLoop(ctx context.Context, client *http.Client, next Request, workers int, d time.Duration) Result {
	var n atomic.Int64
	var failed failures
	var mu sync.Mutex
	var lat []time.Duration
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) && ctx.Err() == nil {
				i := int(n.Add(1))
				method, url, body, header := next(i)
				t := time.Now()
				failed.add(ctx, Send(ctx, client, method, url, body, header))
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	r := Summarise(lat, int(n.Load()), int(failed.n.Load()), time.Since(start))
	r.FirstError = failed.first
	return r
}

// Schedule is the plan of an open-loop run.
type Schedule struct {
	Rate     float64       // requests per second
	Duration time.Duration // of the measured part
	// Warmup is sent at the same rate before the measured part and left out of the result: the
	// connections are dialled and the server's caches filled then, so that the percentiles describe
	// the steady state rather than one cold start (wrk2 leaves out its calibration the same way).
	Warmup time.Duration
	// Conns is the number of workers, each with one keep-alive connection; give enough that a free
	// one is always waiting.
	Conns int
}

// OpenLoop sends requests at a fixed rate whatever the answers do (no coordinated omission): the
// i-th request is due at start + i/rate, and its latency counts from that moment, so a stalled
// server shows up in the percentiles instead of slowing the load down. Each worker owns one
// keep-alive connection (rawConn) and takes the due requests from one dispatcher. Every request of
// a run goes to one host. When ctx ends, no further request is sent and the result covers the
// measured requests that were.
//
// It is a few lines here rather than vegeta's attacker because vegeta times a request from the moment
// a worker picks it up, so a late pacer hides a stall, and because the generator's own cost is part
// of the tail it measures (see rawConn).
func OpenLoop(ctx context.Context, next Request, s Schedule) Result {
	skip := int(s.Rate * s.Warmup.Seconds())
	total := skip + int(s.Rate*s.Duration.Seconds())
	interval := time.Duration(float64(time.Second) / s.Rate)
	lat := make([]time.Duration, total)
	var failed failures
	type job struct {
		i   int
		due time.Time
	}
	jobs := make(chan job, total)
	var wg sync.WaitGroup
	for range s.Conns {
		wg.Go(func() {
			var rc *rawConn
			defer func() {
				if rc != nil {
					rc.close()
				}
			}()
			// A run sends to one URL or a few: parse a target when it changes, not per request, on the
			// core whose own cost is part of the tail measured.
			var (
				lastTarget string
				u          *url.URL // nil with parseErr nil: nothing parsed yet
				parseErr   error
			)
			for j := range jobs {
				method, target, body, header := next(j.i)
				if (u == nil && parseErr == nil) || target != lastTarget {
					u, parseErr = url.Parse(target)
					lastTarget = target
				}
				err := parseErr
				if err == nil {
					if rc == nil {
						rc = &rawConn{host: u.Host, timeout: 10 * time.Second}
					}
					err = rc.do(ctx, method, u, body, header)
				}
				if j.i >= skip {
					failed.add(ctx, err)
				}
				lat[j.i] = time.Since(j.due)
			}
		})
	}
	start := time.Now()
	sent := 0
	timer := time.NewTimer(0)
	defer timer.Stop()
dispatch:
	for i := range total {
		due := start.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				break dispatch
			case <-timer.C:
			}
		}
		if ctx.Err() != nil {
			break
		}
		jobs <- job{i, due}
		sent++
	}
	close(jobs)
	wg.Wait()
	measured := lat[min(skip, sent):sent]
	elapsed := time.Since(start.Add(time.Duration(skip) * interval))
	timeline := slices.Clone(measured)
	r := Summarise(measured, len(measured), int(failed.n.Load()), max(elapsed, 0))
	r.Timeline, r.FirstError, r.Start = timeline, failed.first, start.Add(time.Duration(skip)*interval)
	return r
}

// Summarise sorts lat in place and returns the result of a run of n requests, failed of them
// failing, over elapsed. Its percentiles are the nearest rank at or above: of 100 latencies, P50
// is the 51st smallest and P99 the 100th.
func Summarise(lat []time.Duration, n, failed int, elapsed time.Duration) Result {
	slices.Sort(lat)
	r := Result{Requests: n, Failed: failed, Elapsed: elapsed}
	if len(lat) > 0 {
		r.P50, r.P99, r.Max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	return r
}
