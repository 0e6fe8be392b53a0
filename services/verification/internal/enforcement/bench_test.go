package enforcement

import (
	"fmt"
	"testing"
)

// benchRegistry is n servers, each with one audited remote of five tools (one destructive) and one
// package, as a compile reads them.
func benchRegistry(n int) ([]ServerInput, map[string]AuditInput) {
	servers := make([]ServerInput, 0, n)
	audits := make(map[string]AuditInput, n)
	for i := range n {
		key := fmt.Sprintf("io.github.org%04d/server%05d", i%1000, i)
		url := fmt.Sprintf("https://mcp%05d.example.com/mcp", i)
		servers = append(servers, ServerInput{
			Key: key, Version: "1.0.0", Status: "active", ContentHash: fmt.Sprintf("%064x", i), ChangeRisk: []string{"", "low", "medium", "high"}[i%4],
			Remotes:  []RemoteInput{{Type: "streamable-http", URL: url}},
			Packages: []PackageInput{{RegistryType: "npm", Identifier: fmt.Sprintf("@org/server%05d", i), Version: "1.0.0", Transport: "stdio"}},
		})
		tools := make([]ToolInput, 5)
		for j := range tools {
			tools[j] = ToolInput{Name: fmt.Sprintf("tool_%d", j), DescriptionSHA256: fmt.Sprintf("%064x", i*5+j), InputSchemaSHA256: fmt.Sprintf("%064x", j)}
		}
		tools[4].Annotations = map[string]any{"destructiveHint": true}
		verdict := []string{"pass", "warn", "fail"}[i%3]
		audits[url] = AuditInput{Verdict: verdict, Score: ptrInt(60 + i%40), Listed: true, Tools: tools}
	}
	return servers, audits
}

var benchRules = Rules{
	Servers:       Patterns{Allow: []string{"io.github.org0*/*", "io.github.org1*/*"}, Deny: []string{"*/server00042"}},
	MaxChangeRisk: "medium",
	Transports:    []string{"streamable-http", "stdio"},
	RemoteHosts:   Patterns{Allow: []string{"*.example.com"}},
	Audit:         AuditRules{MinVerdict: "warn", MinReadinessScore: 65},
	Tools: ToolRules{DenyAnnotations: []AnnotationRule{{Annotation: "destructiveHint", Value: true}},
		Approved: []string{"io.github.org0001/*/tool_4"}},
	PinTools: true,
}

// BenchmarkCompile compiles 10,000 servers (50,000 tools) in memory: the decisions alone.
func BenchmarkCompile(b *testing.B) {
	servers, audits := benchRegistry(10000)
	rules := must(b, benchRules)
	b.ReportAllocs()
	for b.Loop() {
		Compile(rules, "x", servers, audits)
	}
}

// BenchmarkCompileAndHash is BenchmarkCompile with the content's canonical JSON and SHA-256, what a
// preview does besides its reads and its insert.
func BenchmarkCompileAndHash(b *testing.B) {
	servers, audits := benchRegistry(10000)
	rules := must(b, benchRules)
	b.ReportAllocs()
	for b.Loop() {
		Compile(rules, "x", servers, audits).CanonicalJSON()
	}
}
