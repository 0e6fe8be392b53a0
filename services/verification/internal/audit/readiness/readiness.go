// Package readiness grades an MCP server's fitness for production from what an audit observed.
//
// The grade is data-driven: Rules lists every rule with its id, severity, weight and remediation,
// and a check that turns an Input into evidence. A rule that produces at least one piece of
// evidence "fires"; each piece becomes a Finding.
//
// Score and verdict:
//
//	score            = max(0, 100 − Σ weight of every rule that fired)
//	production_ready = score ≥ ReadyScore (70) and no critical rule fired
//
// A rule costs its weight once however many findings it has, so a server with 50 vague
// descriptions is not graded below one that has a single critical problem. Weights follow the
// severity (critical 25, high 10, medium 5, low 2): one critical finding alone keeps a server
// out of production, while it takes four high ones (or a mix) to fall below the threshold.
//
// Latency percentiles use the nearest-rank method (the smallest sample with at least p% of the
// samples at or below it), which never interpolates a latency that was not observed and is
// well defined for the handful of samples an audit takes.
package readiness

import (
	"cmp"
	"net/http"
	"slices"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// Input is what the audit observed.
type Input struct {
	Listing surface.Listing
	// Listed is whether tools/list answered; false makes every surface rule moot.
	Listed          bool
	ProtocolVersion string
	// Server is what initialize (or server/discover) said about the server.
	Server            ServerText
	InitializeLatency []time.Duration
	ToolsListLatency  []time.Duration
	UnknownTool       ErrorContract
	TLS               TLSInfo
	// Headers are the HTTP response headers of initialize; nil when none were observed, which
	// skips the HTTP hygiene rule rather than blaming the server for every header.
	Headers http.Header
	// Now dates certificate expiry; zero means the time of Evaluate.
	Now time.Time
}

// ServerText is the server's free text: it reaches the model as tool descriptions do, so it is
// screened for hidden and injected instructions too.
type ServerText struct {
	Title        string
	Description  string
	Instructions string
}

// ErrorContract is how the server answered tools/call of a tool that does not exist.
type ErrorContract struct {
	Probed       bool
	HTTPStatus   int
	JSONRPCError bool
	ToolError    bool
	Detail       string
	// NonJSON is set when the answer's body was not JSON at all.
	NonJSON bool
}

// TLSInfo is the target's TLS connection.
type TLSInfo struct {
	// Version is a crypto/tls version constant; 0 when unknown.
	Version      uint16
	CertNotAfter time.Time
}

// Result is the grade. It is embedded in the audit report, so its JSON names are top-level
// report fields.
type Result struct {
	Score           int  `json:"score"`
	ProductionReady bool `json:"production_ready"`
	// Findings are sorted by severity, then rule (in Rules order), then tool.
	Findings []Finding    `json:"findings"`
	Rules    []RuleResult `json:"rules"`
	Latency  Latency      `json:"latency"`
}

// Finding is one piece of evidence against one rule.
type Finding struct {
	Rule        string   `json:"rule"`
	Name        string   `json:"name"`
	Severity    Severity `json:"severity"`
	Tool        string   `json:"tool,omitempty"`
	Evidence    string   `json:"evidence"`
	Remediation string   `json:"remediation"`
}

// RuleResult is one rule's outcome.
type RuleResult struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Severity Severity `json:"severity"`
	Weight   int      `json:"weight"`
	Passed   bool     `json:"passed"`
	Findings int      `json:"findings"`
}

// Latency summarises the timed requests.
type Latency struct {
	Initialize LatencyStats `json:"initialize"`
	ToolsList  LatencyStats `json:"tools_list"`
}

// LatencyStats are nearest-rank percentiles in milliseconds; zero without samples.
type LatencyStats struct {
	Samples int     `json:"samples"`
	P50MS   float64 `json:"p50_ms"`
	P95MS   float64 `json:"p95_ms"`
}

// Evaluate grades in against Rules.
func Evaluate(in Input) Result {
	if in.Now.IsZero() {
		in.Now = time.Now()
	}
	res := Result{
		Findings: []Finding{},
		Rules:    make([]RuleResult, 0, len(Rules)),
		Latency: Latency{
			Initialize: stats(in.InitializeLatency),
			ToolsList:  stats(in.ToolsListLatency),
		},
	}
	order := map[string]int{}
	penalty, critical := 0, false
	for i, r := range Rules {
		order[r.ID] = i
		ev := r.Check(in)
		res.Rules = append(res.Rules, RuleResult{
			ID: r.ID, Name: r.Name, Severity: r.Severity, Weight: r.Weight,
			Passed: len(ev) == 0, Findings: len(ev),
		})
		if len(ev) == 0 {
			continue
		}
		penalty += r.Weight
		critical = critical || r.Severity == Critical
		for _, e := range ev {
			res.Findings = append(res.Findings, Finding{
				Rule: r.ID, Name: r.Name, Severity: r.Severity, Tool: e.Tool,
				Evidence: e.Detail, Remediation: r.Remediation,
			})
		}
	}
	slices.SortStableFunc(res.Findings, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(a.Severity.rank(), b.Severity.rank()),
			cmp.Compare(order[a.Rule], order[b.Rule]),
			cmp.Compare(a.Tool, b.Tool),
		)
	})
	res.Score = max(0, MaxScore-penalty)
	res.ProductionReady = res.Score >= ReadyScore && !critical
	return res
}
