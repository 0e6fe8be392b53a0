package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// BenchmarkScoreOverHTTP sends POST /v1/score through the whole service: HTTP server, gateway,
// interceptors, authentication, limiter, meter, model and codec, with request records flushed to
// PostgreSQL. Its B/op and allocs/op (client included) are what the garbage collector has to mark
// per request, the main source of the open-loop tail on one core (README, "Performance"); run it
// with -memprofile to see where they come from.
func BenchmarkScoreOverHTTP(b *testing.B) {
	// At warn, as scoring-bench runs it: no access or decision log line per request.
	s := startService(b, map[string]string{"SCORING_LOG_LEVEL": "warn"})
	// Internal keys admit 1,000 requests/s each; enough of them keep the limiter out of the way.
	const nkeys = 64
	auth := make([]string, nkeys)
	for i := range auth {
		r := s.call("POST", "/v1/apikeys/issue", map[string]any{"plan": "internal"}, admin)
		if r.status != 201 {
			b.Fatalf("issue key: %d %s", r.status, r.body)
		}
		auth[i] = "Bearer " + r.obj(b)["api_key"].(string)
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
