package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/trustlayer/trustlayer/pkg/telemetry"
)

// Not parallel: Setup installs the global meter provider, which TestSetup replaces too.
func TestPrometheusBridgesOTelMetrics(t *testing.T) {
	t.Setenv(telemetry.EndpointVar, "")
	prom, err := telemetry.NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	shutdown, err := telemetry.Setup(context.Background(), os.Getenv, "demo", "1.0.0", telemetry.WithReader(prom.Reader()))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	counter, err := otel.Meter("demo").Int64Counter("demo.calls", metric.WithUnit("{call}"))
	if err != nil {
		t.Fatal(err)
	}
	counter.Add(context.Background(), 3, metric.WithAttributes(attribute.String("route_id", "unified_score")))

	srv := httptest.NewServer(prom.Handler())
	defer srv.Close()
	// Whatever the scraper asks for, the answer is the 0.0.4 text format.
	for _, accept := range []string{
		"",
		"application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
		"text/plain;version=1.0.0;escaping=allow-utf-8",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
	} {
		req, _ := http.NewRequest("GET", srv.URL, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Content-Type"); got != "text/plain; version=0.0.4; charset=utf-8" {
			t.Errorf("Accept %q: Content-Type %q, want text/plain; version=0.0.4; charset=utf-8", accept, got)
		}
		for _, want := range []string{
			`demo_calls_total{route_id="unified_score"} 3`,
			"# TYPE go_goroutines gauge",
			"# TYPE process_cpu_seconds_total counter",
			`target_info{service_name="demo"`,
		} {
			if !strings.Contains(string(body), want) {
				t.Errorf("Accept %q: body lacks %q:\n%s", accept, want, body)
			}
		}
	}
}
