package serve_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/serve"
)

func TestRoutesListGatewayRulesAndPlainHandlers(t *testing.T) {
	t.Parallel()
	h := start(t, gateway.FastAPI)
	h.srv.Handle("GET /v1/pages/{name}", http.NotFoundHandler())
	h.srv.Handle("/mcp", http.NotFoundHandler())
	h.srv.Handle("POST example.com/hooks/", http.NotFoundHandler())

	got := h.srv.Routes()
	want := []serve.Route{
		{Method: "GET", Path: "/v1/build", FullMethod: "/platform.v1.BuildService/GetBuild"},
		{Method: "POST", Path: "/v1/echoes", FullMethod: "/platformtest.v1.EchoService/CreateEcho"},
		{Method: "GET", Path: "/v1/echoes/{id}", FullMethod: "/platformtest.v1.EchoService/GetEcho"},
		{Method: "DELETE", Path: "/v1/echoes/{id}", FullMethod: "/platformtest.v1.EchoService/DeleteEcho"},
		{Method: "GET", Path: "/healthz"},
		{Method: "GET", Path: "/readyz"},
		{Method: "GET", Path: "/v1/pages/{name}"},
		{Path: "/mcp"},
		{Method: "POST", Path: "/hooks/"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("routes:\n got %v\nwant %v", got, want)
	}
	// Each listed route is served: a GET of a gateway route answers from the handler, not 404.
	if r := h.do(t, "GET", "/v1/echoes/abc", "", nil); r.status == http.StatusNotFound && r.body == `{"detail":"Not Found"}` {
		t.Errorf("GET /v1/echoes/abc: the gateway does not serve a listed route")
	}
}
