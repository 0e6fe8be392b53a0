package apidoc

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json")

// generated is a document as protoc-gen-openapiv2 writes it: one route per path, a definition
// v1Thing, the rpcStatus every file repeats, and a tag.
func generated(routes map[string]string, thing string) *fstest.MapFile {
	paths := map[string]any{}
	for p, id := range routes {
		paths[p] = map[string]any{"get": map[string]any{
			"operationId": id,
			"responses":   map[string]any{"200": map[string]any{"description": "A successful response."}},
		}}
	}
	b, _ := json.Marshal(map[string]any{
		"swagger": "2.0",
		"paths":   paths,
		"definitions": map[string]any{
			"v1Thing":   json.RawMessage(thing),
			"rpcStatus": map[string]any{"type": "object"},
		},
		"tags": []any{map[string]any{"name": "ThingService"}},
	})
	return &fstest.MapFile{Data: b}
}

var files = fstest.MapFS{
	"thing/v1/thing.swagger.json":    generated(map[string]string{"/v1/things/{thingId}": "ThingService_GetThing"}, `{"type":"object"}`),
	"thing/v1/admin.swagger.json":    generated(map[string]string{"/v1/admin/things": "ThingAdmin_ListThings"}, `{"type":"object"}`),
	"other/v1/other.swagger.json":    generated(map[string]string{"/v1/other": "OtherService_Get"}, `{"type":"string"}`),
	"platform/v1/build.swagger.json": generated(map[string]string{"/v1/build": "BuildService_GetBuild"}, `{"type":"object"}`),
}

var healthz = Route{
	Method: "GET", Path: "/healthz", OperationID: "Operations_Healthz", Tag: "Operations",
	Summary: "Liveness", Responses: map[string]string{"200": `{"status":"ok"}`},
}

func goldenSpec() Spec {
	return Spec{
		Title: "Thing service", Version: "1.2.0", Description: "Things.",
		Files:     files,
		Sources:   []string{"thing/v1/*.swagger.json", "platform/v1/build.swagger.json"},
		PublicURL: "https://things.example.com/api/",
		SecurityDefinitions: map[string]any{
			"adminToken": map[string]any{"type": "apiKey", "in": "header", "name": "X-Admin-Token"},
		},
		Security:   []any{},
		Extensions: map[string]any{"x-thing-kinds": []any{"small", "large"}},
		Plain: []Route{healthz, {
			Method: "PUT", Path: "/v1/blobs/{name...}", OperationID: "Blobs_Put", Tag: "Blobs",
			Summary: "Store a blob", Description: "Stored as sent.", Consumes: "application/octet-stream",
			Produces:   "text/plain",
			Responses:  map[string]string{"204": "stored", "413": "too large"},
			Extensions: map[string]any{"x-access": "admin"},
		}},
		Extend: func(op map[string]any, o Operation) {
			if strings.HasPrefix(o.GRPCMethod, "/thing.v1.ThingAdmin/") || op["x-access"] == "admin" {
				op["security"] = []any{map[string]any{"adminToken": []any{}}}
				AddResponse(op, "401", "Missing or wrong X-Admin-Token")
			}
			op["x-grpc-method"] = o.GRPCMethod
		},
	}
}

// TestBuildGolden keeps the whole document under review: a change to Build shows up as a diff of
// testdata/golden.json (go test -update rewrites it).
func TestBuildGolden(t *testing.T) {
	t.Parallel()
	doc, err := Build(goldenSpec())
	if err != nil {
		t.Fatal(err)
	}
	const golden = "testdata/golden.json"
	if *update {
		if err := os.WriteFile(golden, doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(doc, want) {
		t.Errorf("the document differs from %s: run go test -update and review the diff", golden)
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	var doc struct {
		Host     string                               `json:"host"`
		Schemes  []string                             `json:"schemes"`
		BasePath string                               `json:"basePath"`
		Paths    map[string]map[string]map[string]any `json:"paths"`
		Tags     []map[string]any                     `json:"tags"`
		Defs     map[string]any                       `json:"definitions"`
		Kinds    []any                                `json:"x-thing-kinds"`
	}
	raw, err := Build(goldenSpec())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Host != "things.example.com" || !slices.Equal(doc.Schemes, []string{"https"}) || doc.BasePath != "/api" {
		t.Errorf("host %q schemes %v basePath %q, want things.example.com [https] /api", doc.Host, doc.Schemes, doc.BasePath)
	}
	for _, tc := range []struct {
		method, path string
		grpc         string
		admin        bool
	}{
		{"get", "/v1/things/{thingId}", "/thing.v1.ThingService/GetThing", false},
		{"get", "/v1/admin/things", "/thing.v1.ThingAdmin/ListThings", true},
		{"get", "/v1/build", "/platform.v1.BuildService/GetBuild", false},
		{"get", "/healthz", "", false},
		{"put", "/v1/blobs/{name...}", "", true},
	} {
		op := doc.Paths[tc.path][tc.method]
		if op == nil {
			t.Errorf("%s %s: not documented", tc.method, tc.path)
			continue
		}
		if op["x-grpc-method"] != tc.grpc {
			t.Errorf("%s %s: Extend saw gRPC method %v, want %q", tc.method, tc.path, op["x-grpc-method"], tc.grpc)
		}
		_, has401 := op["responses"].(map[string]any)["401"]
		if (op["security"] != nil) != tc.admin || has401 != tc.admin {
			t.Errorf("%s %s: security %v, 401 %v; want the admin token: %v", tc.method, tc.path, op["security"], has401, tc.admin)
		}
	}
	put := doc.Paths["/v1/blobs/{name...}"]["put"]
	params, _ := json.Marshal(put["parameters"])
	if want := `[{"in":"path","name":"name","required":true,"type":"string"},{"in":"body","name":"body","required":true,"schema":{"type":"object"}}]`; string(params) != want {
		t.Errorf("parameters of a plain route: got %s, want %s", params, want)
	}
	tooLarge, _ := json.Marshal(put["responses"].(map[string]any)["413"])
	if want := `{"description":"too large","schema":{"$ref":"#/definitions/Error"}}`; string(tooLarge) != want {
		t.Errorf("an error response of a plain route: got %s, want %s", tooLarge, want)
	}
	var tags []string
	for _, tag := range doc.Tags {
		tags = append(tags, tag["name"].(string))
	}
	if want := []string{"ThingService", "Operations", "Blobs"}; !slices.Equal(tags, want) {
		t.Errorf("tags: got %v, want %v (each once, in order)", tags, want)
	}
	if doc.Defs["Error"] == nil || doc.Defs["v1Thing"] == nil || doc.Defs["rpcStatus"] == nil {
		t.Errorf("definitions: got %v, want Error, v1Thing and rpcStatus", doc.Defs)
	}
	if len(doc.Kinds) != 2 {
		t.Errorf("x-thing-kinds: got %v, want the extension as given", doc.Kinds)
	}
}

func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		change func(*Spec)
		want   string
	}{
		{"a definition two files define differently", func(s *Spec) {
			s.Sources = append(s.Sources, "other/v1/*.swagger.json")
		}, "definition v1Thing differs"},
		{"a definition Spec.Definitions gives differently", func(s *Spec) {
			s.Definitions = map[string]any{"v1Thing": map[string]any{"type": "array"}}
		}, "definition v1Thing differs"},
		{"a route two sources define", func(s *Spec) {
			s.Sources = append(s.Sources, "thing/v1/thing.swagger.json")
		}, "GET /v1/things/{thingId} is defined twice"},
		{"a plain route that a proto defines", func(s *Spec) {
			s.Plain = append(s.Plain, Route{Method: "GET", Path: "/v1/build"})
		}, "GET /v1/build is both a gateway route and a plain route"},
		{"a plain route twice", func(s *Spec) {
			s.Plain = append(s.Plain, healthz)
		}, "GET /healthz is both"},
		{"a public URL without a host", func(s *Spec) { s.PublicURL = "things.example.com" }, "not an absolute URL"},
		{"an extension without x-", func(s *Spec) { s.Extensions = map[string]any{"kinds": 1} }, `extension "kinds"`},
		{"a malformed source pattern", func(s *Spec) { s.Sources = []string{"thing/["} }, "source"},
		{"a source that is not JSON", func(s *Spec) {
			s.Files = fstest.MapFS{"thing/v1/bad.swagger.json": {Data: []byte("{")}}
		}, "thing/v1/bad.swagger.json"},
	} {
		s := goldenSpec()
		tc.change(&s)
		_, err := Build(s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestBuildKeepsGivenErrorAndResponses(t *testing.T) {
	t.Parallel()
	own := map[string]any{"type": "object", "properties": map[string]any{"detail": map[string]any{"type": "string"}, "error": map[string]any{"type": "string"}}}
	s := goldenSpec()
	s.Definitions = map[string]any{"Error": own, "v1Thing": map[string]any{"type": "object"}}
	raw, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs  map[string]any                       `json:"definitions"`
		Paths map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(doc.Defs["Error"]); !strings.Contains(string(got), `"error"`) {
		t.Errorf("Error: got %s, want the one Spec.Definitions gives", got)
	}

	op := map[string]any{"responses": map[string]any{"401": map[string]any{"description": "generated"}}}
	AddResponse(op, "401", "added")
	AddResponse(op, "404", "added")
	got, _ := json.Marshal(op)
	if want := `{"responses":{"401":{"description":"generated"},"404":{"description":"added","schema":{"$ref":"#/definitions/Error"}}}}`; string(got) != want {
		t.Errorf("AddResponse: got %s, want %s", got, want)
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"swagger":"2.0"}` + "\n")
	rec := httptest.NewRecorder()
	Handler(doc).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || !bytes.Equal(rec.Body.Bytes(), doc) {
		t.Errorf("got %d %q %s, want 200 application/json and the document", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
}
