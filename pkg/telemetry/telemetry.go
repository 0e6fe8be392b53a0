// Package telemetry sets up OpenTelemetry tracing and metrics for a service. With
// OTEL_EXPORTER_OTLP_ENDPOINT set, spans and metrics are exported over OTLP/gRPC (the exporters read the
// standard OTEL_EXPORTER_OTLP_* variables themselves); without it, nothing is exported, but trace
// context still propagates across HTTP, gRPC and NATS so that logs carry trace ids, and metrics keep
// no exemplars unless OTEL_METRICS_EXEMPLAR_FILTER asks for them.
package telemetry

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/trustlayer/trustlayer/pkg/config"
)

// EndpointVar is the standard variable that turns exporting on.
const EndpointVar = "OTEL_EXPORTER_OTLP_ENDPOINT"

// ExemplarFilterVar is the standard variable that chooses which measurements keep an exemplar.
const ExemplarFilterVar = "OTEL_METRICS_EXEMPLAR_FILTER"

// Option adds to what Setup installs.
type Option func(*options)

type options struct{ readers []sdkmetric.Reader }

// WithReader adds a metric reader to the meter provider, beside the OTLP exporter when there is one:
// a pull exporter such as Prometheus's Reader.
func WithReader(r sdkmetric.Reader) Option {
	return func(o *options) { o.readers = append(o.readers, r) }
}

// exemplarFilter is the exemplar filter ExemplarFilterVar names, read through getenv like every other
// setting (the SDK would read the process's environment itself). Unset, it is the SDK's trace_based
// with an OTLP exporter and always_off without one: only OTLP carries exemplars, the Prometheus text
// format the services serve has no place for them, and with every span sampled trace_based kept one
// for each measurement of every histogram, about 5 % of a scoring request's time
// (BenchmarkScoreOverHTTP).
func exemplarFilter(getenv func(string) string) (exemplar.Filter, error) {
	switch v := getenv(ExemplarFilterVar); v {
	case "always_on":
		return exemplar.AlwaysOnFilter, nil
	case "always_off":
		return exemplar.AlwaysOffFilter, nil
	case "trace_based":
		return exemplar.TraceBasedFilter, nil
	case "":
		if getenv(EndpointVar) != "" {
			return exemplar.TraceBasedFilter, nil
		}
		return exemplar.AlwaysOffFilter, nil
	default:
		return nil, config.Invalid(ExemplarFilterVar, "must be always_on, always_off or trace_based (got %q)", v)
	}
}

// Setup installs the global tracer and meter providers and the W3C propagators. The returned function
// flushes and stops them; call it on shutdown.
func Setup(ctx context.Context, getenv func(string) string, service, version string, opts ...Option) (func(context.Context) error, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(service), semconv.ServiceVersion(version)))
	if err != nil {
		return nil, fmt.Errorf("telemetry resource: %w", err)
	}
	traceOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	meterOpts := []sdkmetric.Option{sdkmetric.WithResource(res)}
	if getenv(EndpointVar) != "" {
		traces, err := otlptracegrpc.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		metrics, err := otlpmetricgrpc.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP metric exporter: %w", err)
		}
		traceOpts = append(traceOpts, sdktrace.WithBatcher(traces))
		meterOpts = append(meterOpts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics)))
	}
	for _, r := range o.readers {
		meterOpts = append(meterOpts, sdkmetric.WithReader(r))
	}
	filter, err := exemplarFilter(getenv)
	if err != nil {
		return nil, err
	}
	meterOpts = append(meterOpts, sdkmetric.WithExemplarFilter(filter))
	tp := sdktrace.NewTracerProvider(traceOpts...)
	mp := sdkmetric.NewMeterProvider(meterOpts...)
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	return func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}, nil
}
