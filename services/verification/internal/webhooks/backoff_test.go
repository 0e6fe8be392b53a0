package webhooks

import (
	"testing"
	"time"
)

func TestRetryDelay(t *testing.T) {
	const base, max = 30 * time.Second, 4 * time.Hour
	for _, tc := range []struct {
		name       string
		attempt    int
		retryAfter time.Duration
		jitter     float64
		want       time.Duration
	}{
		{"first retry, least jitter", 1, 0, 0, 15 * time.Second},
		{"first retry, most jitter", 1, 0, 0.999999, 30 * time.Second},
		{"grows 4x", 2, 0, 0, time.Minute},
		{"fifth", 5, 0, 0, 64 * time.Minute},
		{"capped", 6, 0, 0, 2 * time.Hour},
		{"stays capped", 25, 0, 0.999999, max},
		{"Retry-After longer", 1, 10 * time.Minute, 0, 10 * time.Minute},
		{"Retry-After beyond the cap", 1, 48 * time.Hour, 0, max},
		{"Retry-After shorter", 3, time.Second, 0, 4 * time.Minute},
	} {
		got := retryDelay(tc.attempt, base, max, tc.retryAfter, tc.jitter)
		if got.Round(time.Second) != tc.want {
			t.Errorf("%s: retryDelay(%d) = %s, want %s", tc.name, tc.attempt, got, tc.want)
		}
	}
}

// TestDefaultScheduleSpansHours documents the production schedule: ten attempts over more than nine
// hours even with the least jitter.
func TestDefaultScheduleSpansHours(t *testing.T) {
	var least, most time.Duration
	for n := 1; n < 10; n++ {
		least += retryDelay(n, 30*time.Second, 4*time.Hour, 0, 0)
		most += retryDelay(n, 30*time.Second, 4*time.Hour, 0, 0.999999)
	}
	if least < 9*time.Hour || most > 19*time.Hour {
		t.Fatalf("schedule spans %s..%s, want about 9h..19h", least, most)
	}
}
