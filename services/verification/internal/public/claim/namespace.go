package claim

import (
	"regexp"
	"slices"
	"strings"
)

// Proof methods: how a claimant proves control of a namespace, as the official MCP registry
// accepts them (its publisher authentication: the code host's sign-in for io.github.<user>, DNS or
// HTTP for a reverse-DNS namespace).
const (
	MethodCodeHost = "code_host"
	MethodDNS      = "dns"
	MethodHTTP     = "http"
)

// codeHostPrefix starts the namespaces proved by the code host's sign-in.
const codeHostPrefix = "io.github."

var (
	serverPattern = regexp.MustCompile(`^([a-zA-Z0-9.-]+)/([a-zA-Z0-9._-]+)$`)
	// loginPattern is the code host's rule for account names: letters, digits and single hyphens,
	// at most 39 characters, no hyphen at either end.
	loginPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9]|-[A-Za-z0-9]){0,38}$`)
	labelPattern = regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)
	tldPattern   = regexp.MustCompile(`^[a-z]{2,63}$`)
)

// Namespace is a parsed namespace: Login for a code-host namespace, Domain for a reverse-DNS one.
type Namespace struct {
	Raw    string
	Login  string
	Domain string
}

// Methods are the proofs the namespace accepts.
func (n Namespace) Methods() []string {
	if n.Login != "" {
		return []string{MethodCodeHost}
	}
	return []string{MethodDNS, MethodHTTP}
}

// Accepts reports whether method proves n.
func (n Namespace) Accepts(method string) bool { return slices.Contains(n.Methods(), method) }

// ParseServer splits "namespace/name" and parses its namespace; ok is false for anything that is no
// claimable server name.
func ParseServer(server string) (Namespace, string, bool) {
	if len(server) < 3 || len(server) > 200 {
		return Namespace{}, "", false
	}
	m := serverPattern.FindStringSubmatch(server)
	if m == nil {
		return Namespace{}, "", false
	}
	ns, ok := ParseNamespace(m[1])
	return ns, m[2], ok
}

// ParseNamespace parses io.github.<login> or a reverse-DNS namespace (com.example, com.example.api),
// whose domain is its labels reversed (example.com, api.example.com).
func ParseNamespace(raw string) (Namespace, bool) {
	if login, ok := strings.CutPrefix(strings.ToLower(raw), codeHostPrefix); ok {
		if !loginPattern.MatchString(login) {
			return Namespace{}, false
		}
		return Namespace{Raw: raw, Login: login}, true
	}
	labels := strings.Split(strings.ToLower(raw), ".")
	if len(labels) < 2 || len(raw) > 253 || !tldPattern.MatchString(labels[0]) {
		return Namespace{}, false
	}
	for _, l := range labels {
		if !labelPattern.MatchString(l) {
			return Namespace{}, false
		}
	}
	slices.Reverse(labels)
	return Namespace{Raw: raw, Domain: strings.Join(labels, ".")}, true
}

// DNSRecordName is where the TXT record of a domain's claim is looked up.
func DNSRecordName(domain string) string { return "_mcp-claim." + domain }

// DNSRecordValue is the TXT record's value for token.
func DNSRecordValue(token string) string { return "mcp-claim=" + token }

// WellKnownPath is the path of the HTTP proof on the domain.
const WellKnownPath = "/.well-known/mcp-claim"
