package safehttp

import (
	"context"
	"crypto/tls"
	"net/http/httptrace"
	"sync"
	"time"
)

// Timings break down where the time of a Do call went. DNS, Connect and TLS add up every lookup, dial
// and handshake of the attempt that produced the response, redirect hops included (zero when a pooled
// connection was reused); FirstByte runs from that attempt's start to the first byte of the final
// response; Total runs from the call of Do to its return, earlier attempts and back-off included (the
// body is read later, by the caller).
type Timings struct {
	DNS, Connect, TLS, FirstByte, Total time.Duration
}

// recorder collects one attempt's timings and redirect chain. The Transport dials in its own goroutine,
// hence the mutex.
type recorder struct {
	mu        sync.Mutex
	start     time.Time
	tlsStart  time.Time
	timings   Timings
	redirects []string
	host      string // host of the latest hop, for errors
}

type recorderKey struct{}

// withRecorder attaches rec to ctx, both as a value (read by dialContext and checkRedirect; the
// Transport keeps request values on dial contexts) and as an httptrace hook for TLS and first byte.
func withRecorder(ctx context.Context, rec *recorder) context.Context {
	ctx = context.WithValue(ctx, recorderKey{}, rec)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		TLSHandshakeStart: func() {
			rec.mu.Lock()
			rec.tlsStart = time.Now()
			rec.mu.Unlock()
		},
		TLSHandshakeDone: func(tls.ConnectionState, error) {
			rec.mu.Lock()
			if !rec.tlsStart.IsZero() {
				rec.timings.TLS += time.Since(rec.tlsStart)
			}
			rec.mu.Unlock()
		},
		GotFirstResponseByte: func() {
			rec.mu.Lock()
			rec.timings.FirstByte = time.Since(rec.start)
			rec.mu.Unlock()
		},
	})
}

// recorderFrom returns the recorder of ctx; a nil recorder ignores every call.
func recorderFrom(ctx context.Context) *recorder {
	rec, _ := ctx.Value(recorderKey{}).(*recorder)
	return rec
}

func (r *recorder) addDNS(d time.Duration) {
	if r != nil {
		r.mu.Lock()
		r.timings.DNS += d
		r.mu.Unlock()
	}
}

func (r *recorder) addConnect(d time.Duration) {
	if r != nil {
		r.mu.Lock()
		r.timings.Connect += d
		r.mu.Unlock()
	}
}

// redirected records the chain so far and the host of the next hop.
func (r *recorder) redirected(urls []string, host string) {
	if r != nil {
		r.mu.Lock()
		r.redirects = urls
		r.host = host
		r.mu.Unlock()
	}
}

func (r *recorder) currentHost() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.host
}

// snapshot returns copies of what was recorded.
func (r *recorder) snapshot() (Timings, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.timings, append([]string(nil), r.redirects...)
}
