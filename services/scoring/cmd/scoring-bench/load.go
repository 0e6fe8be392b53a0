package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// request builds the i-th request of a run.
type request func(i int) (url string, body []byte, header http.Header)

// result is what a run measured.
type result struct {
	Requests int
	Failed   int
	Elapsed  time.Duration
	P50, P99 time.Duration
	Max      time.Duration
}

// RPS is successful requests per second.
func (r result) RPS() float64 { return float64(r.Requests-r.Failed) / r.Elapsed.Seconds() }

func newClient(conns int) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, MaxConnsPerHost: conns * 2, IdleConnTimeout: time.Minute,
	}}
}

func send(client *http.Client, url string, body []byte, header http.Header) bool {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header = header
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// closedLoop runs workers that each send the next request as soon as the previous one answered: the
// path's maximum rate at that concurrency.
func closedLoop(client *http.Client, next request, workers int, d time.Duration) result {
	var n, failed atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	deadline := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var mine []time.Duration
			for time.Now().Before(deadline) {
				i := int(n.Add(1))
				url, body, header := next(i)
				t := time.Now()
				if !send(client, url, body, header) {
					failed.Add(1)
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return summarise(lat, int(n.Load()), int(failed.Load()), time.Since(start))
}

// openLoop sends requests at a fixed rate whatever the answers do (no coordinated omission): the
// i-th request is due at start + i/rate, and its latency counts from that moment, so a stalled
// server shows up in the percentiles instead of slowing the load down. A pool of workers takes the
// due requests from one dispatcher, enough of them that a free one is always waiting. It is a few
// lines here because vegeta, the usual tool, is not reachable from this machine's module proxy.
func openLoop(ctx context.Context, client *http.Client, next request, rate float64, d time.Duration, workers int) result {
	total := int(rate * d.Seconds())
	interval := time.Duration(float64(time.Second) / rate)
	lat := make([]time.Duration, total)
	var failed atomic.Int64
	type job struct {
		i   int
		due time.Time
	}
	jobs := make(chan job, total)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for j := range jobs {
				url, body, header := next(j.i)
				if !send(client, url, body, header) {
					failed.Add(1)
				}
				lat[j.i] = time.Since(j.due)
			}
		})
	}
	start := time.Now()
	for i := range total {
		due := start.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		if ctx.Err() != nil {
			break
		}
		jobs <- job{i, due}
	}
	close(jobs)
	wg.Wait()
	return summarise(lat, total, int(failed.Load()), time.Since(start))
}

func summarise(lat []time.Duration, n, failed int, elapsed time.Duration) result {
	slices.Sort(lat)
	r := result{Requests: n, Failed: failed, Elapsed: elapsed}
	if len(lat) > 0 {
		r.P50, r.P99, r.Max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	return r
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
