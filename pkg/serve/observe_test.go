package serve_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/trustlayer/trustlayer/pkg/serve"
	"github.com/trustlayer/trustlayer/pkg/servicetest"
	platformtestv1 "github.com/trustlayer/trustlayer/proto/platformtest/v1"
)

// observed is a server whose spans, metrics and access log a test reads.
type observed struct {
	base    string
	spans   *tracetest.SpanRecorder
	metrics *sdkmetric.ManualReader
	logs    *servicetest.Logs
}

func startObserved(t *testing.T) *observed {
	t.Helper()
	o := &observed{spans: tracetest.NewSpanRecorder(), metrics: sdkmetric.NewManualReader(), logs: &servicetest.Logs{}}
	srv, err := serve.New(serve.Config{
		Name: "echo", HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0", ShutdownTimeout: 5 * time.Second,
		Logger:         slog.New(slog.NewJSONHandler(o.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(o.spans)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.metrics)),
		Propagator:     propagation.TraceContext{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Register(&platformtestv1.EchoService_ServiceDesc, &echoServer{}, serve.Gateway(platformtestv1.RegisterEchoServiceHandlerClient, platformtestv1.NewEchoServiceClient)); err != nil {
		t.Fatal(err)
	}
	srv.Handle("GET /pages/{name}", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("hello"))
	}))
	srv.Handle("GET /boom", http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	o.base = "http://" + srv.HTTPAddr()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return o
}

func (o *observed) send(t *testing.T, method, path string, header map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(method, o.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// TestRequestSpans checks each request's server span: named after its route (never its path), a child
// of the caller's trace context, with the semantic conventions' attributes, and an error only for 5xx.
func TestRequestSpans(t *testing.T) {
	o := startObserved(t)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, tc := range []struct {
		method, path string
		header       map[string]string
		status       int
		name         string
		want         map[string]string // attributes the span has ("" : must not have)
		failed       bool
	}{
		{"GET", "/v1/echoes/7", map[string]string{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}, 200, "GET /v1/echoes/{id}",
			map[string]string{"http.route": "/v1/echoes/{id}", "url.path": "/v1/echoes/7", "http.request.method": "GET",
				"http.response.status_code": "200", "url.scheme": "http", "server.address": "127.0.0.1",
				"network.protocol.version": "1.1", "network.peer.address": "127.0.0.1", "url.query": "", "error.type": ""}, false},
		{"GET", "/v1/echoes/7?fail=internal", nil, 500, "GET /v1/echoes/{id}",
			map[string]string{"http.route": "/v1/echoes/{id}", "http.response.status_code": "500", "error.type": "500"}, true},
		{"GET", "/v1/echoes/7?fail=validation", nil, 422, "GET /v1/echoes/{id}",
			map[string]string{"http.response.status_code": "422", "error.type": ""}, false},
		{"GET", "/pages/intro", nil, 200, "GET /pages/{name}",
			map[string]string{"http.route": "/pages/{name}", "url.path": "/pages/intro"}, false},
		{"GET", "/boom", nil, 500, "GET /boom", map[string]string{"http.route": "/boom", "error.type": "500"}, true},
		{"GET", "/nowhere", nil, 404, "GET", map[string]string{"http.route": "", "url.path": "/nowhere"}, false},
		{"PURGE", "/nowhere", nil, 404, "HTTP",
			map[string]string{"http.request.method": "_OTHER", "http.request.method_original": "PURGE"}, false},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			o.spans.Reset()
			if got := o.send(t, tc.method, tc.path, tc.header); got != tc.status {
				t.Fatalf("status %d, want %d", got, tc.status)
			}
			ended := o.spans.Ended()
			if len(ended) != 1 {
				t.Fatalf("%d spans ended, want 1", len(ended))
			}
			span := ended[0]
			if span.Name() != tc.name || span.SpanKind() != trace.SpanKindServer {
				t.Errorf("span %q of kind %v, want %q of kind server", span.Name(), span.SpanKind(), tc.name)
			}
			got := attrs(span.Attributes())
			for k, v := range tc.want {
				if have, ok := got[k]; v == "" && ok || v != "" && have != v {
					t.Errorf("attribute %s = %q (present %v), want %q", k, have, ok, v)
				}
			}
			if failed := span.Status().Code == codes.Error; failed != tc.failed {
				t.Errorf("span status %v, want error %v", span.Status(), tc.failed)
			}
			if tc.header != nil {
				if span.SpanContext().TraceID().String() != traceID || !span.Parent().IsRemote() {
					t.Errorf("span %v with parent %v does not continue the caller's trace", span.SpanContext(), span.Parent())
				}
			}
		})
	}
}

// TestRequestMetrics checks http.server.request.duration: one series per route, method and status,
// with the attributes GET /metrics.json reads, and methods outside the standard set in one series.
func TestRequestMetrics(t *testing.T) {
	o := startObserved(t)
	for _, path := range []string{"/v1/echoes/1", "/v1/echoes/2", "/pages/a"} {
		o.send(t, "GET", path, nil)
	}
	o.send(t, "PURGE", "/x", nil)
	o.send(t, "FROB", "/y", nil)
	o.send(t, "GET", "/v1/echoes/3?fail=internal", nil)

	var rm metricdata.ResourceMetrics
	if err := o.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	sizes := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "http.server.request.duration":
				if m.Unit != "s" {
					t.Errorf("unit %q, want s", m.Unit)
				}
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					a := attrs(dp.Attributes.ToSlice())
					key := a["http.request.method"] + " " + a["http.route"] + " " + a["http.response.status_code"]
					if a["server.address"] != "echo" || a["url.scheme"] != "http" || a["network.protocol.version"] != "1.1" {
						t.Errorf("series %s has attributes %v", key, a)
					}
					if a["http.response.status_code"] == "500" && a["error.type"] != "500" {
						t.Errorf("series %s has no error.type", key)
					}
					counts[key] += dp.Count
				}
			case "http.server.response.body.size", "http.server.request.body.size":
				sizes++
			}
		}
	}
	want := map[string]uint64{"GET /v1/echoes/{id} 200": 2, "GET /pages/{name} 200": 1, "_OTHER  404": 2, "GET /v1/echoes/{id} 500": 1}
	if len(counts) != len(want) {
		t.Errorf("series %v, want %v", counts, want)
	}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("series %q counted %d requests, want %d (all: %v)", k, counts[k], n, counts)
		}
	}
	if sizes != 2 {
		t.Errorf("%d body-size histograms, want 2", sizes)
	}
}

// TestAccessLog checks the access-log line: one per request, its level by outcome, no query string.
func TestAccessLog(t *testing.T) {
	o := startObserved(t)
	o.send(t, "GET", "/pages/a?token=secret", map[string]string{"X-Request-Id": "req-1"})
	o.send(t, "GET", "/boom", nil)
	o.send(t, "GET", "/healthz", nil)
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(o.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == "http request" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 3 {
		t.Fatalf("%d access-log lines, want 3: %s", len(lines), o.logs.String())
	}
	for i, want := range []struct {
		level, path string
		status      float64
	}{{"INFO", "/pages/a", 200}, {"ERROR", "/boom", 500}, {"DEBUG", "/healthz", 200}} {
		l := lines[i]
		if l["level"] != want.level || l["path"] != want.path || l["status"] != want.status {
			t.Errorf("line %d: %v, want level %s path %s status %v", i, l, want.level, want.path, want.status)
		}
	}
	if lines[0]["bytes"] != float64(5) || lines[0]["request_id"] != "req-1" {
		t.Errorf("line %v: want 5 bytes and request_id req-1", lines[0])
	}
	if strings.Contains(o.logs.String(), "secret") {
		t.Error("the query string reached the log")
	}
}
