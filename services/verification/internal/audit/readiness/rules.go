package readiness

import (
	"crypto/tls"
	"time"
)

// Severity grades how much a rule matters.
type Severity string

// Severities, most severe first.
const (
	Critical Severity = "critical"
	High     Severity = "high"
	Medium   Severity = "medium"
	Low      Severity = "low"
)

// Weight is the score a rule of this severity costs by default; 0 for an unknown severity.
func (s Severity) Weight() int {
	switch s {
	case Critical:
		return WeightCritical
	case High:
		return WeightHigh
	case Medium:
		return WeightMedium
	case Low:
		return WeightLow
	}
	return 0
}

// Known reports whether s is one of the four severities.
func (s Severity) Known() bool { return s.Weight() > 0 }

func (s Severity) rank() int {
	switch s {
	case Critical:
		return 0
	case High:
		return 1
	case Medium:
		return 2
	case Low:
		return 3
	}
	return 4
}

// Thresholds: the numbers the score, the verdict and the rules turn on.
const (
	// MaxScore is the score of a server no rule fires on.
	MaxScore = 100
	// ReadyScore is the lowest score that can be production ready (with no critical finding).
	ReadyScore = 70

	WeightCritical = 25
	WeightHigh     = 10
	WeightMedium   = 5
	WeightLow      = 2

	// VagueMinChars and VagueMinWords: a shorter description cannot say what a tool does, what
	// it needs and what it returns, which is what a model picks tools by.
	VagueMinChars = 20
	VagueMinWords = 4

	// MaxTools: models choose measurably worse among many similar tools, every listed tool costs
	// context on every turn, and several clients cap or truncate the tools they expose (at 40 or
	// a little above); a server above that should split or trim its surface.
	MaxTools = 40

	// LatencyBudget is the p95 above which a method is too slow for an agent's interactive loop,
	// judged with at least MinLatencySamples samples (fewer cannot tell a p95 from a fluke).
	LatencyBudget     = time.Second
	LatencyPercentile = 95
	MinLatencySamples = 3

	// MinTLSVersion: TLS 1.0 and 1.1 are deprecated (RFC 8996).
	MinTLSVersion = tls.VersionTLS12
	// CertExpiryWindow: a certificate closer than this to expiry is a renewal that has failed or
	// is not automated.
	CertExpiryWindow = 14 * 24 * time.Hour

	// MinProtocolVersion is the oldest MCP revision not considered outdated: 2025-06-18 brought
	// structured tool output, elicitation and the OAuth resource-server rules.
	MinProtocolVersion = "2025-06-18"

	// maxEvidence bounds the evidence one rule gives per tool (or per text), so that a huge
	// schema yields a readable report; the last piece says how many were left out.
	maxEvidence = 10
)

// Rule is one readiness rule.
type Rule struct {
	ID          string
	Name        string
	Severity    Severity
	Weight      int
	Remediation string
	// Check returns the evidence that the rule is broken; none means it passed.
	Check func(Input) []Evidence
}

// Evidence is one observation that breaks a rule. Tool is the tool it concerns ("" for the
// server as a whole, or for a prompt or resource, which Detail then names); Detail never holds
// hidden or control characters raw.
type Evidence struct {
	Tool   string
	Detail string
}

// Rules are the readiness rules, in report order. Their ids are stable: reports, dashboards and
// tests refer to them.
var Rules = []Rule{
	{
		ID: "description-missing", Name: "Tool without a description", Severity: High, Weight: WeightHigh,
		Remediation: "Describe every tool: what it does, when to use it, what it needs and what it returns. Models choose tools by their descriptions.",
		Check:       checkDescriptionMissing,
	},
	{
		ID: "description-vague", Name: "Vague tool description", Severity: Medium, Weight: WeightMedium,
		Remediation: "Write at least one full sentence that says what the tool does and when to use it; avoid placeholders such as \"helper\" or \"does stuff\".",
		Check:       checkDescriptionVague,
	},
	{
		ID: "description-hidden-instructions", Name: "Hidden characters or markup in model-facing text", Severity: Critical, Weight: WeightCritical,
		Remediation: "Remove invisible, bidirectional, control and tag characters, ANSI escapes, HTML comments and <IMPORTANT>/<SYSTEM>-style tags from names, titles and descriptions: text a user cannot see must not reach the model.",
		Check:       checkHiddenInstructions,
	},
	{
		ID: "description-imperative-instructions", Name: "Instructions aimed at the model", Severity: High, Weight: WeightHigh,
		Remediation: "Describe the tool instead of instructing the model: remove phrases that override instructions, demand the tool be called, or ask to keep things from the user.",
		Check:       checkImperativeInstructions,
	},
	{
		ID: "destructive-without-hint", Name: "Destructive tool not marked destructive", Severity: High, Weight: WeightHigh,
		Remediation: "Set annotations.destructiveHint to true (and readOnlyHint to false) on tools that delete, overwrite or terminate, so clients ask before calling them.",
		Check:       checkDestructiveWithoutHint,
	},
	{
		ID: "read-only-without-hint", Name: "Read-only tool not marked read-only", Severity: Low, Weight: WeightLow,
		Remediation: "Set annotations.readOnlyHint to true on tools that only read, so clients can call them without asking.",
		Check:       checkReadOnlyWithoutHint,
	},
	{
		ID: "annotation-contradiction", Name: "Contradictory annotations", Severity: High, Weight: WeightHigh,
		Remediation: "A tool cannot be both read-only and destructive: fix readOnlyHint or destructiveHint.",
		Check:       checkAnnotationContradiction,
	},
	{
		ID: "input-schema-untyped", Name: "Untyped input schema", Severity: Medium, Weight: WeightMedium,
		Remediation: "Give every tool an inputSchema of type \"object\" and every property a type (or $ref, anyOf, oneOf, allOf, enum or const).",
		Check:       checkInputSchemaUntyped,
	},
	{
		ID: "input-schema-unbounded", Name: "Unbounded input parameters", Severity: Low, Weight: WeightLow,
		Remediation: "Bound parameters: maxLength, pattern, format or enum on strings, minimum and maximum on numbers, maxItems on arrays.",
		Check:       checkInputSchemaUnbounded,
	},
	{
		ID: "input-schema-required-missing", Name: "Input schema without a required list", Severity: Low, Weight: WeightLow,
		Remediation: "List the parameters a call needs in \"required\" (an empty list if none are), so models do not guess.",
		Check:       checkInputSchemaRequiredMissing,
	},
	{
		ID: "input-schema-open", Name: "Input schema accepts any extra property", Severity: Medium, Weight: WeightMedium,
		Remediation: "Set \"additionalProperties\": false at the top of the input schema, so misspelt or invented arguments are rejected instead of ignored.",
		Check:       checkInputSchemaOpen,
	},
	{
		ID: "output-schema-missing", Name: "Tool without an output schema", Severity: Low, Weight: WeightLow,
		Remediation: "Declare an outputSchema and return structuredContent, so clients and models can rely on the result's shape.",
		Check:       checkOutputSchemaMissing,
	},
	{
		ID: "tool-name-overlap", Name: "Tool names that collide or shadow common tools", Severity: Medium, Weight: WeightMedium,
		Remediation: "Give tools distinct names that do not differ only in case or separators, and prefix names that match common tools of popular servers (read_file, bash, fetch, …) with your server's domain.",
		Check:       checkToolNameOverlap,
	},
	{
		ID: "too-many-tools", Name: "Too many tools", Severity: Medium, Weight: WeightMedium,
		Remediation: "Offer at most 40 tools: merge similar ones, or split the server by task.",
		Check:       checkTooManyTools,
	},
	{
		ID: "error-contract", Name: "Unknown tool not answered with a proper error", Severity: High, Weight: WeightHigh,
		Remediation: "Answer tools/call of an unknown tool with a JSON-RPC error (-32602) or a CallToolResult with isError true, with an HTTP status below 500.",
		Check:       checkErrorContract,
	},
	{
		ID: "latency-initialize", Name: "Slow initialize", Severity: Medium, Weight: WeightMedium,
		Remediation: "Answer initialize within a second at the 95th percentile: defer expensive start-up work until it is needed.",
		Check:       checkLatencyInitialize,
	},
	{
		ID: "latency-tools-list", Name: "Slow tools/list", Severity: Medium, Weight: WeightMedium,
		Remediation: "Answer tools/list within a second at the 95th percentile: build the list once and cache it.",
		Check:       checkLatencyToolsList,
	},
	{
		ID: "tls-version", Name: "Outdated TLS version", Severity: Critical, Weight: WeightCritical,
		Remediation: "Accept TLS 1.2 or later only (TLS 1.3 preferred); TLS 1.0 and 1.1 are deprecated.",
		Check:       checkTLSVersion,
	},
	{
		ID: "tls-certificate-expiry", Name: "TLS certificate about to expire", Severity: Medium, Weight: WeightMedium,
		Remediation: "Renew the certificate and automate renewal (ACME) well before expiry.",
		Check:       checkCertificateExpiry,
	},
	{
		ID: "http-hygiene", Name: "HTTP security headers", Severity: Low, Weight: WeightLow,
		Remediation: "Send Strict-Transport-Security, do not combine Access-Control-Allow-Origin: * with credentials, and drop version details from Server and X-Powered-By.",
		Check:       checkHTTPHygiene,
	},
	{
		ID: "protocol-version-outdated", Name: "Outdated MCP protocol version", Severity: Medium, Weight: WeightMedium,
		Remediation: "Support MCP 2025-06-18 or later: upgrade the server's MCP SDK.",
		Check:       checkProtocolVersion,
	},
	{
		ID: "no-tools", Name: "No tools", Severity: High, Weight: WeightHigh,
		Remediation: "List at least one tool, or check that tools/list is not filtered for the audit's credentials.",
		Check:       checkNoTools,
	},
	{
		ID: "surface-unavailable", Name: "Tools could not be listed", Severity: Critical, Weight: WeightCritical,
		Remediation: "Make initialize and tools/list succeed for an authorised client; see the audit's era results for the failing step.",
		Check:       checkSurfaceUnavailable,
	},
}
