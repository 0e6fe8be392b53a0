package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// sink is a loopback receiver that notes when each change's deliveries arrive.
type sink struct {
	mu      sync.Mutex
	arrived map[string][]time.Time
	total   int
	done    chan struct{}
	want    int
}

func newSink(want int) *sink {
	return &sink{arrived: map[string][]time.Time{}, done: make(chan struct{}), want: want}
}

func (k *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	var body struct {
		Data struct {
			ChangeID string `json:"change_id"`
		} `json:"data"`
	}
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	k.mu.Lock()
	k.arrived[body.Data.ChangeID] = append(k.arrived[body.Data.ChangeID], at)
	k.total++
	if k.total == k.want {
		close(k.done)
	}
	k.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// fanOutStack starts a stack where `endpoints` organizations watch the benchmark server, each with one
// endpoint on a receiver of its own, all served by k.
func fanOutStack(b *testing.B, endpoints int, k *sink) *webhookStack {
	s := startWebhooks(b, catalog{server: true}, "", map[string]string{"VERIFICATION_WEBHOOK_WORKERS": "32"})
	for i := range endpoints {
		recv := httptest.NewServer(k)
		b.Cleanup(recv.Close)
		key := s.newKey(fmt.Sprintf("org-%d", i))
		s.endpoint(key, recv.URL)
		s.watch(key, server, nil)
	}
	return s
}

// BenchmarkFanOut measures signed deliveries per second: changes on a server watched by 50
// organizations, from the commit of the changes to the last delivery's arrival.
func BenchmarkFanOut(b *testing.B) {
	const endpoints = 50
	changes := max(1, b.N/endpoints)
	k := newSink(changes * endpoints)
	s := fanOutStack(b, endpoints, k)
	b.ResetTimer()
	start := time.Now()
	for range changes {
		s.publish(change(server, "remote_url_changed", "high"))
	}
	select {
	case <-k.done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d deliveries arrived", k.total, changes*endpoints)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(changes*endpoints)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkChangeToDelivery measures the delay from a change's commit to each of its deliveries'
// arrival: one change every 10 ms (or 20 ms), each watched by 10 organizations, so 1,000 (or 500)
// deliveries per second.
func BenchmarkChangeToDelivery(b *testing.B) {
	for _, every := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond} {
		b.Run(fmt.Sprintf("deliveries=%d/s", 10*int(time.Second/every)), func(b *testing.B) { changeToDelivery(b, every) })
	}
}

func changeToDelivery(b *testing.B, every time.Duration) {
	const endpoints = 10
	changes := max(50, b.N)
	k := newSink(changes * endpoints)
	s := fanOutStack(b, endpoints, k)
	committed := map[string]time.Time{}
	b.ResetTimer()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for range changes {
		<-tick.C
		c := change(server, "remote_url_changed", "high")
		s.publish(c)
		committed[c.GetChangeId()] = time.Now()
	}
	select {
	case <-k.done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("only %d of %d deliveries arrived", k.total, changes*endpoints)
	}
	b.StopTimer()
	var delays []time.Duration
	k.mu.Lock()
	for id, at := range k.arrived {
		for _, t := range at {
			delays = append(delays, t.Sub(committed[id]))
		}
	}
	k.mu.Unlock()
	slices.Sort(delays)
	pct := func(p float64) float64 { return float64(delays[int(p*float64(len(delays)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}
