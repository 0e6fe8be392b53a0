package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/trustlayer/trustlayer/services/scoring/app"
	"github.com/trustlayer/trustlayer/services/scoring/internal/api"
)

// BenchmarkScoreOverHTTP sends POST /v1/score through the whole service: HTTP server, gateway,
// interceptors, authentication, limiter, meter, model and codec, with request records flushed to
// PostgreSQL; through the same service whose limiter admits and counts nothing but still stores the
// records (metering_off: the difference is what limits and metering cost end to end, client included
// in both); and through one that stores no record either (records_off). Run each with -cpuprofile or
// -memprofile to see where a request's time and bytes go.
func BenchmarkScoreOverHTTP(b *testing.B) {
	for _, tc := range []struct {
		name   string
		adjust func(*app.Config)
	}{
		{"metering_on", nil},
		{"metering_off", func(c *app.Config) { c.Limiter = api.NewUnlimited }},
		{"records_off", func(c *app.Config) { c.Limiter = api.NewUnmetered }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			// At warn, as scoring-bench runs it: no access or decision log line per request.
			s := startAdjusted(b, testEnv(b, map[string]string{"SCORING_LOG_LEVEL": "warn", "SCORING_USAGE_FLUSH_INTERVAL": "1s"}), tc.adjust)
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
		req, err := http.NewRequest("POST", s.base+"/v1/score", bytes.NewReader(body))
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
