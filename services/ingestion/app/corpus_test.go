package app_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// corpusFact is what the corpus README says one version change yields.
type corpusFact struct {
	changeType string
	codes      string // space-separated, sorted
	side       string
}

// outcome is a fact's change event status and the threshold row that decided it.
type outcome struct {
	status string
	scope  string
}

func corpusFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCorpusEndToEnd drives the fixture corpus through the service over HTTP: register, discover,
// change the document, discover again, and check facts, evidence, confidence, states, ledger rows and
// the NATS events against testdata/corpus/README.md.
func TestCorpusEndToEnd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		path        string
		contentType string
		versions    []string
		want        []corpusFact
		// rerender is a later version with the same text in other markup (no new version expected).
		rerender string
		// thresholds are source-specific rows (change type -> auto-publish, review) stored before v2.
		thresholds map[string][2]float64
		// outcomes by change type; the rest are AUTO_PUBLISHED.
		outcomes map[string]outcome
	}{
		{
			name: "imaging prior authorization (HTML)", path: "/rad-0042.html", contentType: "text/html; charset=utf-8",
			versions: []string{"imaging-prior-auth/v1.html", "imaging-prior-auth/v2.html"},
			rerender: "imaging-prior-auth/v3.html",
			// Stricter levels for this source: its criteria change (0.94) falls below review, its
			// coverage removal (0.97) between review and auto-publish.
			thresholds: map[string][2]float64{"criteria_changed": {0.99, 0.95}, "coverage_removed": {0.99, 0.9}},
			outcomes: map[string]outcome{
				"criteria_changed": {"REJECTED", "source_type"}, "coverage_removed": {"PENDING_REVIEW", "source_type"},
				"code_removed": {"AUTO_PUBLISHED", "type"}, "prior_auth_added": {"AUTO_PUBLISHED", "type"},
				"code_added": {"AUTO_PUBLISHED", "global"},
			},
			want: []corpusFact{
				{"effective_date_changed", "", "current"},
				{"code_added", "71250", "current"},
				{"prior_auth_added", "71250", "current"},
				{"code_removed", "R51.9", "previous"},
				{"coverage_removed", "R51.9", "previous"},
				{"criteria_changed", "", "current"},
			},
		},
		{
			name: "durable medical equipment (PDF)", path: "/dme-017.pdf", contentType: "application/pdf",
			versions: []string{"dme-coverage/v1.pdf", "dme-coverage/v2.pdf"},
			want: []corpusFact{
				{"effective_date_changed", "", "current"},
				{"code_added", "E10.9 E11.65 E2103", "current"},
				{"coverage_removed", "E0627", "previous"},
				{"coverage_added", "E10.9 E11.65 E2103", "current"},
				{"prior_auth_removed", "E0260", "previous"},
				{"prior_auth_added", "E2103", "current"},
				{"criteria_changed", "", "current"},
			},
		},
	}
	s := startService(t, nil)
	totalPublished := 0
	for _, tt := range tests {
		s.docs.set(tt.path, page{contentType: tt.contentType, body: corpusFile(t, tt.versions[0])})
		src := s.literalSource(tt.path, nil)
		runs := "/v1/sources/" + src["id"].(string) + "/discovery-runs"
		first := firstResource(t, s.admin("POST", runs, map[string]any{}, http.StatusCreated))
		if first["new_version"] != true || first["facts"].(float64) != 0 {
			t.Fatalf("%s v1: got %v", tt.name, first)
		}
		for changeType, levels := range tt.thresholds {
			if _, err := s.Pool.Exec(context.Background(), `INSERT INTO confidence_thresholds (source_id, change_type, auto_publish, review) VALUES ($1, $2, $3, $4)`,
				src["id"], changeType, levels[0], levels[1]); err != nil {
				t.Fatal(err)
			}
		}
		s.docs.set(tt.path, page{contentType: tt.contentType, body: corpusFile(t, tt.versions[1])})
		second := firstResource(t, s.admin("POST", runs, map[string]any{}, http.StatusCreated))
		if second["new_version"] != true {
			t.Fatalf("%s v2: got %v", tt.name, second)
		}
		pol := s.admin("GET", "/v1/policies/"+first["policy_id"].(string), nil, http.StatusOK)
		var got []corpusFact
		for _, f := range pol["facts"].([]any) {
			fact := f.(map[string]any)
			var codes []string
			for _, c := range fact["affected_codes"].([]any) {
				codes = append(codes, c.(string))
			}
			sort.Strings(codes)
			got = append(got, corpusFact{fact["change_type"].(string), strings.Join(codes, " "), fact["evidence_side"].(string)})
			ev := fact["change_event"].(map[string]any)
			if fact["status"] != "VERIFIED" {
				t.Errorf("%s: fact %v has no verified evidence", tt.name, fact["summary"])
			}
			if ev["status"] == "AUTO_PUBLISHED" {
				totalPublished++
			}
			want, ok := tt.outcomes[fact["change_type"].(string)]
			if !ok {
				want = outcome{"AUTO_PUBLISHED", ev["threshold_scope"].(string)}
			}
			if got := (outcome{ev["status"].(string), ev["threshold_scope"].(string)}); got != want {
				t.Errorf("%s: %s: got %+v, want %+v", tt.name, fact["change_type"], got, want)
			}
			t.Logf("%s: %-22s %-20s %-8s confidence %.4f %s (%s)", tt.name, fact["change_type"], strings.Join(codes, ","),
				fact["evidence_side"], ev["confidence"], ev["status"], ev["threshold_scope"])
		}
		for _, w := range tt.want {
			if !slices.Contains(got, w) {
				t.Errorf("%s: missing fact %+v in %+v", tt.name, w, got)
			}
		}
		if len(got) != len(tt.want) {
			t.Errorf("%s: got %d facts, want %d", tt.name, len(got), len(tt.want))
		}
		if tt.rerender != "" {
			s.docs.set(tt.path, page{contentType: tt.contentType, body: corpusFile(t, tt.rerender)})
			third := firstResource(t, s.admin("POST", runs, map[string]any{}, http.StatusCreated))
			if third["new_asset"] != true || third["new_version"] != false {
				t.Errorf("%s re-rendered: got %v, want a new asset and no new version", tt.name, third)
			}
		}
	}
	s.waitForPublished(totalPublished)
	for status, want := range map[string]int{"REJECTED": 1, "PENDING_REVIEW": 1, "AUTO_PUBLISHED": totalPublished} {
		if got := len(s.admin("GET", "/v1/change-events?status="+status, nil, http.StatusOK)["items"].([]any)); got != want {
			t.Errorf("change events %s: got %d, want %d", status, got, want)
		}
	}
}
