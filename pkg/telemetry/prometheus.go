package telemetry

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// PrometheusContentType is the one Content-Type the Prometheus handler answers with: the text
// exposition format 0.0.4 of the Prometheus exposition formats, which every scraper reads.
const PrometheusContentType = string(expfmt.FmtText)

// Prometheus is a pull exporter: the service's OpenTelemetry metrics (bridged by the OTel Prometheus
// exporter, which reads the meter provider at each scrape) plus the Go runtime and process
// collectors, in a registry of its own. A registry per Prometheus, not the process-wide default, so
// that several services started in one test process each show only their own metrics.
type Prometheus struct {
	registry *prometheus.Registry
	reader   sdkmetric.Reader
}

// NewPrometheus builds the registry and the OTel reader that feeds it. Pass Reader to Setup (WithReader)
// so that the meter provider reports to it.
func NewPrometheus() (*Prometheus, error) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(collectors.NewGoCollector()); err != nil {
		return nil, fmt.Errorf("prometheus Go collector: %w", err)
	}
	if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
		return nil, fmt.Errorf("prometheus process collector: %w", err)
	}
	// Scope info is left out: it would add otel_scope_* labels to every series without telling an
	// operator more than the metric's name does.
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	return &Prometheus{registry: reg, reader: exporter}, nil
}

// Reader is the metric reader to install in the meter provider.
func (p *Prometheus) Reader() sdkmetric.Reader { return p.reader }

// Gatherer collects the current metric families (for JSON snapshots built from the same numbers).
func (p *Prometheus) Gatherer() prometheus.Gatherer { return p.registry }

// Handler serves the metrics in the text format 0.0.4 whatever the request's Accept header asks:
// scoring's README ("Operations") documents that content type, so neither OpenMetrics nor the newer
// text formats that Prometheus 3 scrapers ask for are negotiated. Access control is the caller's (wrap
// the handler).
func (p *Prometheus) Handler() http.Handler {
	h := promhttp.HandlerFor(p.registry, promhttp.HandlerOpts{
		AcceptedFormats: []expfmt.Format{expfmt.FmtText},
		ErrorHandling:   promhttp.ContinueOnError,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&fixedContentType{ResponseWriter: w}, r)
	})
}

// fixedContentType drops the escaping parameter promhttp appends to the text format's content type
// ("; escaping=underscores"): the names it writes are plain 0.0.4 names either way, and the
// documented header is exactly PrometheusContentType.
type fixedContentType struct {
	http.ResponseWriter
	wrote bool
}

func (f *fixedContentType) fix() {
	if f.wrote {
		return
	}
	f.wrote = true
	if ct := f.Header().Get("Content-Type"); strings.HasPrefix(ct, PrometheusContentType) {
		f.Header().Set("Content-Type", PrometheusContentType)
	}
}

func (f *fixedContentType) WriteHeader(code int) {
	f.fix()
	f.ResponseWriter.WriteHeader(code)
}

func (f *fixedContentType) Write(b []byte) (int, error) {
	f.fix()
	return f.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (f *fixedContentType) Unwrap() http.ResponseWriter { return f.ResponseWriter }
