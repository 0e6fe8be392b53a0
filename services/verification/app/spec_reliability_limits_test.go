package app_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
)

// The query limits of agent reliability over HTTP: GET /runs answers 50 runs without a limit and
// up to 200 with one; POST /scheduled-scans/enqueue-due takes 25 due schedules without a limit and
// answers an object of integers.

func TestSpecReliabilityRunsDefaultLimit(t *testing.T) {
	t.Parallel()
	s := startRuns(t, 443)
	o := s.runsOwner("Run listers")
	repo, target := s.reliabilityTarget(o, "https://93.184.216.34/mcp", "mcp")
	const n = 53
	start := time.Now().Add(-time.Hour)
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		if _, err := s.Pool.Exec(context.Background(), `INSERT INTO reliability_runs (id, organization_id, repository_id, target_id, state, trigger, created_at, updated_at)
			VALUES ($1, $2, $3, $4, 'succeeded', 'ci', $5, $5)`, uuid.Must(uuid.NewV7()), o.org, repo, target, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		query string
		want  int
	}{
		{"", 50},
		{"?limit=1", 1},
		{"?limit=50", 50},
		{"?limit=200", n},
	} {
		var items []map[string]any
		s.Must("GET", runsPath+"/runs"+tt.query, nil, o.auth, http.StatusOK).Decode(t, &items)
		if len(items) != tt.want {
			t.Errorf("GET /runs%s: %d runs, want %d", tt.query, len(items), tt.want)
		}
	}
}

func TestSpecReliabilityEnqueueDueDefaultLimit(t *testing.T) {
	t.Parallel()
	s := startRuns(t, 443)
	o := s.runsOwner("Schedulers")
	const n = 27
	for range n {
		_, target := s.reliabilityTarget(o, "https://93.184.216.34/mcp", "mcp")
		if _, err := s.Pool.Exec(context.Background(), `INSERT INTO reliability_schedules (target_id, organization_id, interval_seconds, enabled, next_due_at, updated_at)
			VALUES ($1, $2, 3600, true, now() - interval '1 minute', now())`, target, o.org); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []int{25, n - 25, 0} {
		got := s.Must("POST", runsPath+"/scheduled-scans/enqueue-due", nil, o.auth, http.StatusOK).Object(t)
		for k, v := range got {
			if f, ok := v.(float64); !ok || f != float64(int(f)) {
				t.Errorf("enqueue-due: %s is %v, want an integer", k, v)
			}
		}
		if got["enqueued"] != float64(want) {
			t.Errorf("enqueue-due without a limit: %v, want %d enqueued", got, want)
		}
	}
	if got := s.Count(`SELECT count(*) FROM reliability_runs WHERE organization_id = $1 AND trigger = 'schedule'`, o.org); got != n {
		t.Errorf("%d scheduled runs, want %d", got, n)
	}
}
