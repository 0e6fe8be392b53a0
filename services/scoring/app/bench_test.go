package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/services/scoring/app"
	"github.com/trustlayer/trustlayer/services/scoring/internal/meter"
	"github.com/trustlayer/trustlayer/services/scoring/internal/score"
)

// BenchmarkScoreOverHTTP sends POST /v1/score through the whole service: HTTP server, gateway,
// interceptors, authentication, limiter, meter, model and codec, with request records flushed to
// PostgreSQL; through the same service whose limiter admits and counts nothing but still stores the
// records (metering_off: the difference is what limits and metering cost end to end, client included
// in both); and through one that stores no record either (records_off). Run each with -cpuprofile or
// -memprofile to see where a request's time and bytes go.
func BenchmarkScoreOverHTTP(b *testing.B) {
	for _, tc := range []struct {
		name string
		opts []app.Option
	}{
		{"metering_on", nil},
		{"metering_off", []app.Option{app.WithLimiter(func(m *meter.Meter) score.Limiter { return unlimited{m} })}},
		{"records_off", []app.Option{app.WithLimiter(func(*meter.Meter) score.Limiter { return unmetered{} })}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			// At warn, as scoring-bench runs it: no access or decision log line per request.
			env := testEnv(b, map[string]string{"SCORING_LOG_LEVEL": "warn", "SCORING_USAGE_FLUSH_INTERVAL": "1s"})
			s := startBoot(b, env, func(ctx context.Context, getenv func(string) string, logs io.Writer) (*platform.Platform, error) {
				return app.BootWith(ctx, getenv, logs, tc.opts...)
			})
			benchScore(b, s)
		})
	}
}

func benchScore(b *testing.B, s *stack) {
	// Internal keys admit 1,000 requests/s each; enough of them keep the limiter from refusing.
	const nkeys = 64
	auth := make([]string, nkeys)
	for i := range auth {
		auth[i] = "Bearer " + s.issueKey("internal")
	}
	body, err := json.Marshal(map[string]any{"workflow": "healthcare.denial", "payload": denialClaim()})
	if err != nil {
		b.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		req, err := http.NewRequest("POST", s.URL+"/v1/score", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", auth[i%nkeys])
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("score: %d", resp.StatusCode)
		}
		i++
	}
}

// unlimited admits every request and counts none, but stores each request's record through the meter.
type unlimited struct{ m *meter.Meter }

func (u unlimited) Admit(_ context.Context, _ string, _ meter.Plan, n int) (meter.Ticket, error) {
	return u.m.Unlimited(n), nil
}

// unmetered admits every request and meters none, so it stores no request record either.
type unmetered struct{}

func (unmetered) Admit(context.Context, string, meter.Plan, int) (meter.Ticket, error) {
	return meter.Ticket{}, nil
}
