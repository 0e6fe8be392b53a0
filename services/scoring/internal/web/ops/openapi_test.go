package ops

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"testing/fstest"
)

var update = flag.Bool("update", false, "rewrite testdata/openapi.golden.json from the current protos and route table")

// TestDocumentGolden keeps the generated document under review: a change to a proto, to plainRoutes
// or to the enrichment shows up as a diff of testdata/openapi.golden.json (go test -update rewrites it).
func TestDocumentGolden(t *testing.T) {
	doc, err := Document("https://scoring.example.com")
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/openapi.golden.json"
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(doc, want) {
		t.Errorf("the document differs from %s: run go test ./internal/web/ops -run TestDocumentGolden -update and review the diff", golden)
	}
	var parsed map[string]any
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	if parsed["swagger"] != "2.0" || parsed["host"] != "scoring.example.com" {
		t.Errorf("swagger %v host %v, want 2.0 and scoring.example.com", parsed["swagger"], parsed["host"])
	}
}

func TestDocumentMarksBillableOperations(t *testing.T) {
	doc, err := Document("http://127.0.0.1:8082")
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Paths map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path string
		billable     bool
		routeID      string
	}{
		{"post", "/v1/score", true, "unified_score"},
		{"post", "/v1/score/batch", true, "batch_score"},
		{"post", "/v1/claims/denial/score", true, "denial_score"},
		{"post", "/v1/claims/prior-auth/predict", true, "prior_auth_predict"},
		{"post", "/v1/claims/reimbursement/estimate", true, "reimbursement_estimate"},
		{"post", "/mcp", true, "unified_score"},
		{"post", "/v1/workflows/{workflow}/validate", false, ""},
		{"post", "/v1/feedback", false, ""},
		{"get", "/v1/limits", false, ""},
		{"get", "/v1/usage", false, ""},
		{"post", "/v1/claims/appeals/generate", false, ""},
		{"get", "/metrics.json", false, ""},
	} {
		op := parsed.Paths[tc.path][tc.method]
		if op == nil {
			t.Errorf("%s %s: not documented", tc.method, tc.path)
			continue
		}
		routeID, _ := op["x-route-id"].(string)
		if op["x-billable"] != tc.billable || routeID != tc.routeID {
			t.Errorf("%s %s: x-billable %v x-route-id %q, want %v %q", tc.method, tc.path, op["x-billable"], routeID, tc.billable, tc.routeID)
		}
		if m, _ := op["x-meter"].(string); (m == "scoring_calls") != tc.billable {
			t.Errorf("%s %s: x-meter %q with x-billable %v", tc.method, tc.path, m, tc.billable)
		}
	}
	// The trial key route is bounded per client address and in all (README "Keys, limits and metering").
	if responses, _ := parsed.Paths["/v1/keys/trial"]["post"]["responses"].(map[string]any); responses["429"] == nil {
		t.Errorf("POST /v1/keys/trial: no 429 among %v", responses)
	}
}

func TestBuildRefusesConflicts(t *testing.T) {
	t.Parallel()
	file := func(def string, path string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(`{"paths": {"` + path + `": {"get": {"operationId": "X_Get"}}},
			"definitions": {"v1Thing": ` + def + `}}`)}
	}
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		want  string
	}{
		{"a definition two files define differently", fstest.MapFS{
			"scoring/v1/a.swagger.json": file(`{"type": "object"}`, "/v1/a"),
			"scoring/v1/b.swagger.json": file(`{"type": "string"}`, "/v1/b"),
		}, "definition v1Thing differs"},
		{"a route two files define", fstest.MapFS{
			"scoring/v1/a.swagger.json": file(`{"type": "object"}`, "/v1/a"),
			"scoring/v1/b.swagger.json": file(`{"type": "object"}`, "/v1/a"),
		}, "GET /v1/a is defined twice"},
		{"a plain route that a proto defines", fstest.MapFS{
			"scoring/v1/a.swagger.json": file(`{"type": "object"}`, "/health"),
		}, "both a gateway route and a plain route"},
	} {
		_, err := build(tc.files, "", plainRoutes, func(string) string { return accessBearer })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	// The same definition in two files (rpcStatus, protobufAny) merges.
	same := fstest.MapFS{
		"scoring/v1/a.swagger.json": file(`{"type": "object"}`, "/v1/a"),
		"scoring/v1/b.swagger.json": file(`{"type": "object"}`, "/v1/b"),
	}
	if _, err := build(same, "", nil, func(string) string { return accessBearer }); err != nil {
		t.Errorf("identical definitions: %v", err)
	}
}
