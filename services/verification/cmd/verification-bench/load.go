package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The load helpers below are those of services/scoring/cmd/scoring-bench/load.go (closedLoop,
// summarise, result), adapted to GET requests and to a context that ends a run early (Ctrl-C). The
// benches are separate binaries of separate modules, so they are copied rather than shared.

// request builds the i-th request of a run: a URL to GET with its headers.
type request func(i int) (url string, header http.Header)

// result is what a run measured.
type result struct {
	Requests int
	Failed   int
	Elapsed  time.Duration
	P50, P99 time.Duration
	Max      time.Duration
	// FirstError is the first failure, to say why a run failed.
	FirstError error
}

// RPS is successful requests per second.
func (r result) RPS() float64 { return float64(r.Requests-r.Failed) / r.Elapsed.Seconds() }

func newClient(conns int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, MaxConnsPerHost: conns * 2, IdleConnTimeout: time.Minute,
	}}
}

// get sends one GET and fails unless it answered 200. The body is read to the end, so that the
// connection is reused and the service pays for writing it; with keep set it is returned.
func get(ctx context.Context, client *http.Client, url string, header http.Header, keep bool) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
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
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: status %d: %s", url, resp.StatusCode, body)
	}
	if keep {
		return io.ReadAll(resp.Body)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return nil, err
}

// closedLoop runs workers that each send the next request as soon as the previous one answered: the
// path's maximum rate at that concurrency.
func closedLoop(ctx context.Context, client *http.Client, next request, workers int, d time.Duration) result {
	var n, failed atomic.Int64
	var firstErr error
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
				url, header := next(i)
				t := time.Now()
				if _, err := get(ctx, client, url, header, false); err != nil && ctx.Err() == nil {
					failed.Add(1)
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
				}
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	r := summarise(lat, int(n.Load()), int(failed.Load()), time.Since(start))
	r.FirstError = firstErr
	return r
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
