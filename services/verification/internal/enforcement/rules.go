package enforcement

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
)

// Actions and decisions.
const (
	Allow = "allow"
	Deny  = "deny"
)

// Bounds of a version's rules: a version is read on every compile, so it stays small.
const (
	maxPatterns        = 200
	maxPatternLength   = 256
	maxApproved        = 500
	maxAnnotationRules = 20
	maxAnnotationName  = 64
	maxName            = 200
	maxText            = 2000
)

// Rules is what a policy version says. JSON names are the API's; every field is always written, so
// that the canonical JSON of equal rules is equal.
type Rules struct {
	DefaultAction   string     `json:"default_action"`
	Servers         Patterns   `json:"servers"`
	MaxChangeRisk   string     `json:"max_change_risk"`
	AllowDeprecated bool       `json:"allow_deprecated"`
	Transports      []string   `json:"transports"`
	RemoteHosts     Patterns   `json:"remote_hosts"`
	Audit           AuditRules `json:"audit"`
	Tools           ToolRules  `json:"tools"`
	PinTools        bool       `json:"pin_tools"`
}

// Patterns allow and deny by glob ('*' matches any run of characters other than '/').
type Patterns struct {
	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`
}

// AuditRules decide a remote by the latest audits of its URL.
type AuditRules struct {
	Require           bool   `json:"require"`
	MinVerdict        string `json:"min_verdict"`
	MinReadinessScore int    `json:"min_readiness_score"`
}

// ToolRules decide each tool of an allowed remote.
type ToolRules struct {
	Names           Patterns         `json:"names"`
	DenyAnnotations []AnnotationRule `json:"deny_annotations"`
	Approved        []string         `json:"approved"`
}

// AnnotationRule denies a tool whose annotation (MCP's default when absent) has Value.
type AnnotationRule struct {
	Annotation string `json:"annotation"`
	Value      bool   `json:"value"`
}

// Transports a server may offer.
var knownTransports = map[string]bool{"stdio": true, "streamable-http": true, "sse": true}

// riskRank orders change risks; "" (no change) is below every risk.
var riskRank = map[string]int{"": 0, "low": 1, "medium": 2, "high": 3}

// verdictRank orders conformance verdicts; "" (no audit) is below every verdict.
var verdictRank = map[string]int{"": 0, "fail": 1, "warn": 2, "pass": 3}

// problems collects the invalid fields of a body.
type problems []fault.Problem

func (p *problems) add(field, format string, args ...any) {
	*p = append(*p, fault.Problem{Field: field, Type: "value_error", Message: fmt.Sprintf(format, args...)})
}

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &fault.ValidationError{Problems: p}
}

// Normalize checks r, whose fields sit at field in the body ("rules"), and returns it with defaults
// filled in and nil lists made empty.
func (r Rules) Normalize(field string) (Rules, error) {
	var p problems
	r = r.normalize(&p, field)
	return r, p.err()
}

// normalize is Normalize, adding what is wrong to p.
func (r Rules) normalize(p *problems, field string) Rules {
	at := func(name string) string { return field + "." + name }
	switch r.DefaultAction {
	case "":
		r.DefaultAction = Deny
	case Allow, Deny:
	default:
		p.add(at("default_action"), "default_action must be allow or deny")
	}
	if _, ok := riskRank[r.MaxChangeRisk]; !ok {
		p.add(at("max_change_risk"), "max_change_risk must be low, medium or high (or empty: no rule)")
	}
	r.Servers = r.Servers.check(p, at("servers"), serverPattern)
	r.Transports = nonNil(r.Transports)
	if len(r.Transports) > len(knownTransports) {
		p.add(at("transports"), "at most %d transports", len(knownTransports))
	}
	for i, t := range r.Transports {
		if !knownTransports[t] {
			p.add(fmt.Sprintf("%s.%d", at("transports"), i), "transport must be stdio, streamable-http or sse")
		}
	}
	r.RemoteHosts = r.RemoteHosts.check(p, at("remote_hosts"), hostPattern)
	if _, ok := verdictRank[r.Audit.MinVerdict]; !ok {
		p.add(at("audit.min_verdict"), "min_verdict must be pass, warn or fail (or empty: no rule)")
	}
	if r.Audit.MinReadinessScore < 0 || r.Audit.MinReadinessScore > 100 {
		p.add(at("audit.min_readiness_score"), "min_readiness_score must be between 0 and 100")
	}
	r.Tools.Names = r.Tools.Names.check(p, at("tools.names"), toolPattern)
	r.Tools.DenyAnnotations = nonNil(r.Tools.DenyAnnotations)
	if len(r.Tools.DenyAnnotations) > maxAnnotationRules {
		p.add(at("tools.deny_annotations"), "at most %d annotation rules", maxAnnotationRules)
	}
	for i, a := range r.Tools.DenyAnnotations {
		if a.Annotation == "" || len(a.Annotation) > maxAnnotationName || strings.IndexFunc(a.Annotation, notWord) >= 0 {
			p.add(fmt.Sprintf("%s.%d.annotation", at("tools.deny_annotations"), i),
				"annotation must be 1..%d letters, digits or '_'", maxAnnotationName)
		}
	}
	r.Tools.Approved = nonNil(r.Tools.Approved)
	if len(r.Tools.Approved) > maxApproved {
		p.add(at("tools.approved"), "at most %d approved tools", maxApproved)
	}
	for i, a := range r.Tools.Approved {
		if msg := toolPattern(a); msg != "" || strings.Count(a, "/") != 2 {
			p.add(fmt.Sprintf("%s.%d", at("tools.approved"), i), "an approved tool is {namespace}/{name}/{tool} (globs allowed)")
		}
	}
	return r
}

// check validates the patterns at field with valid (which returns what is wrong, "" when nothing).
func (ps Patterns) check(p *problems, field string, valid func(string) string) Patterns {
	ps.Allow, ps.Deny = nonNil(ps.Allow), nonNil(ps.Deny)
	for _, named := range []struct {
		name string
		list []string
	}{{"allow", ps.Allow}, {"deny", ps.Deny}} {
		name, list := named.name, named.list
		if len(list) > maxPatterns {
			p.add(field+"."+name, "at most %d patterns", maxPatterns)
			continue
		}
		for i, pattern := range list {
			if msg := valid(pattern); msg != "" {
				p.add(fmt.Sprintf("%s.%s.%d", field, name, i), "%s", msg)
			}
		}
	}
	return ps
}

// serverPattern checks a "{namespace}/{name}" pattern.
func serverPattern(s string) string {
	if msg := plainPattern(s); msg != "" {
		return msg
	}
	if strings.Count(s, "/") != 1 || strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") {
		return "a server pattern is {namespace}/{name} (globs allowed, e.g. io.github.acme/*)"
	}
	return ""
}

// hostPattern checks a host pattern (lower case, no port).
func hostPattern(s string) string {
	if msg := plainPattern(s); msg != "" {
		return msg
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '*') {
			return "a host pattern has lower-case letters, digits, '.', '-' and '*' (e.g. *.example.com)"
		}
	}
	return ""
}

// toolPattern checks a "{tool}" or "{namespace}/{name}/{tool}" pattern.
func toolPattern(s string) string {
	if msg := plainPattern(s); msg != "" {
		return msg
	}
	if n := strings.Count(s, "/"); n != 0 && n != 2 {
		return "a tool pattern is {tool} or {namespace}/{name}/{tool} (globs allowed)"
	}
	return ""
}

func plainPattern(s string) string {
	if s == "" || len(s) > maxPatternLength || !utf8.ValidString(s) {
		return fmt.Sprintf("a pattern has 1..%d characters", maxPatternLength)
	}
	if strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "a pattern has no spaces or control characters"
	}
	return ""
}

func notWord(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Match reports whether s matches the glob pattern: '*' matches any run of characters other than
// '/', every other character itself.
func Match(pattern, s string) bool {
	// The classic linear wildcard match with one backtrack point, which a '/' in s cancels: a star
	// never spans a slash.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0 && s[mark] != '/':
			mark++
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// firstMatch returns the index of the first pattern s matches, -1 when none does.
func firstMatch(patterns []string, s string) int {
	for i, p := range patterns {
		if Match(p, s) {
			return i
		}
	}
	return -1
}

// checkText validates a name or free text of at most limit characters.
func checkText(p *problems, field, s string, limit int, required bool) string {
	s = strings.TrimSpace(s)
	switch {
	case required && s == "":
		p.add(field, "%s must not be empty", field)
	case utf8.RuneCountInString(s) > limit:
		p.add(field, "%s must be at most %d characters", field, limit)
	case !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) >= 0:
		p.add(field, "%s must be text without control characters", field)
	}
	return s
}
