package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/serve"
	"github.com/trustlayer/trustlayer/pkg/servicetest"
	platformv1 "github.com/trustlayer/trustlayer/proto/platform/v1"
	platformtestv1 "github.com/trustlayer/trustlayer/proto/platformtest/v1"
)

type harness struct {
	srv   *serve.Server
	echo  *echoServer
	base  string
	ready *atomic.Bool
	logs  *servicetest.Logs
	stop  context.CancelFunc
	done  chan error
}

// dial opens a gRPC connection to the server, closed when the test ends.
func (h *harness) dial(t *testing.T) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(h.srv.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func start(t *testing.T, style gateway.ValidationStyle) *harness {
	t.Helper()
	h := &harness{echo: &echoServer{started: make(chan struct{})}, ready: &atomic.Bool{}, logs: &servicetest.Logs{}, done: make(chan error, 1)}
	h.ready.Store(true)
	srv, err := serve.New(serve.Config{
		Name: "echo", HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", ShutdownTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewJSONHandler(h.logs, nil)),
		Readiness: map[string]serve.Check{"database": func(context.Context) error {
			if h.ready.Load() {
				return nil
			}
			return errors.New("dial tcp 10.0.0.7:5432: connection refused")
		}},
		Gateway: []gateway.Option{gateway.WithValidationStyle(style), gateway.WithIncomingHeaders("X-Admin-Token")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Register(&platformtestv1.EchoService_ServiceDesc, h.echo, serve.Gateway(platformtestv1.RegisterEchoServiceHandlerClient, platformtestv1.NewEchoServiceClient)); err != nil {
		t.Fatal(err)
	}
	h.srv = srv
	h.base = "http://" + srv.HTTPAddr()
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() { h.done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(10 * time.Second):
			t.Error("server did not stop")
		}
	})
	return h
}

type response struct {
	status int
	header http.Header
	body   string
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Fatalf("body %q is not a JSON object: %v", r.body, err)
	}
	return m
}

func (h *harness) do(t *testing.T, method, path, body string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func TestGatewayContract(t *testing.T) {
	t.Parallel()
	h := start(t, gateway.FastAPI)
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		header     map[string]string
		wantStatus int
		wantBody   string // exact JSON, compared as values
	}{
		{"build info is public", "GET", "/v1/build", "", nil, 200, ""},
		{"documented 201 and proto names", "POST", "/v1/echoes", `{"text":"hi","repeat":2}`, map[string]string{"X-Admin-Token": "tok"}, 201,
			`{"text":"hi","repeat":2,"admin_token_seen":true}`},
		{"zero values are emitted", "POST", "/v1/echoes", `{}`, nil, 201, `{"text":"","repeat":0,"admin_token_seen":false}`},
		{"only the listed headers become metadata", "POST", "/v1/echoes", `{}`, map[string]string{"Grpc-Metadata-X-Admin-Token": "tok"}, 201,
			`{"text":"","repeat":0,"admin_token_seen":false}`},
		{"unknown body fields are ignored", "POST", "/v1/echoes", `{"text":"a","extra":1}`, nil, 201, `{"text":"a","repeat":0,"admin_token_seen":false}`},
		{"documented 204", "DELETE", "/v1/echoes/7", "", nil, 204, ""},
		{"path and query parameters", "GET", "/v1/echoes/7?limit=5", "", nil, 200, `{"id":"7","limit":5}`},
		{"malformed JSON body", "POST", "/v1/echoes", `{"text":`, nil, 422, ""},
		{"bad path parameter", "GET", "/v1/echoes/seven", "", nil, 422, ""},
		{"bad query parameter", "GET", "/v1/echoes/7?limit=many", "", nil, 422, ""},
		{"documented error with code and extra fields", "GET", "/v1/echoes/7?fail=api", "", nil, 402,
			`{"detail":{"error":"trial_exhausted","message":"trial calls used up","upgrade_url":"https://example.com/up"}}`},
		{"FastAPI validation error", "GET", "/v1/echoes/7?fail=validation", "", nil, 422,
			`{"detail":[{"loc":["body","items",0,"url"],"msg":"URL must use https","type":"value_error"}]}`},
		{"internal error hides its cause", "GET", "/v1/echoes/7?fail=internal", "", nil, 500, `{"detail":"Internal Server Error"}`},
		{"panic becomes 500", "GET", "/v1/echoes/7?fail=panic", "", nil, 500, `{"detail":"Internal Server Error"}`},
		{"unknown route", "GET", "/v1/nothing-here", "", nil, 404, `{"detail":"Not Found"}`},
		{"unknown route outside /v1", "GET", "/favicon.ico", "", nil, 404, `{"detail":"Not Found"}`},
		{"wrong method", "PUT", "/v1/echoes", "", nil, 405, `{"detail":"Method Not Allowed"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := h.do(t, tt.method, tt.path, tt.body, tt.header)
			if got.status != tt.wantStatus {
				t.Fatalf("status: got %d, want %d (body %s)", got.status, tt.wantStatus, got.body)
			}
			if tt.wantStatus == 204 && got.body != "" {
				t.Errorf("204 body: got %q, want none", got.body)
			}
			if tt.wantBody != "" {
				assertJSON(t, got.body, tt.wantBody)
				if strings.Contains(got.body, ", ") || strings.Contains(got.body, ": ") {
					t.Errorf("body %q is not compact JSON", got.body)
				}
			}
			if ct := got.header.Get("Content-Type"); tt.wantStatus != 204 && ct != "application/json" {
				t.Errorf("Content-Type: got %q, want application/json", ct)
			}
			for k := range got.header {
				if strings.HasPrefix(strings.ToLower(k), "grpc-") {
					t.Errorf("internal header %s reached the client", k)
				}
			}
			if strings.Contains(got.body, "hunter2") {
				t.Errorf("body leaks the internal cause: %s", got.body)
			}
		})
	}
	if !strings.Contains(h.logs.String(), "hunter2") {
		t.Error("internal cause was not logged for operators")
	}
}

func TestDecodingErrorsFastAPIShape(t *testing.T) {
	t.Parallel()
	h := start(t, gateway.FastAPI)
	tests := []struct {
		path, body string
		wantLoc    []any
		wantType   string
	}{
		{"/v1/echoes", `{"text":`, []any{"body"}, "json_invalid"},
		{"/v1/echoes/seven", "", []any{"path", "id"}, "type_error"},
		{"/v1/echoes/7?limit=many", "", []any{"query", "limit"}, "type_error"},
	}
	for _, tt := range tests {
		method := "GET"
		if tt.body != "" {
			method = "POST"
		}
		got := h.do(t, method, tt.path, tt.body, nil)
		var body struct {
			Detail []struct {
				Loc  []any  `json:"loc"`
				Msg  string `json:"msg"`
				Type string `json:"type"`
			} `json:"detail"`
		}
		if err := json.Unmarshal([]byte(got.body), &body); err != nil || len(body.Detail) != 1 {
			t.Fatalf("%s: body %s is not an HTTPValidationError", tt.path, got.body)
		}
		d := body.Detail[0]
		if !equalJSON(d.Loc, tt.wantLoc) || d.Type != tt.wantType || d.Msg == "" {
			t.Errorf("%s: got loc %v type %q msg %q, want loc %v type %q", tt.path, d.Loc, d.Type, d.Msg, tt.wantLoc, tt.wantType)
		}
	}
}

func TestDecodingErrorsDetailStringShape(t *testing.T) {
	t.Parallel()
	h := start(t, gateway.DetailString)
	got := h.do(t, "POST", "/v1/echoes", `{"text":`, nil)
	if got.status != 422 {
		t.Fatalf("status: got %d, want 422", got.status)
	}
	if d, ok := got.json(t)["detail"].(string); !ok || d == "" {
		t.Errorf("detail: got %s, want a non-empty string", got.body)
	}
}

func TestProbes(t *testing.T) {
	t.Parallel()
	h := start(t, gateway.FastAPI)
	if got := h.do(t, "GET", "/healthz", "", nil); got.status != 200 || got.json(t)["status"] != "ok" {
		t.Fatalf("/healthz: got %d %s, want 200 ok", got.status, got.body)
	}
	if got := h.do(t, "GET", "/readyz", "", nil); got.status != 200 {
		t.Fatalf("/readyz while ready: got %d %s, want 200", got.status, got.body)
	}
	h.ready.Store(false)
	got := h.do(t, "GET", "/readyz", "", nil)
	if got.status != 503 {
		t.Fatalf("/readyz while the database is down: got %d, want 503", got.status)
	}
	assertJSON(t, got.body, `{"status":"not_ready","checks":{"database":"unavailable"}}`)
	if strings.Contains(got.body, "10.0.0.7") {
		t.Errorf("readiness body leaks the cause: %s", got.body)
	}
	if got := h.do(t, "GET", "/healthz", "", nil); got.status != 200 {
		t.Errorf("/healthz must not follow readiness: got %d", got.status)
	}
	h.ready.Store(true)
	if got := h.do(t, "GET", "/readyz", "", nil); got.status != 200 {
		t.Errorf("/readyz after recovery: got %d, want 200", got.status)
	}
}

func TestGRPC(t *testing.T) {
	t.Parallel()
	h := start(t, gateway.FastAPI)
	conn := h.dial(t)
	ctx := context.Background()

	hc, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health: got %v %v, want SERVING", hc.GetStatus(), err)
	}
	build, err := platformv1.NewBuildServiceClient(conn).GetBuild(ctx, &platformv1.GetBuildRequest{})
	if err != nil || build.GetService() != "echo" || build.GetGoVersion() == "" {
		t.Fatalf("GetBuild: got %v %v", build, err)
	}

	echo := platformtestv1.NewEchoServiceClient(conn)
	_, err = echo.GetEcho(ctx, &platformtestv1.GetEchoRequest{Id: 1, Fail: "api"})
	st := status.Convert(err)
	if st.Code() != codes.FailedPrecondition {
		t.Errorf("documented 402 over gRPC: got code %v, want FailedPrecondition", st.Code())
	}
	if he, ok := apierror.FromStatus(st); !ok || he.Status != 402 {
		t.Errorf("documented 402 over gRPC: HttpError detail missing or wrong: %v", he)
	}
	for _, fail := range []string{"internal", "panic"} {
		_, err = echo.GetEcho(ctx, &platformtestv1.GetEchoRequest{Id: 1, Fail: fail})
		st = status.Convert(err)
		if st.Code() != codes.Internal || strings.Contains(st.Message(), "hunter2") {
			t.Errorf("%s over gRPC: got %v %q, want Internal without the cause", fail, st.Code(), st.Message())
		}
	}
}

func TestGracefulShutdownDrainsInFlightRequests(t *testing.T) {
	t.Parallel()
	h := start(t, gateway.FastAPI)
	result := make(chan response, 1)
	go func() { result <- h.do(t, "GET", "/v1/echoes/3?fail=slow", "", nil) }()
	select {
	case <-h.echo.started:
	case <-time.After(5 * time.Second):
		t.Fatal("slow call never started")
	}
	h.stop() // what SIGTERM does through signal.NotifyContext

	select {
	case got := <-result:
		if got.status != 200 {
			t.Fatalf("in-flight request: got %d %s, want 200", got.status, got.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight request never finished")
	}
	select {
	case err := <-h.done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after draining")
	}
	h.done <- nil // for the cleanup
	if _, err := http.Get(h.base + "/healthz"); err == nil {
		t.Error("server still accepts requests after shutdown")
	}
}

func assertJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("body %q is not JSON: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %q is not JSON: %v", want, err)
	}
	if !equalJSON(g, w) {
		t.Errorf("body: got %s, want %s", got, want)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestInProcessConnection calls the registered services the way a plain handler of the same process
// does (the scoring MCP endpoint): through the service's interceptors, so that errors are mapped as
// for a gateway or gRPC caller.
func TestInProcessConnection(t *testing.T) {
	t.Parallel()
	h := start(t, gateway.FastAPI)
	echo := platformtestv1.NewEchoServiceClient(h.srv.InProcess())
	ctx := context.Background()

	resp, err := echo.GetEcho(ctx, &platformtestv1.GetEchoRequest{Id: 9, Limit: 3})
	if err != nil || resp.GetId() != 9 || resp.GetLimit() != 3 {
		t.Fatalf("GetEcho: got %v %v, want id 9 limit 3", resp, err)
	}
	// A documented error keeps its HTTP status and body; an internal one is mapped to a bare Internal
	// by the error interceptor, and a panic is recovered: both without their cause.
	_, err = echo.GetEcho(ctx, &platformtestv1.GetEchoRequest{Fail: "api"})
	if he, ok := apierror.FromStatus(status.Convert(err)); !ok || he.Status != 402 {
		t.Fatalf("documented 402 in process: got %v, want an HttpError detail with 402", err)
	}
	for _, fail := range []string{"internal", "panic"} {
		_, err = echo.GetEcho(ctx, &platformtestv1.GetEchoRequest{Fail: fail})
		if st := status.Convert(err); st.Code() != codes.Internal || strings.Contains(st.Message(), "hunter2") {
			t.Errorf("%s in process: got %v %q, want Internal without the cause", fail, st.Code(), st.Message())
		}
	}
}

// TestCallLogs: a call over gRPC gets the gRPC call log's line; a request through the gateway, whose
// call runs in process, gets the HTTP access log's line only.
func TestCallLogs(t *testing.T) {
	t.Parallel()
	h := start(t, gateway.FastAPI)
	if _, err := platformtestv1.NewEchoServiceClient(h.dial(t)).GetEcho(context.Background(), &platformtestv1.GetEchoRequest{Id: 1}); err != nil {
		t.Fatal(err)
	}
	if r := h.do(t, "GET", "/v1/echoes/2", "", nil); r.status != 200 {
		t.Fatalf("GET /v1/echoes/2: %d %s", r.status, r.body)
	}
	var calls, requests []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		switch m["msg"] {
		case "finished call":
			calls = append(calls, m)
		case "http request":
			requests = append(requests, m)
		}
	}
	if len(calls) != 1 || calls[0]["grpc.method"] != "GetEcho" || calls[0]["grpc.code"] != "OK" {
		t.Errorf("gRPC call log lines: %v, want one for GetEcho with code OK", calls)
	}
	if len(requests) != 1 || requests[0]["path"] != "/v1/echoes/2" {
		t.Errorf("access log lines: %v, want one for /v1/echoes/2", requests)
	}
}
