package apidoc

import (
	"slices"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/serve"
)

func TestCompare(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"paths": {
		"/v1/payers/{payerId}/policies": {"get": {}, "post": {}},
		"/healthz": {"get": {}},
		"/mcp": {"get": {}, "post": {}},
		"/static/": {"get": {}}
	}}`)
	served := []serve.Route{
		{Method: "GET", Path: "/v1/payers/{payer_id}/policies", FullMethod: "/x.v1.X/List"},
		{Method: "POST", Path: "/v1/payers/{payer_id}/policies", FullMethod: "/x.v1.X/Create"},
		{Method: "GET", Path: "/healthz"},
		{Path: "/mcp"},
		{Method: "GET", Path: "/static/"},
	}
	for _, tc := range []struct {
		name                   string
		routes                 []serve.Route
		undocumented, unserved []string
	}{
		{"every route on both sides; a method-less handler covers each documented method", served, nil, nil},
		{"a served route without documentation", append(slices.Clone(served),
			serve.Route{Method: "DELETE", Path: "/v1/payers/{payer_id}/policies"},
			serve.Route{Path: "/debug/"},
		), []string{"* /debug/", "DELETE /v1/payers/{payer_id}/policies"}, nil},
		{"documentation of a route no longer served", served[1:], nil, []string{"GET /v1/payers/{payerId}/policies"}},
		{"documentation of a method-less handler no longer served", served[:3], nil, []string{"GET /mcp", "GET /static/", "POST /mcp"}},
	} {
		undocumented, unserved, err := Compare(doc, tc.routes)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(undocumented, tc.undocumented) || !slices.Equal(unserved, tc.unserved) {
			t.Errorf("%s: got undocumented %v unserved %v, want %v and %v", tc.name, undocumented, unserved, tc.undocumented, tc.unserved)
		}
	}
	if _, _, err := Compare([]byte("not json"), served); err == nil {
		t.Error("a document that is not JSON: got no error")
	}
}

// recorder is a testing.TB that keeps what CheckRoutes reports instead of failing the test.
type recorder struct {
	testing.TB
	errors int
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.errors++ }

func TestCheckRoutes(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"paths": {"/healthz": {"get": {}}, "/gone": {"get": {}}}}`)
	r := &recorder{TB: t}
	CheckRoutes(r, doc, []serve.Route{{Method: "GET", Path: "/healthz"}, {Method: "GET", Path: "/new"}})
	if r.errors != 2 {
		t.Errorf("got %d errors, want 2 (GET /new undocumented, GET /gone unserved)", r.errors)
	}
}
