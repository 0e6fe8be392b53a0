package enforcement

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

func must(t testing.TB, r Rules) Rules {
	t.Helper()
	n, err := r.Normalize("rules")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// sampleServers is a small registry: an audited remote with three tools, a server of packages, and
// a remote without audits.
func sampleServers() ([]ServerInput, map[string]AuditInput) {
	servers := []ServerInput{
		{Key: "com.example/local", Version: "0.1.0", Status: "active", Packages: []PackageInput{
			{RegistryType: "npm", Identifier: "@example/local", Version: "0.1.0", Transport: "stdio"},
			{RegistryType: "oci", Identifier: "example/local", Version: "0.1.0", Transport: "streamable-http"},
		}},
		{Key: "io.github.acme/files", Version: "1.0.0", Status: "active", ChangeRisk: "low", Remotes: []RemoteInput{
			{Type: "streamable-http", URL: "https://files.acme.com/mcp"},
			{Type: "sse", URL: "https://files.acme.com/sse"},
		}},
		{Key: "io.github.other/open", Version: "2.0.0", Status: "active", ChangeRisk: "high", Remotes: []RemoteInput{
			{Type: "streamable-http", URL: "https://open.other.net/mcp"},
		}},
	}
	tools := []ToolInput{
		{Name: "delete_file", Annotations: map[string]any{"destructiveHint": true}, DescriptionSHA256: "d1", InputSchemaSHA256: "i1"},
		{Name: "read_file", Annotations: map[string]any{"readOnlyHint": true}, DescriptionSHA256: "d2", InputSchemaSHA256: "i2"},
		{Name: "write_file", DescriptionSHA256: "d3", InputSchemaSHA256: "i3"},
	}
	audits := map[string]AuditInput{
		"https://files.acme.com/mcp": {Verdict: "pass", Score: ptrInt(80), Listed: true, Tools: tools},
		"https://files.acme.com/sse": {Verdict: "warn", Listed: true, Tools: tools[1:2]},
	}
	return servers, audits
}

func ptrInt(n int) *int { return &n }

func TestCompileRules(t *testing.T) {
	servers, audits := sampleServers()
	const files = "io.github.acme/files"
	const mcp = files + " https://files.acme.com/mcp"
	tests := []struct {
		name  string
		rules Rules
		want  map[string]string // decision keys (see flatten) -> "decision rule"
	}{
		{"deny by default", Rules{}, map[string]string{
			files: "deny default_action", "com.example/local": "deny default_action", "io.github.other/open": "deny default_action",
			mcp: "deny server", mcp + " read_file": "deny remote",
		}},
		{"allow by default", Rules{DefaultAction: Allow}, map[string]string{
			files: "allow default_action", mcp: "allow remote", mcp + " write_file": "allow default", "io.github.other/open": "allow default_action",
			"com.example/local @example/local": "allow default_action",
		}},
		{"deny wins over allow", Rules{Servers: Patterns{Allow: []string{"io.github.acme/*"}, Deny: []string{"*/files"}}}, map[string]string{
			files: "deny servers.deny[0]",
		}},
		{"change risk", Rules{DefaultAction: Allow, MaxChangeRisk: "medium"}, map[string]string{
			files: "allow default_action", "io.github.other/open": "deny max_change_risk",
		}},
		{"transports", Rules{DefaultAction: Allow, Transports: []string{"sse", "stdio"}}, map[string]string{
			mcp: "deny transports", files + " https://files.acme.com/sse": "allow remote", files: "allow default_action",
			"com.example/local @example/local": "allow default_action", "com.example/local example/local": "deny transports",
			"io.github.other/open": "deny transports",
		}},
		{"hosts", Rules{DefaultAction: Allow, RemoteHosts: Patterns{Allow: []string{"*.acme.com"}, Deny: []string{"files.acme.*"}}}, map[string]string{
			mcp: "deny remote_hosts.deny[0]", files: "deny remote_hosts.deny[0]", "io.github.other/open": "deny remote_hosts.allow",
			"com.example/local": "allow default_action",
		}},
		{"audits", Rules{DefaultAction: Allow, Audit: AuditRules{MinVerdict: "pass", MinReadinessScore: 70}}, map[string]string{
			mcp: "allow remote", files + " https://files.acme.com/sse": "deny audit.min_verdict", "io.github.other/open": "deny audit.min_verdict",
		}},
		{"audit required", Rules{DefaultAction: Allow, Audit: AuditRules{Require: true}}, map[string]string{
			"io.github.other/open": "deny audit.require", files: "allow default_action",
		}},
		{"readiness score", Rules{DefaultAction: Allow, Audit: AuditRules{MinReadinessScore: 81}}, map[string]string{
			mcp: "deny audit.min_readiness_score",
		}},
		{"tools", Rules{DefaultAction: Allow, Tools: ToolRules{
			Names:           Patterns{Allow: []string{"*_file"}, Deny: []string{"io.github.acme/files/read_*"}},
			DenyAnnotations: []AnnotationRule{{Annotation: "destructiveHint", Value: true}},
			Approved:        []string{"io.github.acme/*/delete_file"},
		}}, map[string]string{
			mcp + " read_file": "deny tools.names.deny[0]", mcp + " delete_file": "allow tools.approved[0]",
			mcp + " write_file": "deny tools.deny_annotations[0]",
		}},
		{"tool allow list", Rules{DefaultAction: Allow, Tools: ToolRules{Names: Patterns{Allow: []string{"read_*"}}}}, map[string]string{
			mcp + " read_file": "allow tools.names.allow[0]", mcp + " write_file": "deny tools.names.allow",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := flatten(Compile(must(t, tt.rules), "x", servers, audits))
			for k, want := range tt.want {
				if got[k] != want {
					t.Errorf("%s: got %q, want %q", k, got[k], want)
				}
			}
		})
	}
}

func TestCompileStatuses(t *testing.T) {
	servers := []ServerInput{
		{Key: "a/deleted", Status: "deleted", Packages: []PackageInput{{Transport: "stdio"}}},
		{Key: "a/deprecated", Status: "deprecated", Packages: []PackageInput{{Transport: "stdio"}}},
		{Key: "a/empty", Status: "active"},
		{Key: "a/templated", Status: "active", Remotes: []RemoteInput{{Type: "sse", URL: "https://{tenant}.example.com/sse"}}},
	}
	got := flatten(Compile(must(t, Rules{DefaultAction: Allow}), "x", servers, nil))
	want := map[string]string{"a/deleted": "deny status.deleted", "a/deprecated": "deny status.deprecated", "a/empty": "deny no_transport",
		"a/templated": "deny remote_hosts", "a/templated https://{tenant}.example.com/sse": "deny remote_hosts"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %q, want %q", k, got[k], w)
		}
	}
	got = flatten(Compile(must(t, Rules{DefaultAction: Allow, AllowDeprecated: true}), "x", servers, nil))
	if got["a/deprecated"] != "allow default_action" || got["a/deleted"] != "deny status.deleted" {
		t.Errorf("allow_deprecated: got %q and %q", got["a/deprecated"], got["a/deleted"])
	}
}

func TestCompileIsDeterministic(t *testing.T) {
	servers, audits := sampleServers()
	rules := must(t, Rules{DefaultAction: Allow, PinTools: true})
	raw1, sum1, err := Canonical(Compile(rules, "x", servers, audits))
	if err != nil {
		t.Fatal(err)
	}
	// The same intelligence read again (new maps and slices): the same bytes.
	servers2, audits2 := sampleServers()
	raw2, sum2, _ := Canonical(Compile(rules, "x", servers2, audits2))
	if sum1 != sum2 || !bytes.Equal(raw1, raw2) {
		t.Fatalf("two compiles of the same input hashed %s and %s", sum1, sum2)
	}
	audits2["https://files.acme.com/mcp"].Tools[0].DescriptionSHA256 = "changed"
	if _, sum3, _ := Canonical(Compile(rules, "x", servers2, audits2)); sum3 == sum1 {
		t.Error("a changed tool definition left the content hash as it was")
	}
}

// flatten is a content's decisions by "server", "server url", "server url tool" and "server identifier".
func flatten(c Content) map[string]string {
	out := map[string]string{}
	for _, s := range c.Servers {
		out[s.Server] = s.Decision + " " + s.Rule
		for _, r := range s.Remotes {
			out[s.Server+" "+r.URL] = r.Decision + " " + r.Rule
			for _, tl := range r.Tools {
				out[s.Server+" "+r.URL+" "+tl.Name] = tl.Decision + " " + tl.Rule
			}
		}
		for _, p := range s.Packages {
			out[s.Server+" "+p.Identifier] = p.Decision + " " + p.Rule
		}
	}
	return out
}

// TestRegoFollowsTheSnapshot evaluates the opa_rego artifact with OPA's Go library for every
// decision of snapshots of pinned and unpinned rules, with and without tool rules.
func TestRegoFollowsTheSnapshot(t *testing.T) {
	servers, audits := sampleServers()
	for _, rules := range []Rules{
		{DefaultAction: Allow},
		{DefaultAction: Allow, PinTools: true},
		{Servers: Patterns{Allow: []string{"io.github.acme/*"}}, Transports: []string{"streamable-http", "sse"},
			Tools: ToolRules{DenyAnnotations: []AnnotationRule{{Annotation: "destructiveHint", Value: true}}}},
		{DefaultAction: Allow, Audit: AuditRules{MinVerdict: "pass"}, PinTools: true},
	} {
		t.Run(fmt.Sprintf("%+v", rules), func(t *testing.T) {
			rules = must(t, rules)
			content := Compile(rules, "x", servers, audits)
			snap := Snapshot{ID: uuid.New(), PolicyID: uuid.New(), Version: 1, ContentSHA256: "x", Content: content}
			files, err := Generate(FormatOPARego, snap, rules)
			if err != nil {
				t.Fatal(err)
			}
			eval := prepareRego(t, files)
			allTools := !rules.PinTools && !rules.decidesTools()
			for _, s := range content.Servers {
				eval(map[string]any{"server": s.Server}, s.Decision == Allow)
				eval(map[string]any{"server": s.Server, "version": s.Version}, s.Decision == Allow)
				eval(map[string]any{"server": s.Server, "version": s.Version + ".1"}, false)
				for _, r := range s.Remotes {
					eval(map[string]any{"server": s.Server, "remote_url": r.URL}, r.Decision == Allow)
					for _, tl := range r.Tools {
						tool := map[string]any{"name": tl.Name, "description_sha256": tl.DescriptionSHA256,
							"input_schema_sha256": tl.InputSchemaSHA256, "output_schema_sha256": tl.OutputSchemaSHA256}
						eval(map[string]any{"server": s.Server, "remote_url": r.URL, "tool": tool}, tl.Decision == Allow)
						changed := map[string]any{"name": tl.Name, "description_sha256": "other",
							"input_schema_sha256": tl.InputSchemaSHA256, "output_schema_sha256": tl.OutputSchemaSHA256}
						// A changed definition passes only where nothing is pinned.
						eval(map[string]any{"server": s.Server, "remote_url": r.URL, "tool": changed}, tl.Decision == Allow && !rules.PinTools)
					}
					// A tool no audit listed: allowed only on an open remote.
					eval(map[string]any{"server": s.Server, "remote_url": r.URL, "tool": map[string]any{"name": "unlisted"}},
						r.Decision == Allow && allTools)
				}
			}
			eval(map[string]any{"server": "nobody/here"}, false)
			eval(map[string]any{}, false)
		})
	}
}

// prepareRego compiles an opa_rego artifact and returns a check of one input against the decision
// it should get.
func prepareRego(t *testing.T, files []File) func(input map[string]any, want bool) {
	t.Helper()
	byPath := map[string][]byte{}
	for _, f := range files {
		byPath[f.Path] = f.Content
	}
	var data map[string]any
	if err := json.Unmarshal(byPath["data.json"], &data); err != nil {
		t.Fatal(err)
	}
	q, err := rego.New(rego.Query("allow := data.mcp_enforcement.allow; deny := data.mcp_enforcement.deny"),
		rego.Module("policy.rego", string(byPath["policy.rego"])), rego.Store(inmem.NewFromObject(data))).PrepareForEval(context.Background())
	if err != nil {
		t.Fatalf("policy.rego: %v", err)
	}
	return func(input map[string]any, want bool) {
		t.Helper()
		rs, err := q.Eval(context.Background(), rego.EvalInput(input))
		if err != nil || len(rs) != 1 {
			t.Fatalf("eval %v: %v %v", input, rs, err)
		}
		allow, _ := rs[0].Bindings["allow"].(bool)
		if allow != want {
			t.Errorf("%v: allow %v (deny %v), want %v", input, allow, rs[0].Bindings["deny"], want)
		}
	}
}
