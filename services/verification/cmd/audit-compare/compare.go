package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit"
)

// verdict is a check's outcome once both auditors' statuses are put on one scale.
type verdict string

const (
	pass verdict = "pass"
	fail verdict = "fail"
	// skip means the check was not performed: ours SKIPPED (a capability the server does not
	// declare, an era it does not speak) or INFO; a suite scenario with no SUCCESS, WARNING or
	// FAILURE check, or none at all.
	skip verdict = "skip"
)

// ourVerdict normalises one of our statuses. WARNING is a pass with a note: the server answered and
// the answer is usable, but breaks a SHOULD (or a MUST the official SDK itself does not keep); the
// suite has no such grade, and grades what it accepts as SUCCESS.
func ourVerdict(s audit.Status) verdict {
	switch s {
	case audit.Success, audit.Warning:
		return pass
	case audit.Failure:
		return fail
	}
	return skip
}

// suiteCheck is one check of a suite scenario's checks.json.
type suiteCheck struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Status       string          `json:"status"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	Details      json.RawMessage `json:"details,omitempty"`
}

// suiteResultDir is the folder the suite writes for one scenario under -o:
// server-<scenario>-<ISO time with - for : and .>/checks.json.
var suiteResultDir = regexp.MustCompile(`^server-(.+)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z)$`)

// readSuiteResults reads the per-scenario results the suite wrote under dir, by scenario. A
// scenario written twice keeps its latest run. A scenario the suite could not run at all (an
// exception before any check) writes nothing, and is absent.
func readSuiteResults(dir string) (map[string][]suiteCheck, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]suiteCheck{}
	stamp := map[string]string{}
	for _, e := range entries {
		m := suiteResultDir.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		scenario, at := m[1], m[2]
		if prev, ok := stamp[scenario]; ok && prev >= at {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return nil, err
		}
		var checks []suiteCheck
		if err := json.Unmarshal(b, &checks); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Name(), err)
		}
		out[scenario], stamp[scenario] = checks, at
	}
	return out, nil
}

// pair maps one of our checks to what the suite does about the same requirement.
type pair struct {
	// Ours is our catalog id.
	Ours string
	// Scenario is the suite's scenario; Check narrows it to one of its checks ("": all of them).
	Scenario, Check string
	// Related marks a pair whose ids differ: the two probe one requirement in different ways.
	Related bool
	// Reason says, in one line, why the two are compared.
	Reason string
}

// theirs names the suite's side of p.
func (p pair) theirs() string {
	if p.Check == "" {
		return p.Scenario
	}
	return p.Scenario + " / " + p.Check
}

// pairs are the checks both auditors perform. The identical ids are those catalog.go keeps from
// the suite; the related pairs differ in id and in method, and say how.
var pairs = []pair{
	{Ours: "server-initialize", Scenario: "server-initialize",
		Reason: "same id: the initialize handshake (the suite: its SDK client connects; ours: the result validates against the schema)"},
	{Ours: "ping", Scenario: "ping", Reason: "same id: ping answers an empty result"},
	{Ours: "tools-list", Scenario: "tools-list", Reason: "same id: tools/list answers a valid result"},
	{Ours: "prompts-list", Scenario: "prompts-list", Reason: "same id: prompts/list answers a valid result"},
	{Ours: "resources-list", Scenario: "resources-list", Reason: "same id: resources/list answers a valid result"},
	{Ours: "json-schema-2020-12", Scenario: "json-schema-2020-12",
		Reason: "same id: tool schemas are JSON Schema 2020-12 (a pending scenario: run with --suite all)"},
	{Ours: "origin-rejected", Scenario: "dns-rebinding-protection", Check: "localhost-host-rebinding-rejected", Related: true,
		Reason: "related: DNS rebinding; the suite sends a foreign Host and Origin, ours a foreign Origin with the real Host"},
}

// unpaired are the suite's server scenarios that no check of ours performs, with the reason.
var unpaired = []struct{ Scenarios, Reason string }{
	{"tools-call-* (10), elicitation-sep1034-defaults, elicitation-sep1330-enums",
		"call the suite's fixture tools (test_simple_text, ...); ours calls only a tool name that cannot exist (unknown-tool-error)"},
	{"resources-read-text, resources-read-binary, resources-templates-read, resources-subscribe, resources-unsubscribe",
		"read or subscribe to fixture resources (test://...); ours never reads a resource"},
	{"prompts-get-simple, prompts-get-with-args, prompts-get-embedded-resource, prompts-get-with-image",
		"get fixture prompts; ours never gets a prompt"},
	{"completion-complete", "completes the fixture prompt test_prompt_with_arguments; ours sends no completion/complete"},
	{"logging-set-level",
		"calls logging/setLevel whatever the server declares; ours never sends it (undeclared-capability probes the list methods only)"},
	{"server-sse-polling, server-sse-multiple-streams",
		"not paired with get-stream: polling calls the fixture tool test_reconnection, multiple-streams sends three concurrent POSTs; neither sends the GET that get-stream probes"},
	{"dns-rebinding-protection / localhost-host-valid-accepted",
		"a same-host request with Origin http://<host> must be served; ours sends no Origin on its ordinary requests, so has no counterpart"},
}

// side is one auditor's result for one pair on one target.
type side struct {
	Verdict verdict
	// Status is the raw status (ours, or the suite's worst among the pair's checks).
	Status string
	// Detail is our check's details, or the suite's first error message.
	Detail string
}

// suiteSide reduces the suite's checks for p to one side: fail when any FAILURE, pass when any
// SUCCESS or WARNING, skip otherwise (INFO only, or the scenario absent).
func suiteSide(results map[string][]suiteCheck, p pair) side {
	checks, ok := results[p.Scenario]
	if !ok {
		return side{Verdict: skip, Status: "absent", Detail: "the suite wrote no result for " + p.Scenario}
	}
	s := side{Verdict: skip, Status: "INFO"}
	for _, c := range checks {
		if p.Check != "" && c.ID != p.Check {
			continue
		}
		switch c.Status {
		case "FAILURE":
			if s.Verdict != fail {
				s = side{Verdict: fail, Status: c.Status, Detail: c.ID + ": " + c.ErrorMessage}
			}
		case "SUCCESS", "WARNING":
			if s.Verdict == skip {
				s = side{Verdict: pass, Status: c.Status, Detail: c.ErrorMessage}
			}
		}
	}
	return s
}

// ourSide finds our check for p.
func ourSide(r *audit.Report, p pair) side {
	if r == nil {
		return side{Verdict: skip, Status: "absent"}
	}
	for _, c := range r.Checks {
		if c.ID == p.Ours {
			return side{Verdict: ourVerdict(c.Status), Status: string(c.Status), Detail: c.Details}
		}
	}
	return side{Verdict: skip, Status: "absent", Detail: "no such check in the report"}
}

// targetResult is what both auditors said about one target, and how long each took.
type targetResult struct {
	Name, Description  string
	OurTime, SuiteTime time.Duration
	// SuiteStart is the suite's start alone (node index.js --version), the quicker of two timed
	// just before and just after its run.
	SuiteStart time.Duration
	Report     *audit.Report
	Suite      map[string][]suiteCheck
}

// outcome is one pair on one target.
type outcome struct {
	Target       string
	Pair         pair
	Ours, Theirs side
}

// compared says whether both sides judged (pass or fail).
func (o outcome) compared() bool { return o.Ours.Verdict != skip && o.Theirs.Verdict != skip }

// agree says whether both judged alike.
func (o outcome) agree() bool { return o.compared() && o.Ours.Verdict == o.Theirs.Verdict }

// oneSided says whether exactly one side judged.
func (o outcome) oneSided() bool {
	return !o.compared() && (o.Ours.Verdict != skip || o.Theirs.Verdict != skip)
}

// compare pairs both auditors' results on one target.
func compare(t targetResult) []outcome {
	out := make([]outcome, 0, len(pairs))
	for _, p := range pairs {
		out = append(out, outcome{Target: t.Name, Pair: p, Ours: ourSide(t.Report, p), Theirs: suiteSide(t.Suite, p)})
	}
	return out
}

// summary is the report's figures.
type summary struct {
	Compared, Agreed int
	// MedianRatio is the median over targets of the suite's time over ours; MedianRatioLessStart
	// takes the suite's start (Node.js and loading the suite) off its time first.
	MedianRatio, MedianRatioLessStart float64
}

// ratio is the suite's time over ours; lessStart takes the suite's start off first.
func ratio(t targetResult, lessStart bool) float64 {
	if t.OurTime <= 0 {
		return 0
	}
	d := t.SuiteTime
	if lessStart {
		d = max(d-t.SuiteStart, 0)
	}
	return float64(d) / float64(t.OurTime)
}

// median of xs (0 for none).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// summarise computes the totals.
func summarise(results []targetResult) summary {
	var s summary
	var ratios, net []float64
	for _, t := range results {
		for _, o := range compare(t) {
			if o.compared() {
				s.Compared++
				if o.agree() {
					s.Agreed++
				}
			}
		}
		ratios = append(ratios, ratio(t, false))
		net = append(net, ratio(t, true))
	}
	s.MedianRatio, s.MedianRatioLessStart = median(ratios), median(net)
	return s
}

// header describes the run.
type header struct {
	SuiteVersion string
	SuiteArgs    string
	Started      time.Time
}

// render writes the Markdown report.
func render(w io.Writer, h header, results []targetResult) {
	s := summarise(results)
	fmt.Fprintf(w, "## The audit engine side by side with the official MCP conformance suite\n\n")
	fmt.Fprintf(w, "@modelcontextprotocol/conformance %s (`%s`), %d targets, %s.\n",
		h.SuiteVersion, h.SuiteArgs, len(results), h.Started.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "Statuses: SUCCESS and WARNING count as pass (ours: WARNING is a pass with a note), FAILURE as fail; "+
		"SKIPPED, INFO or no result mean the check was not performed and is not compared. "+
		"A suite scenario fails when any of its checks fails.\n\n")

	fmt.Fprintf(w, "Targets:\n\n")
	for _, t := range results {
		fmt.Fprintf(w, "- %s: %s\n", t.Name, trim(t.Description))
	}

	fmt.Fprintf(w, "\n### Per check\n\n")
	fmt.Fprintf(w, "| our check | the suite's | targets compared | agree | disagree | judged by one side only |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---|---|\n")
	for _, p := range pairs {
		var n, agree int
		var dis, one []string
		for _, t := range results {
			for _, o := range compare(t) {
				if o.Pair != p {
					continue
				}
				switch {
				case o.agree():
					n++
					agree++
				case o.compared():
					n++
					dis = append(dis, fmt.Sprintf("%s (ours %s, suite %s)", o.Target, o.Ours.Status, o.Theirs.Status))
				case o.oneSided():
					one = append(one, fmt.Sprintf("%s (ours %s, suite %s)", o.Target, o.Ours.Status, o.Theirs.Status))
				}
			}
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d | %d%s | %s |\n", p.Ours, p.theirs(), n, agree, len(dis), listSuffix(dis), orDash(one))
	}

	fmt.Fprintf(w, "\n### Per target\n\n")
	fmt.Fprintf(w, "| target | our verdict | shared checks agreeing | ours | the suite | its start alone | suite / ours | less its start |\n")
	fmt.Fprintf(w, "|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, t := range results {
		var n, agree int
		for _, o := range compare(t) {
			if o.compared() {
				n++
				if o.agree() {
					agree++
				}
			}
		}
		v := "-"
		if t.Report != nil {
			v = t.Report.Verdict
		}
		fmt.Fprintf(w, "| %s | %s | %d/%d | %s | %s | %s | %.1fx | %.1fx |\n", t.Name, v, agree, n,
			ms(t.OurTime), ms(t.SuiteTime), ms(t.SuiteStart), ratio(t, false), ratio(t, true))
	}

	fmt.Fprintf(w, "\n### Totals\n\n")
	rate := 0.0
	if s.Compared > 0 {
		rate = 100 * float64(s.Agreed) / float64(s.Compared)
	}
	fmt.Fprintf(w, "- agreement: %d of %d compared results (%.0f%%)\n", s.Agreed, s.Compared, rate)
	fmt.Fprintf(w, "- median time ratio (the suite's time over ours, per target): %.1fx; less the suite's start "+
		"(Node.js loading the suite, `--version`, timed around each run): %.1fx\n", s.MedianRatio, s.MedianRatioLessStart)

	fmt.Fprintf(w, "\n### Disagreements in detail\n\n")
	found := false
	for _, t := range results {
		for _, o := range compare(t) {
			if (o.compared() && !o.agree()) || o.oneSided() {
				found = true
				fmt.Fprintf(w, "- **%s**, %s vs %s: ours %s: %s; suite %s: %s\n", o.Target, o.Pair.Ours, o.Pair.theirs(),
					o.Ours.Status, trim(o.Ours.Detail), o.Theirs.Status, trim(o.Theirs.Detail))
			}
		}
	}
	if !found {
		fmt.Fprintf(w, "None.\n")
	}

	fmt.Fprintf(w, "\n### The pairs\n\n")
	for _, p := range pairs {
		fmt.Fprintf(w, "- %s vs %s: %s\n", p.Ours, p.theirs(), p.Reason)
	}
	fmt.Fprintf(w, "\nThe suite's scenarios without a counterpart:\n\n")
	for _, u := range unpaired {
		fmt.Fprintf(w, "- %s: %s\n", u.Scenarios, u.Reason)
	}
}

func listSuffix(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return ": " + strings.Join(xs, ", ")
}

func orDash(xs []string) string {
	if len(xs) == 0 {
		return "-"
	}
	return strings.Join(xs, ", ")
}

// ms formats d in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }

// trim shortens a detail to one table-safe line.
func trim(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if s == "" {
		return "(no details)"
	}
	if r := []rune(s); len(r) > 240 {
		return string(r[:240]) + "..."
	}
	return s
}
