package telemetry_test

import (
	"context"
	"net"
	"os"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/trustlayer/trustlayer/pkg/telemetry"
)

// collector is an OTLP trace receiver on loopback that remembers what it was sent.
type collector struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans map[string]string // span name -> service.name of its resource
}

func (c *collector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans[s.GetName()] = service
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// exemplars records one histogram measurement inside a sampled span, through the global meter provider
// that Setup installed, and returns how many exemplars reader collected.
func exemplars(t *testing.T, reader *sdkmetric.ManualReader) int {
	t.Helper()
	ctx, span := otel.Tracer("test").Start(context.Background(), "measured")
	defer span.End()
	h, err := otel.Meter("test").Float64Histogram("work.duration")
	if err != nil {
		t.Fatal(err)
	}
	h.Record(ctx, 1.5)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if hist, ok := m.Data.(metricdata.Histogram[float64]); ok {
				for _, dp := range hist.DataPoints {
					n += len(dp.Exemplars)
				}
			}
		}
	}
	return n
}

func TestExemplarsOnlyWhereTheyCanBeExported(t *testing.T) {
	for _, tc := range []struct {
		name, filter string
		want         int
	}{
		{"off without an OTLP exporter", "", 0},
		{"the standard variable still turns them on", "always_on", 1},
		{"the SDK's own default keeps one for a sampled span", "trace_based", 1},
		{"and the variable turns them off", "always_off", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The variable counts as Setup's getenv reports it, not as the process's environment has it.
			t.Setenv(telemetry.ExemplarFilterVar, "always_on")
			env := map[string]string{telemetry.ExemplarFilterVar: tc.filter}
			reader := sdkmetric.NewManualReader()
			shutdown, err := telemetry.Setup(context.Background(), func(k string) string { return env[k] }, "demo", "1.0.0", telemetry.WithReader(reader))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = shutdown(context.Background()) }()
			if got := exemplars(t, reader); got != tc.want {
				t.Errorf("got %d exemplars, want %d", got, tc.want)
			}
		})
	}
}

func TestSetupRefusesAnUnknownExemplarFilter(t *testing.T) {
	env := map[string]string{telemetry.ExemplarFilterVar: "sometimes"}
	_, err := telemetry.Setup(context.Background(), func(k string) string { return env[k] }, "demo", "1.0.0")
	if err == nil || !strings.Contains(err.Error(), "OTEL_METRICS_EXEMPLAR_FILTER: must be always_on, always_off or trace_based") {
		t.Fatalf("Setup with %s=sometimes: %v, want an error naming the variable and its values", telemetry.ExemplarFilterVar, err)
	}
}

// The two cases share the global tracer provider, so they run in sequence, never in parallel.
func TestSetup(t *testing.T) {
	t.Run("without an endpoint nothing is exported but spans carry trace ids", func(t *testing.T) {
		t.Setenv(telemetry.EndpointVar, "")
		shutdown, err := telemetry.Setup(context.Background(), os.Getenv, "demo", "1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		_, span := otel.Tracer("test").Start(context.Background(), "work")
		if !trace.SpanContextFromContext(trace.ContextWithSpan(context.Background(), span)).IsValid() {
			t.Error("span has no valid trace id")
		}
		span.End()
		if err := shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("with an endpoint spans reach the collector", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		c := &collector{spans: map[string]string{}}
		srv := grpc.NewServer()
		collectortrace.RegisterTraceServiceServer(srv, c)
		go func() { _ = srv.Serve(ln) }()
		defer srv.Stop()

		t.Setenv(telemetry.EndpointVar, "http://"+ln.Addr().String())
		t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
		t.Setenv("OTEL_METRICS_EXPORTER", "none")
		shutdown, err := telemetry.Setup(context.Background(), os.Getenv, "demo", "1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		_, span := otel.Tracer("test").Start(context.Background(), "exported-work")
		span.End()
		// Shutdown flushes the batcher; the metric exporter has no receiver here and may complain.
		_ = shutdown(context.Background())
		c.mu.Lock()
		defer c.mu.Unlock()
		if got := c.spans["exported-work"]; got != "demo" {
			t.Errorf("collector got spans %v, want exported-work from service demo", c.spans)
		}
	})
}
