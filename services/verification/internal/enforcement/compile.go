package enforcement

import (
	"fmt"
	"net/url"
	"strings"
)

// ContentFormat names the layout of a snapshot's content.
const ContentFormat = "enforcement-snapshot/v1"

// Content is a compiled version: every field is always written (no omitempty but for a missing
// readiness score), and no id or time is in it, so that compiling the same rules over unchanged
// intelligence gives the same canonical JSON and the same SHA-256.
type Content struct {
	Format      string           `json:"format"`
	RulesSHA256 string           `json:"rules_sha256"`
	Pinned      bool             `json:"pinned"`
	Servers     []ServerDecision `json:"servers"`
}

// ServerDecision is one server at its current snapshot.
type ServerDecision struct {
	Server         string            `json:"server"`
	Version        string            `json:"version"`
	Status         string            `json:"status"`
	RegistrySHA256 string            `json:"registry_sha256"`
	ChangeRisk     string            `json:"change_risk"`
	Decision       string            `json:"decision"`
	Rule           string            `json:"rule"`
	Remotes        []RemoteDecision  `json:"remotes"`
	Packages       []PackageDecision `json:"packages"`
}

// RemoteDecision is one remote of a server.
type RemoteDecision struct {
	Type           string         `json:"type"`
	URL            string         `json:"url"`
	Host           string         `json:"host"`
	Decision       string         `json:"decision"`
	Rule           string         `json:"rule"`
	AuditVerdict   string         `json:"audit_verdict"`
	ReadinessScore *int           `json:"readiness_score,omitempty"`
	ToolsListed    bool           `json:"tools_listed"`
	Tools          []ToolDecision `json:"tools"`
}

// PackageDecision is one package of a server.
type PackageDecision struct {
	RegistryType string `json:"registry_type"`
	Identifier   string `json:"identifier"`
	Version      string `json:"version"`
	Transport    string `json:"transport"`
	Decision     string `json:"decision"`
	Rule         string `json:"rule"`
}

// ToolDecision is one tool of a remote, with the hashes of its audited definition.
type ToolDecision struct {
	Name               string `json:"name"`
	Decision           string `json:"decision"`
	Rule               string `json:"rule"`
	DescriptionSHA256  string `json:"description_sha256"`
	InputSchemaSHA256  string `json:"input_schema_sha256"`
	OutputSchemaSHA256 string `json:"output_schema_sha256"`
	AnnotationsSHA256  string `json:"annotations_sha256"`
}

// Summary counts a snapshot's decisions.
type Summary struct {
	ServersAllowed, ServersDenied, ToolsAllowed, ToolsDenied int
}

// Summarize counts c's decisions.
func (c Content) Summarize() Summary {
	var s Summary
	for _, srv := range c.Servers {
		if srv.Decision == Allow {
			s.ServersAllowed++
		} else {
			s.ServersDenied++
		}
		for _, r := range srv.Remotes {
			for _, t := range r.Tools {
				if t.Decision == Allow {
					s.ToolsAllowed++
				} else {
					s.ToolsDenied++
				}
			}
		}
	}
	return s
}

// Compile decides every server of servers (sorted by Key), with the audits of their remote URLs, by
// rules (normalized), whose canonical JSON hashes to rulesSHA256. It is a pure function of its
// arguments.
func Compile(rules Rules, rulesSHA256 string, servers []ServerInput, audits map[string]AuditInput) Content {
	c := Content{Format: ContentFormat, RulesSHA256: rulesSHA256, Pinned: rules.PinTools, Servers: make([]ServerDecision, 0, len(servers))}
	for _, s := range servers {
		c.Servers = append(c.Servers, compileServer(rules, s, audits))
	}
	return c
}

func compileServer(r Rules, s ServerInput, audits map[string]AuditInput) ServerDecision {
	d := ServerDecision{
		Server: s.Key, Version: s.Version, Status: s.Status, RegistrySHA256: s.ContentHash, ChangeRisk: s.ChangeRisk,
		Remotes: make([]RemoteDecision, 0, len(s.Remotes)), Packages: make([]PackageDecision, 0, len(s.Packages)),
	}
	// The server as a whole, first deny first.
	d.Decision, d.Rule = serverRule(r, s)
	for _, rem := range s.Remotes {
		d.Remotes = append(d.Remotes, compileRemote(r, s.Key, rem, audits[rem.URL], d.Decision == Allow))
	}
	for _, pkg := range s.Packages {
		pd := PackageDecision{RegistryType: pkg.RegistryType, Identifier: pkg.Identifier, Version: pkg.Version, Transport: pkg.Transport,
			Decision: Deny, Rule: "server"}
		if d.Decision == Allow {
			pd.Decision, pd.Rule = Allow, d.Rule
			if !transportAllowed(r, pkg.Transport) {
				pd.Decision, pd.Rule = Deny, "transports"
			}
		}
		d.Packages = append(d.Packages, pd)
	}
	if d.Decision != Allow {
		return d
	}
	// An allowed server needs one allowed way in; else the first refusal names why it has none.
	firstDenied := ""
	for _, rd := range d.Remotes {
		if rd.Decision == Allow {
			return d
		}
		if firstDenied == "" {
			firstDenied = rd.Rule
		}
	}
	for _, pd := range d.Packages {
		if pd.Decision == Allow {
			return d
		}
		if firstDenied == "" {
			firstDenied = pd.Rule
		}
	}
	if firstDenied == "" {
		firstDenied = "no_transport"
	}
	d.Decision, d.Rule = Deny, firstDenied
	return d
}

// The names of the indexed rules, made once: a compile names one for most of its decisions, and
// formatting them each time was a third of BenchmarkCompile's allocations.
var (
	serversAllowRules = indexed("servers.allow", maxPatterns)
	serversDenyRules  = indexed("servers.deny", maxPatterns)
	hostsDenyRules    = indexed("remote_hosts.deny", maxPatterns)
	toolsAllowRules   = indexed("tools.names.allow", maxPatterns)
	toolsDenyRules    = indexed("tools.names.deny", maxPatterns)
	annotationRules   = indexed("tools.deny_annotations", maxAnnotationRules)
	approvedRules     = indexed("tools.approved", maxApproved)
)

func indexed(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s[%d]", prefix, i)
	}
	return out
}

// serverRule decides a server by its status, name and change risk.
func serverRule(r Rules, s ServerInput) (string, string) {
	switch {
	case s.Status == "deleted":
		return Deny, "status.deleted"
	case s.Status == "deprecated" && !r.AllowDeprecated:
		return Deny, "status.deprecated"
	}
	if i := firstMatch(r.Servers.Deny, s.Key); i >= 0 {
		return Deny, serversDenyRules[i]
	}
	rule := "default_action"
	if i := firstMatch(r.Servers.Allow, s.Key); i >= 0 {
		rule = serversAllowRules[i]
	} else if r.DefaultAction != Allow {
		return Deny, rule
	}
	if r.MaxChangeRisk != "" && riskRank[s.ChangeRisk] > riskRank[r.MaxChangeRisk] {
		return Deny, "max_change_risk"
	}
	return Allow, rule
}

func transportAllowed(r Rules, t string) bool {
	if len(r.Transports) == 0 {
		return true
	}
	for _, allowed := range r.Transports {
		if allowed == t {
			return true
		}
	}
	return false
}

// remoteHost is a remote URL's host in lower case, without port; "" when the URL has none.
func remoteHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

func compileRemote(r Rules, server string, rem RemoteInput, a AuditInput, serverAllowed bool) RemoteDecision {
	d := RemoteDecision{Type: rem.Type, URL: rem.URL, Host: remoteHost(rem.URL), AuditVerdict: a.Verdict, ReadinessScore: a.Score,
		ToolsListed: a.Listed, Tools: make([]ToolDecision, 0, len(a.Tools))}
	d.Decision, d.Rule = remoteRule(r, d, a, serverAllowed)
	for _, t := range a.Tools {
		td := ToolDecision{Name: t.Name, DescriptionSHA256: t.DescriptionSHA256, InputSchemaSHA256: t.InputSchemaSHA256,
			OutputSchemaSHA256: t.OutputSchemaSHA256, AnnotationsSHA256: t.AnnotationsSHA256}
		if d.Decision != Allow {
			td.Decision, td.Rule = Deny, "remote"
		} else {
			td.Decision, td.Rule = toolRule(r, server, t)
		}
		d.Tools = append(d.Tools, td)
	}
	return d
}

func remoteRule(r Rules, d RemoteDecision, a AuditInput, serverAllowed bool) (string, string) {
	if !serverAllowed {
		return Deny, "server"
	}
	if !transportAllowed(r, d.Type) {
		return Deny, "transports"
	}
	if i := firstMatch(r.RemoteHosts.Deny, d.Host); i >= 0 || d.Host == "" {
		if d.Host == "" {
			return Deny, "remote_hosts"
		}
		return Deny, hostsDenyRules[i]
	}
	if len(r.RemoteHosts.Allow) > 0 && firstMatch(r.RemoteHosts.Allow, d.Host) < 0 {
		return Deny, "remote_hosts.allow"
	}
	if r.Audit.Require && a.Verdict == "" && a.Score == nil {
		return Deny, "audit.require"
	}
	if r.Audit.MinVerdict != "" && verdictRank[a.Verdict] < verdictRank[r.Audit.MinVerdict] {
		return Deny, "audit.min_verdict"
	}
	if r.Audit.MinReadinessScore > 0 && (a.Score == nil || *a.Score < r.Audit.MinReadinessScore) {
		return Deny, "audit.min_readiness_score"
	}
	return Allow, "remote"
}

// toolRule decides one tool of an allowed remote: a name deny, then the annotation rules (unless
// approved), then the name allow list.
func toolRule(r Rules, server string, t ToolInput) (string, string) {
	// "{namespace}/{name}/{tool}", made only when a rule needs it (most tools meet none that does).
	var fullName string
	full := func() string {
		if fullName == "" {
			fullName = server + "/" + t.Name
		}
		return fullName
	}
	name := func(patterns []string) int {
		for i, p := range patterns {
			subject := t.Name
			if strings.Contains(p, "/") {
				subject = full()
			}
			if Match(p, subject) {
				return i
			}
		}
		return -1
	}
	if i := name(r.Tools.Names.Deny); i >= 0 {
		return Deny, toolsDenyRules[i]
	}
	approvedRule := ""
	for i, a := range r.Tools.DenyAnnotations {
		if hint(t.Annotations, a.Annotation) != a.Value {
			continue
		}
		j := firstMatch(r.Tools.Approved, full())
		if j < 0 {
			return Deny, annotationRules[i]
		}
		approvedRule = approvedRules[j]
	}
	allowRule := "default"
	if len(r.Tools.Names.Allow) > 0 {
		i := name(r.Tools.Names.Allow)
		if i < 0 {
			return Deny, "tools.names.allow"
		}
		allowRule = toolsAllowRules[i]
	}
	if approvedRule != "" {
		return Allow, approvedRule
	}
	return Allow, allowRule
}

// hint is a tool annotation's value, with MCP's defaults (schema 2025-06-18, ToolAnnotations) when
// it is absent or not a boolean: readOnlyHint false; destructiveHint true and idempotentHint false,
// both meaningful only when readOnlyHint is false (a read-only tool is neither destructive nor
// counted idempotent here); openWorldHint true. Any other annotation is false unless it is the
// boolean true.
func hint(annotations map[string]any, name string) bool {
	b := func(key string) (bool, bool) {
		v, ok := annotations[key].(bool)
		return v, ok
	}
	readOnly, _ := b("readOnlyHint")
	switch name {
	case "readOnlyHint":
		return readOnly
	case "destructiveHint":
		if readOnly {
			return false
		}
		if v, ok := b(name); ok {
			return v
		}
		return true
	case "idempotentHint":
		if readOnly {
			return false
		}
		v, _ := b(name)
		return v
	case "openWorldHint":
		if v, ok := b(name); ok {
			return v
		}
		return true
	}
	v, _ := b(name)
	return v
}
