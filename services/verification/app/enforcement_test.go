package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// The registry the enforcement tests compile against.
var (
	filesURL = "https://files.acme.test/mcp"
	riskyURL = "https://risky.acme.test/mcp"
	otherURL = "https://other.example.test/sse"
	// The audited tools of filesURL: one read-only, one destructive, one without annotations
	// (destructive by MCP's defaults).
	filesTools = []surface.Tool{
		{Name: "read_file", Description: "Reads a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
		{Name: "delete_file", Description: "Deletes a file.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: json.RawMessage(`{"destructiveHint":true}`)},
		{Name: "write_file", Description: "Writes a file.", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	// enforcementRules is the policy the flow compiles.
	enforcementRules = map[string]any{
		"servers":         map[string]any{"allow": []string{"io.github.acme/*", "com.example/*"}},
		"max_change_risk": "medium",
		"transports":      []string{"streamable-http", "stdio"},
		"audit":           map[string]any{"min_verdict": "warn"},
		"tools": map[string]any{
			"deny_annotations": []map[string]any{{"annotation": "destructiveHint", "value": true}},
			"approved":         []string{"io.github.acme/files/delete_file"},
		},
		"pin_tools": true,
	}
)

// seedRegistry writes the servers and audits the flow compiles against.
func seedRegistry(t *testing.T, s *stack) {
	t.Helper()
	remote := func(typ, url string) []map[string]any { return []map[string]any{{"type": typ, "url": url}} }
	seedServer(t, s, intelServer{name: "io.github.acme/files", version: "1.0.0", remotes: remote("streamable-http", filesURL)})
	seedServer(t, s, intelServer{name: "io.github.acme/risky", version: "2.0.0", remotes: remote("streamable-http", riskyURL), risk: "high"})
	seedServer(t, s, intelServer{name: "com.example/local", version: "0.1.0",
		packages: []map[string]any{{"registryType": "npm", "identifier": "@example/local", "version": "0.1.0", "transport": map[string]any{"type": "stdio"}}}})
	seedServer(t, s, intelServer{name: "org.old/legacy", version: "3.0.0", status: "deprecated", remotes: remote("streamable-http", "https://legacy.old.test/mcp")})
	seedServer(t, s, intelServer{name: "io.github.other/unaudited", version: "1.0.0", remotes: remote("sse", otherURL)})
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	seedAudit(t, s, filesURL, "mcp", strp("pass"), nil, filesTools, at)
	seedAudit(t, s, filesURL, "readiness", nil, intp(90), nil, at)
	seedAudit(t, s, riskyURL, "mcp", strp("fail"), nil, []surface.Tool{{Name: "run"}}, at)
}

// decisions flattens a snapshot's content into "server", "server remote", "server remote tool" ->
// "decision rule".
func decisions(t *testing.T, snap map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	content := snap["content"].(map[string]any)
	for _, s := range content["servers"].([]any) {
		srv := s.(map[string]any)
		out[srv["server"].(string)] = srv["decision"].(string) + " " + srv["rule"].(string)
		for _, r := range srv["remotes"].([]any) {
			rem := r.(map[string]any)
			out[srv["server"].(string)+" "+rem["url"].(string)] = rem["decision"].(string) + " " + rem["rule"].(string)
			for _, tl := range rem["tools"].([]any) {
				tool := tl.(map[string]any)
				out[srv["server"].(string)+" "+rem["url"].(string)+" "+tool["name"].(string)] = tool["decision"].(string) + " " + tool["rule"].(string)
			}
		}
		for _, p := range srv["packages"].([]any) {
			pkg := p.(map[string]any)
			out[srv["server"].(string)+" "+pkg["identifier"].(string)] = pkg["decision"].(string) + " " + pkg["rule"].(string)
		}
	}
	return out
}

func TestEnforcementPolicyPreviewAndArtifacts(t *testing.T) {
	t.Parallel()
	s := startService(t)
	seedRegistry(t, s)
	_, key := s.newKey("acme")
	auth := bearer(key)

	created := s.Must("POST", enforcementPath+"/policies", map[string]any{"name": "agents", "description": "what our agents use",
		"rules": enforcementRules}, auth, http.StatusCreated).Object(t)
	policyID := created["id"].(string)
	if created["latest_version"] != 1.0 || len(created["versions"].([]any)) != 1 {
		t.Fatalf("created policy = %v, want version 1 from its rules", created)
	}
	v1 := created["versions"].([]any)[0].(map[string]any)
	if rules := v1["rules"].(map[string]any); rules["default_action"] != "deny" || v1["rules_sha256"] == "" {
		t.Errorf("version 1 = %v, want default_action deny filled in and a rules hash", v1)
	}

	v2 := s.Must("POST", enforcementPath+"/policies/"+policyID+"/versions", map[string]any{"rules": map[string]any{"default_action": "allow"}, "note": "open"},
		auth, http.StatusCreated).Object(t)
	if v2["version"] != 2.0 || v2["note"] != "open" {
		t.Fatalf("version = %v, want version 2", v2)
	}
	got := s.Must("GET", enforcementPath+"/policies/"+policyID, nil, auth, http.StatusOK).Object(t)
	if got["latest_version"] != 2.0 || len(got["versions"].([]any)) != 2 || got["name"] != "agents" || got["created_at"] != created["created_at"] {
		t.Fatalf("policy = %v, want 2 versions", got)
	}

	snap := s.Must("POST", enforcementPath+"/policies/"+policyID+"/preview", map[string]any{"version": 1}, auth, http.StatusOK).Object(t)
	want := map[string]string{
		"io.github.acme/files":                              "allow servers.allow[0]",
		"io.github.acme/files " + filesURL:                  "allow remote",
		"io.github.acme/files " + filesURL + " read_file":   "allow default",
		"io.github.acme/files " + filesURL + " delete_file": "allow tools.approved[0]",
		"io.github.acme/files " + filesURL + " write_file":  "deny tools.deny_annotations[0]",
		"io.github.acme/risky":                              "deny max_change_risk",
		"io.github.acme/risky " + riskyURL:                  "deny server",
		"io.github.acme/risky " + riskyURL + " run":         "deny remote",
		"com.example/local":                                 "allow servers.allow[1]",
		"com.example/local @example/local":                  "allow servers.allow[1]",
		"org.old/legacy":                                    "deny status.deprecated",
		"org.old/legacy https://legacy.old.test/mcp":        "deny server",
		"io.github.other/unaudited":                         "deny default_action",
		"io.github.other/unaudited " + otherURL:             "deny server",
	}
	gotDecisions := decisions(t, snap)
	for k, w := range want {
		if gotDecisions[k] != w {
			t.Errorf("%s: got %q, want %q", k, gotDecisions[k], w)
		}
	}
	if len(gotDecisions) != len(want) {
		t.Errorf("decisions = %v, want exactly %v", gotDecisions, want)
	}
	if sum := snap["summary"].(map[string]any); sum["servers_allowed"] != 2.0 || sum["servers_denied"] != 3.0 || sum["tools_allowed"] != 2.0 || sum["tools_denied"] != 2.0 {
		t.Errorf("summary = %v, want 2/3 servers and 2/2 tools", sum)
	}
	// The content as answered hashes (RFC 8785) to content_sha256.
	content, _ := json.Marshal(snap["content"])
	canonical, err := surface.Canonical(content)
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(canonical); hex.EncodeToString(sum[:]) != snap["content_sha256"] {
		t.Errorf("content hashes to %x, want content_sha256 %v", sum, snap["content_sha256"])
	}

	// Same version, unchanged intelligence: the same content hash, and so the same snapshot.
	again := s.Must("POST", enforcementPath+"/policies/"+policyID+"/preview", map[string]any{"version": 1}, auth, http.StatusOK).Object(t)
	if again["content_sha256"] != snap["content_sha256"] || again["id"] != snap["id"] {
		t.Errorf("second preview = %v %v, want %v %v", again["id"], again["content_sha256"], snap["id"], snap["content_sha256"])
	}
	latest := s.Must("POST", enforcementPath+"/policies/"+policyID+"/preview", map[string]any{}, auth, http.StatusOK).Object(t)
	if latest["version"] != 2.0 || latest["content_sha256"] == snap["content_sha256"] {
		t.Errorf("preview without version = version %v, want the latest (2) with other content", latest["version"])
	}
	snapshotID := snap["id"].(string)
	read := s.Must("GET", enforcementPath+"/snapshots/"+snapshotID, nil, auth, http.StatusOK).Object(t)
	if read["content_sha256"] != snap["content_sha256"] || read["policy_id"] != policyID || read["version"] != 1.0 || read["created_at"] != snap["created_at"] {
		t.Errorf("snapshot read = %v, want the previewed one", read)
	}

	// The JSON allowlist: valid against its published schema, the same artifact twice.
	list := s.Must("POST", enforcementPath+"/snapshots/"+snapshotID+"/artifacts", map[string]any{"format": "json_allowlist"}, auth, http.StatusCreated).Object(t)
	listAgain := s.Must("POST", enforcementPath+"/snapshots/"+snapshotID+"/artifacts", map[string]any{"format": "json_allowlist", "version": 1}, auth, http.StatusCreated).Object(t)
	if list["id"] != listAgain["id"] || list["sha256"] != listAgain["sha256"] {
		t.Errorf("the same snapshot and format gave two artifacts: %v and %v", list["id"], listAgain["id"])
	}
	readList := s.Must("GET", enforcementPath+"/artifacts/"+list["id"].(string), nil, auth, http.StatusOK).Object(t)
	files := checkFiles(t, readList)
	if readList["snapshot_id"] != snapshotID || readList["format"] != "json_allowlist" || len(files) != 1 {
		t.Fatalf("artifact = %v, want one file of the snapshot", readList)
	}
	schema := s.Must("GET", enforcementPath+"/schemas/json-allowlist", nil, auth, http.StatusOK).Body
	validateAllowlist(t, schema, files["allowlist.json"])
	var allowlist map[string]any
	if err := json.Unmarshal([]byte(files["allowlist.json"]), &allowlist); err != nil {
		t.Fatal(err)
	}
	servers := allowlist["servers"].(map[string]any)
	if len(servers) != 2 || servers["io.github.acme/files"] == nil || servers["com.example/local"] == nil || allowlist["pinned"] != true {
		t.Errorf("allowlist servers = %v, want the two allowed, pinned", servers)
	}

	// The OPA policy allows and denies exactly what the snapshot says.
	opa := s.Must("POST", enforcementPath+"/snapshots/"+snapshotID+"/artifacts", map[string]any{"format": "opa_rego"}, auth, http.StatusCreated).Object(t)
	opaFiles := checkFiles(t, opa)
	eval := newOPA(t, opaFiles["policy.rego"], opaFiles["data.json"])
	tools := map[string]map[string]any{}
	for _, srv := range read["content"].(map[string]any)["servers"].([]any) {
		server := srv.(map[string]any)
		name := server["server"].(string)
		eval.want(t, map[string]any{"server": name}, server["decision"] == "allow")
		for _, r := range server["remotes"].([]any) {
			remote := r.(map[string]any)
			eval.want(t, map[string]any{"server": name, "remote_url": remote["url"]}, remote["decision"] == "allow")
			for _, tl := range remote["tools"].([]any) {
				tool := tl.(map[string]any)
				input := map[string]any{"name": tool["name"], "description_sha256": tool["description_sha256"],
					"input_schema_sha256": tool["input_schema_sha256"], "output_schema_sha256": tool["output_schema_sha256"]}
				tools[name+" "+tool["name"].(string)] = input
				eval.want(t, map[string]any{"server": name, "remote_url": remote["url"], "tool": input}, tool["decision"] == "allow")
				eval.want(t, map[string]any{"server": name, "tool": input}, tool["decision"] == "allow")
			}
		}
	}
	eval.want(t, map[string]any{"server": "io.github.unknown/server"}, false)
	eval.want(t, map[string]any{"server": "io.github.acme/files", "remote_url": "https://elsewhere.test/mcp"}, false)
	eval.want(t, map[string]any{"server": "io.github.acme/files", "tool": map[string]any{"name": "not_listed"}}, false)
	// A pinned tool whose definition changed since the snapshot is denied.
	changed := map[string]any{}
	for k, v := range tools["io.github.acme/files read_file"] {
		changed[k] = v
	}
	changed["description_sha256"] = strings.Repeat("0", 64)
	reasons := eval.want(t, map[string]any{"server": "io.github.acme/files", "remote_url": filesURL, "tool": changed}, false)
	if len(reasons) != 1 || reasons[0] != "tool_definition_changed" {
		t.Errorf("a changed read_file: deny %v, want [tool_definition_changed]", reasons)
	}

	// New intelligence (read_file's description changed in a newer audit): another content hash.
	newer := append([]surface.Tool(nil), filesTools...)
	newer[0].Description = "Reads a file, and sends it elsewhere."
	seedAudit(t, s, filesURL, "mcp", strp("pass"), nil, newer, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC))
	moved := s.Must("POST", enforcementPath+"/policies/"+policyID+"/preview", map[string]any{"version": 1}, auth, http.StatusOK).Object(t)
	if moved["content_sha256"] == snap["content_sha256"] || moved["id"] == snap["id"] {
		t.Errorf("preview after a tool changed = %v, want a new snapshot", moved["content_sha256"])
	}
	// The old snapshot still says what it said.
	if old := s.Must("GET", enforcementPath+"/snapshots/"+snapshotID, nil, auth, http.StatusOK).Object(t); old["content_sha256"] != snap["content_sha256"] {
		t.Errorf("the old snapshot changed: %v", old["content_sha256"])
	}
}

// checkFiles checks that each file of an artifact hashes to its sha256 and the artifact to its
// manifest's, and returns the files by path.
func checkFiles(t *testing.T, artifact map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	var manifest strings.Builder
	for _, f := range artifact["files"].([]any) {
		file := f.(map[string]any)
		content := file["content"].(string)
		sum := sha256.Sum256([]byte(content))
		if hex.EncodeToString(sum[:]) != file["sha256"] || int(file["size"].(float64)) != len(content) {
			t.Errorf("file %v: content hashes to %x (%d bytes), want %v (%v)", file["path"], sum, len(content), file["sha256"], file["size"])
		}
		manifest.WriteString(fmt.Sprintf("%s  %s\n", file["sha256"], file["path"]))
		out[file["path"].(string)] = content
	}
	if sum := sha256.Sum256([]byte(manifest.String())); hex.EncodeToString(sum[:]) != artifact["sha256"] {
		t.Errorf("artifact sha256 = %v, want %x (its files' sha256sum lines)", artifact["sha256"], sum)
	}
	return out
}

func validateAllowlist(t *testing.T, schema []byte, doc string) {
	t.Helper()
	parsed, err := jsonschema.UnmarshalJSON(strings.NewReader(string(schema)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("allowlist.schema.json", parsed); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("allowlist.schema.json")
	if err != nil {
		t.Fatalf("the published schema does not compile: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("allowlist.json is not valid against its schema: %v", err)
	}
}

// opaEval evaluates an opa_rego artifact with OPA's Go library.
type opaEval struct {
	query rego.PreparedEvalQuery
}

func newOPA(t *testing.T, policy, data string) opaEval {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(data), &doc); err != nil {
		t.Fatal(err)
	}
	q, err := rego.New(rego.Query("allow := data.mcp_enforcement.allow; deny := data.mcp_enforcement.deny"),
		rego.Module("policy.rego", policy), rego.Store(inmem.NewFromObject(doc))).PrepareForEval(context.Background())
	if err != nil {
		t.Fatalf("the Rego policy does not compile: %v", err)
	}
	return opaEval{query: q}
}

// want evaluates input and fails unless allow is allowed; it returns the deny reasons.
func (e opaEval) want(t *testing.T, input map[string]any, allowed bool) []any {
	t.Helper()
	rs, err := e.query.Eval(context.Background(), rego.EvalInput(input))
	if err != nil || len(rs) != 1 {
		t.Fatalf("OPA on %v: %v %v", input, rs, err)
	}
	allow, _ := rs[0].Bindings["allow"].(bool)
	deny, _ := rs[0].Bindings["deny"].([]any)
	if allow != allowed || allow != (len(deny) == 0) {
		t.Errorf("OPA on %v: allow %v (deny %v), want %v", input, allow, deny, allowed)
	}
	return deny
}

func TestEnforcementAcrossOrganizations(t *testing.T) {
	t.Parallel()
	s := startService(t)
	seedRegistry(t, s)
	_, key := s.newKey("acme")
	_, otherKey := s.newKey("other")
	auth, other := bearer(key), bearer(otherKey)
	policyID := s.Must("POST", enforcementPath+"/policies", map[string]any{"name": "p", "rules": enforcementRules}, auth, http.StatusCreated).Object(t)["id"].(string)
	snapshotID := s.Must("POST", enforcementPath+"/policies/"+policyID+"/preview", map[string]any{}, auth, http.StatusOK).Object(t)["id"].(string)
	artifactID := s.Must("POST", enforcementPath+"/snapshots/"+snapshotID+"/artifacts", map[string]any{"format": "opa_rego"}, auth, http.StatusCreated).Object(t)["id"].(string)
	// The other organization may use the same name.
	s.Must("POST", enforcementPath+"/policies", map[string]any{"name": "p"}, other, http.StatusCreated)

	for _, tt := range []struct {
		method, path string
		body         any
		code         string
	}{
		{"GET", "/policies/" + policyID, nil, "enforcement_policy_not_found"},
		{"POST", "/policies/" + policyID + "/versions", map[string]any{"rules": map[string]any{}}, "enforcement_policy_not_found"},
		{"POST", "/policies/" + policyID + "/preview", map[string]any{}, "enforcement_policy_not_found"},
		{"GET", "/snapshots/" + snapshotID, nil, "enforcement_snapshot_not_found"},
		{"POST", "/snapshots/" + snapshotID + "/artifacts", map[string]any{"format": "json_allowlist"}, "enforcement_snapshot_not_found"},
		{"GET", "/artifacts/" + artifactID, nil, "enforcement_artifact_not_found"},
	} {
		wantCoded(t, "another organization's "+tt.method+" "+tt.path, s.Do(tt.method, enforcementPath+tt.path, tt.body, other), http.StatusNotFound, tt.code)
		// Unknown ids and ids that are not UUIDs name nothing either.
		unknown := strings.NewReplacer(policyID, "00000000-0000-4000-8000-000000000000", snapshotID, "00000000-0000-4000-8000-000000000000",
			artifactID, "00000000-0000-4000-8000-000000000000").Replace(tt.path)
		wantCoded(t, "unknown "+unknown, s.Do(tt.method, enforcementPath+unknown, tt.body, auth), http.StatusNotFound, tt.code)
		notUUID := strings.NewReplacer(policyID, "nope", snapshotID, "nope", artifactID, "nope").Replace(tt.path)
		wantCoded(t, "not a UUID "+notUUID, s.Do(tt.method, enforcementPath+notUUID, tt.body, auth), http.StatusNotFound, tt.code)
		if r := s.Do(tt.method, enforcementPath+tt.path, tt.body, nil); r.Status != http.StatusUnauthorized {
			t.Errorf("%s %s without a key: got %d, want 401", tt.method, tt.path, r.Status)
		}
	}
	if r := s.Do("GET", enforcementPath+"/schemas/json-allowlist", nil, nil); r.Status != http.StatusUnauthorized {
		t.Errorf("the schema without a key: got %d, want 401", r.Status)
	}
}

func TestEnforcementValidationAndConflicts(t *testing.T) {
	t.Parallel()
	s := startService(t)
	_, key := s.newKey("acme")
	auth := bearer(key)
	bare := s.Must("POST", enforcementPath+"/policies", map[string]any{"name": "bare"}, auth, http.StatusCreated).Object(t)
	if bare["latest_version"] != 0.0 || len(bare["versions"].([]any)) != 0 {
		t.Errorf("a policy without rules = %v, want no version", bare)
	}
	bareID := bare["id"].(string)
	wantCoded(t, "preview of a policy without versions", s.Do("POST", enforcementPath+"/policies/"+bareID+"/preview", map[string]any{}, auth),
		http.StatusConflict, "enforcement_policy_has_no_version")
	wantCoded(t, "a name taken", s.Do("POST", enforcementPath+"/policies", map[string]any{"name": "bare"}, auth),
		http.StatusConflict, "enforcement_policy_name_exists")

	rules := func(r map[string]any) map[string]any { return map[string]any{"name": "x", "rules": r} }
	for _, tt := range []struct {
		name string
		body any
		loc  []any
	}{
		{"no name", map[string]any{}, []any{"body", "name"}},
		{"long name", map[string]any{"name": strings.Repeat("n", 201)}, []any{"body", "name"}},
		{"not JSON", "{", []any{"body"}},
		{"unknown action", rules(map[string]any{"default_action": "maybe"}), []any{"body", "rules", "default_action"}},
		{"bad server pattern", rules(map[string]any{"servers": map[string]any{"deny": []string{"ok/*", "no-slash"}}}), []any{"body", "rules", "servers", "deny", 1}},
		{"unknown risk", rules(map[string]any{"max_change_risk": "extreme"}), []any{"body", "rules", "max_change_risk"}},
		{"unknown transport", rules(map[string]any{"transports": []string{"carrier-pigeon"}}), []any{"body", "rules", "transports", 0}},
		{"upper-case host", rules(map[string]any{"remote_hosts": map[string]any{"allow": []string{"Example.com"}}}), []any{"body", "rules", "remote_hosts", "allow", 0}},
		{"unknown verdict", rules(map[string]any{"audit": map[string]any{"min_verdict": "great"}}), []any{"body", "rules", "audit", "min_verdict"}},
		{"score over 100", rules(map[string]any{"audit": map[string]any{"min_readiness_score": 101}}), []any{"body", "rules", "audit", "min_readiness_score"}},
		{"bad tool pattern", rules(map[string]any{"tools": map[string]any{"names": map[string]any{"allow": []string{"a/b"}}}}), []any{"body", "rules", "tools", "names", "allow", 0}},
		{"bad annotation", rules(map[string]any{"tools": map[string]any{"deny_annotations": []map[string]any{{"annotation": "no such"}}}}),
			[]any{"body", "rules", "tools", "deny_annotations", 0, "annotation"}},
		{"approval without server", rules(map[string]any{"tools": map[string]any{"approved": []string{"delete_file"}}}), []any{"body", "rules", "tools", "approved", 0}},
	} {
		wantValidation(t, "create: "+tt.name, s.Do("POST", enforcementPath+"/policies", tt.body, auth), tt.loc...)
	}
	wantValidation(t, "version without rules", s.Do("POST", enforcementPath+"/policies/"+bareID+"/versions", map[string]any{"note": "x"}, auth), "body", "rules")
	wantValidation(t, "version with a long note", s.Do("POST", enforcementPath+"/policies/"+bareID+"/versions",
		map[string]any{"rules": map[string]any{}, "note": strings.Repeat("n", 2001)}, auth), "body", "note")
	s.Must("POST", enforcementPath+"/policies/"+bareID+"/versions", map[string]any{"rules": map[string]any{}}, auth, http.StatusCreated)
	wantValidation(t, "preview of a missing version", s.Do("POST", enforcementPath+"/policies/"+bareID+"/preview", map[string]any{"version": 7}, auth), "body", "version")
	wantValidation(t, "preview with a format", s.Do("POST", enforcementPath+"/policies/"+bareID+"/preview", map[string]any{"format": "opa_rego"}, auth), "body", "format")
	wantValidation(t, "preview with a version that is no number", s.Do("POST", enforcementPath+"/policies/"+bareID+"/preview", `{"version":"one"}`, auth), "body")
	snapshotID := s.Must("POST", enforcementPath+"/policies/"+bareID+"/preview", map[string]any{}, auth, http.StatusOK).Object(t)["id"].(string)
	wantValidation(t, "artifact without format", s.Do("POST", enforcementPath+"/snapshots/"+snapshotID+"/artifacts", map[string]any{}, auth), "body", "format")
	wantValidation(t, "artifact of an unknown format", s.Do("POST", enforcementPath+"/snapshots/"+snapshotID+"/artifacts", map[string]any{"format": "xml"}, auth), "body", "format")
	wantValidation(t, "artifact of another version", s.Do("POST", enforcementPath+"/snapshots/"+snapshotID+"/artifacts",
		map[string]any{"format": "json_allowlist", "version": 2}, auth), "body", "version")
}

func TestEnforcementRecordsAreImmutable(t *testing.T) {
	t.Parallel()
	s := startService(t)
	seedRegistry(t, s)
	_, key := s.newKey("acme")
	auth := bearer(key)
	policyID := s.Must("POST", enforcementPath+"/policies", map[string]any{"name": "p", "rules": enforcementRules}, auth, http.StatusCreated).Object(t)["id"].(string)
	snapshotID := s.Must("POST", enforcementPath+"/policies/"+policyID+"/preview", map[string]any{}, auth, http.StatusOK).Object(t)["id"].(string)
	s.Must("POST", enforcementPath+"/snapshots/"+snapshotID+"/artifacts", map[string]any{"format": "opa_rego"}, auth, http.StatusCreated)

	for _, table := range []string{"enforcement_policy_versions", "enforcement_snapshots", "enforcement_artifacts", "enforcement_files"} {
		for _, stmt := range []string{
			"UPDATE " + table + " SET created_at = created_at",
			"DELETE FROM " + table,
			"TRUNCATE " + table + " CASCADE",
		} {
			_, err := s.Pool.Exec(context.Background(), stmt)
			if err == nil || !strings.Contains(err.Error(), "is immutable") {
				t.Errorf("%s: got %v, want the immutability trigger's refusal", stmt, err)
			}
		}
		if n := s.Count("SELECT count(*) FROM " + table); n == 0 {
			t.Errorf("%s lost its rows", table)
		}
	}
}

func TestEnforcementConcurrentVersionsAndOpenAPI(t *testing.T) {
	t.Parallel()
	s := startService(t)
	_, key := s.newKey("acme")
	auth := bearer(key)
	policyID := s.Must("POST", enforcementPath+"/policies", map[string]any{"name": "p"}, auth, http.StatusCreated).Object(t)["id"].(string)

	// Versions added at once get consecutive numbers, each once.
	const n = 6
	got := make(chan float64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := s.Do("POST", enforcementPath+"/policies/"+policyID+"/versions",
				map[string]any{"rules": map[string]any{"servers": map[string]any{"allow": []string{fmt.Sprintf("ns%d/*", i)}}}}, auth)
			if r.Status != http.StatusCreated {
				t.Errorf("version %d: got %d %s", i, r.Status, r.Body)
				got <- 0
				return
			}
			got <- r.Object(t)["version"].(float64)
		})
	}
	wg.Wait()
	close(got)
	seen := map[float64]bool{}
	for v := range got {
		seen[v] = true
	}
	for v := 1; v <= n; v++ {
		if !seen[float64(v)] {
			t.Errorf("versions %v: want each of 1..%d once", seen, n)
			break
		}
	}
	if p := s.Must("GET", enforcementPath+"/policies/"+policyID, nil, auth, http.StatusOK).Object(t); p["latest_version"] != float64(n) {
		t.Errorf("latest_version = %v, want %d", p["latest_version"], n)
	}

	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]any `json:"responses"`
			Security  []any          `json:"security"`
		} `json:"paths"`
	}
	s.Must("GET", "/openapi.json", nil, nil, http.StatusOK).Decode(t, &doc)
	for _, c := range []struct {
		method, path string
		statuses     []string
	}{
		{"post", "/policies", []string{"201", "401", "409", "422"}},
		{"get", "/policies/{policyId}", []string{"200", "401", "404"}},
		{"post", "/policies/{policyId}/versions", []string{"201", "401", "404", "422"}},
		{"post", "/policies/{policyId}/preview", []string{"200", "401", "404", "409", "422", "429"}},
		{"get", "/snapshots/{snapshotId}", []string{"200", "401", "404"}},
		{"post", "/snapshots/{snapshotId}/artifacts", []string{"201", "401", "404", "422"}},
		{"get", "/artifacts/{artifactId}", []string{"200", "401", "404"}},
		{"get", "/schemas/json-allowlist", []string{"200", "401"}},
	} {
		op, ok := doc.Paths[enforcementPath+c.path][c.method]
		if !ok {
			t.Errorf("openapi.json: no %s %s", c.method, c.path)
			continue
		}
		for _, st := range c.statuses {
			if _, ok := op.Responses[st]; !ok {
				t.Errorf("openapi.json %s %s: no %s answer (has %v)", c.method, c.path, st, slices.Sorted(maps.Keys(op.Responses)))
			}
		}
		if len(op.Responses) != len(c.statuses) || len(op.Security) == 0 {
			t.Errorf("openapi.json %s %s: answers %v and security %v, want exactly %v and the API key", c.method, c.path,
				slices.Sorted(maps.Keys(op.Responses)), op.Security, c.statuses)
		}
	}
}

func TestEnforcementSnapshotLimit(t *testing.T) {
	t.Parallel()
	s := startService(t, map[string]string{"VERIFICATION_ENFORCEMENT_SNAPSHOTS_PER_HOUR": "1"})
	_, key := s.newKey("acme")
	auth := bearer(key)
	policyID := s.Must("POST", enforcementPath+"/policies", map[string]any{"name": "p", "rules": map[string]any{}}, auth, http.StatusCreated).Object(t)["id"].(string)
	first := s.Must("POST", enforcementPath+"/policies/"+policyID+"/preview", map[string]any{}, auth, http.StatusOK).Object(t)
	// The same content again is the snapshot stored before: not counted.
	if again := s.Must("POST", enforcementPath+"/policies/"+policyID+"/preview", map[string]any{}, auth, http.StatusOK).Object(t); again["id"] != first["id"] {
		t.Errorf("the same preview again: got %v, want %v", again["id"], first["id"])
	}
	s.Must("POST", enforcementPath+"/policies/"+policyID+"/versions", map[string]any{"rules": map[string]any{"default_action": "allow"}}, auth, http.StatusCreated)
	r := s.Do("POST", enforcementPath+"/policies/"+policyID+"/preview", map[string]any{}, auth)
	wantCoded(t, "a second new snapshot in the hour", r, http.StatusTooManyRequests, "enforcement_snapshot_rate_limited")
	if detail, _ := r.Object(t)["detail"].(map[string]any); detail["limit"] != 1.0 {
		t.Errorf("429 body %s, want limit 1", r.Body)
	}
	if wait, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || wait < 1 || wait > 3600 {
		t.Errorf("Retry-After = %q, want 1..3600 seconds", r.Header.Get("Retry-After"))
	}
	// Another organization has its own hour.
	_, otherKey := s.newKey("other")
	otherID := s.Must("POST", enforcementPath+"/policies", map[string]any{"name": "p", "rules": map[string]any{}}, bearer(otherKey), http.StatusCreated).Object(t)["id"].(string)
	s.Must("POST", enforcementPath+"/policies/"+otherID+"/preview", map[string]any{}, bearer(otherKey), http.StatusOK)
}
