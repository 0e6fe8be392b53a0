package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
)

// The golden sample is a real run against audittest.Correct (`make audit-compare -suite-out`):
// testdata/suite-correct holds the suite's folders of the paired scenarios and one fixture-bound
// one, testdata/audit-correct.json our report of the same fixture.

func readGolden(t *testing.T) targetResult {
	t.Helper()
	suite, err := readSuiteResults("testdata/suite-correct")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/audit-correct.json")
	if err != nil {
		t.Fatal(err)
	}
	var r audit.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return targetResult{Name: "correct", Report: &r, Suite: suite, OurTime: 20 * time.Millisecond,
		SuiteTime: 1500 * time.Millisecond, SuiteStart: 500 * time.Millisecond}
}

func TestReadSuiteResults(t *testing.T) {
	g := readGolden(t)
	want := []string{"server-initialize", "ping", "tools-list", "prompts-list", "resources-list",
		"json-schema-2020-12", "dns-rebinding-protection", "tools-call-simple-text"}
	if len(g.Suite) != len(want) {
		t.Errorf("%d scenarios, want %d: %v", len(g.Suite), len(want), g.Suite)
	}
	for _, s := range want {
		if len(g.Suite[s]) == 0 {
			t.Errorf("scenario %s: no checks", s)
		}
	}
	// The scenario's checks keep their own ids, statuses and messages.
	dns := g.Suite["dns-rebinding-protection"]
	if len(dns) != 2 || dns[0].ID != "localhost-host-rebinding-rejected" || dns[0].Status != "FAILURE" ||
		!strings.Contains(dns[0].ErrorMessage, "does not match certificate's altnames") {
		t.Errorf("dns-rebinding-protection: %+v", dns)
	}
	if js := g.Suite["json-schema-2020-12"]; len(js) != 1 || js[0].ID != "json-schema-2020-12-tool-found" {
		t.Errorf("json-schema-2020-12: %+v", js)
	}
}

func TestReadSuiteResultsKeepsTheLatestRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, status string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		body := `[{"id":"ping","name":"Ping","status":"` + status + `"}]`
		if err := os.WriteFile(filepath.Join(dir, name, "checks.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("server-ping-2026-11-26T13-01-31-000Z", "SUCCESS")
	write("server-ping-2026-11-26T12-00-00-000Z", "FAILURE")
	write("not-a-result", "FAILURE")
	got, err := readSuiteResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got["ping"]) != 1 || got["ping"][0].Status != "SUCCESS" {
		t.Errorf("got %+v, want the 13:01 run of ping only", got)
	}
}

func TestCompareGolden(t *testing.T) {
	g := readGolden(t)
	type want struct {
		ours, theirs verdict
	}
	wants := map[string]want{
		"server-initialize":   {pass, pass},
		"ping":                {pass, pass},
		"tools-list":          {pass, pass},
		"prompts-list":        {skip, fail}, // Correct declares no prompts: ours skips, the suite calls and gets -32601
		"resources-list":      {skip, fail},
		"json-schema-2020-12": {pass, fail}, // the suite wants its fixture tool json_schema_2020_12_tool
		"origin-rejected":     {pass, fail}, // the suite's foreign Host fails TLS verification
	}
	out := compare(g)
	if len(out) != len(pairs) {
		t.Fatalf("%d outcomes, want %d", len(out), len(pairs))
	}
	for _, o := range out {
		w, ok := wants[o.Pair.Ours]
		if !ok {
			t.Errorf("unexpected pair %s", o.Pair.Ours)
			continue
		}
		if o.Ours.Verdict != w.ours || o.Theirs.Verdict != w.theirs {
			t.Errorf("%s: ours %s (%s), theirs %s (%s); want %s, %s", o.Pair.Ours,
				o.Ours.Verdict, o.Ours.Status, o.Theirs.Verdict, o.Theirs.Status, w.ours, w.theirs)
		}
	}
	s := summarise([]targetResult{g})
	if s.Compared != 5 || s.Agreed != 3 {
		t.Errorf("compared %d, agreed %d; want 5, 3", s.Compared, s.Agreed)
	}
	if s.MedianRatio != 75 || s.MedianRatioLessStart != 50 {
		t.Errorf("ratios %.1f, %.1f; want 75, 50", s.MedianRatio, s.MedianRatioLessStart)
	}
}

func TestSuiteSide(t *testing.T) {
	results := map[string][]suiteCheck{
		"dns-rebinding-protection": {
			{ID: "localhost-host-rebinding-rejected", Status: "SUCCESS"},
			{ID: "localhost-host-valid-accepted", Status: "FAILURE", ErrorMessage: "got 403"},
		},
		"server-sse-multiple-streams": {{ID: "server-sse-streams-functional", Status: "INFO"}},
		"json-schema-2020-12": {
			{ID: "json-schema-2020-12-tool-found", Status: "SUCCESS"},
			{ID: "json-schema-2020-12-$defs", Status: "FAILURE", ErrorMessage: "$defs field missing"},
			{ID: "json-schema-2020-12-additionalProperties", Status: "FAILURE", ErrorMessage: "second"},
		},
		"ping": {{ID: "ping", Status: "WARNING"}},
	}
	for _, tc := range []struct {
		p      pair
		want   verdict
		detail string
	}{
		// Narrowed to one check, the other check's failure does not count.
		{pair{Scenario: "dns-rebinding-protection", Check: "localhost-host-rebinding-rejected"}, pass, ""},
		{pair{Scenario: "dns-rebinding-protection"}, fail, "localhost-host-valid-accepted: got 403"},
		// The first failure names the scenario's failure.
		{pair{Scenario: "json-schema-2020-12"}, fail, "json-schema-2020-12-$defs: $defs field missing"},
		{pair{Scenario: "server-sse-multiple-streams"}, skip, ""},
		{pair{Scenario: "ping"}, pass, ""},
		{pair{Scenario: "tools-list"}, skip, "the suite wrote no result for tools-list"},
	} {
		got := suiteSide(results, tc.p)
		if got.Verdict != tc.want || got.Detail != tc.detail {
			t.Errorf("%s: %+v, want %s %q", tc.p.theirs(), got, tc.want, tc.detail)
		}
	}
}

func TestOurVerdict(t *testing.T) {
	for s, want := range map[audit.Status]verdict{
		audit.Success: pass, audit.Warning: pass, audit.Failure: fail, audit.Skipped: skip, audit.Info: skip,
	} {
		if got := ourVerdict(s); got != want {
			t.Errorf("%s: %s, want %s", s, got, want)
		}
	}
}

// Every pair names a check of our catalog.
func TestPairsNameCatalogChecks(t *testing.T) {
	for _, p := range pairs {
		found := false
		for _, d := range audit.Catalog {
			found = found || d.ID == p.Ours
		}
		if !found {
			t.Errorf("pair %s: no such check in audit.Catalog", p.Ours)
		}
		if !p.Related && p.Ours != p.Scenario {
			t.Errorf("pair %s: ids differ but the pair is not marked related", p.Ours)
		}
	}
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

func TestRender(t *testing.T) {
	g := readGolden(t)
	var b bytes.Buffer
	render(&b, header{SuiteVersion: "0.1.16", SuiteArgs: "server --suite all"}, []targetResult{g})
	out := b.String()
	for _, want := range []string{
		"| json-schema-2020-12 | json-schema-2020-12 | 1 | 0 | 1: correct (ours SUCCESS, suite FAILURE) | - |",
		"| prompts-list | prompts-list | 0 | 0 | 0 | correct (ours SKIPPED, suite FAILURE) |",
		"| server-initialize | server-initialize | 1 | 1 | 0 | - |",
		"| correct | pass | 3/5 | 20 ms | 1500 ms | 500 ms | 75.0x | 50.0x |",
		"- agreement: 3 of 5 compared results (60%)",
		"Tool 'json_schema_2020_12_tool' not found",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}
