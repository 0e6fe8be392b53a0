package serve

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/httpconv"
	"go.opentelemetry.io/otel/trace"
)

// scopeName names this package's tracer and meter.
const scopeName = "github.com/trustlayer/trustlayer/pkg/serve"

// observer gives every HTTP request a server span (continuing the caller's W3C trace context), the
// semantic-convention HTTP server metrics (http.server.request.duration and the two body sizes) and
// one access-log line.
//
// It is written here on the OpenTelemetry API rather than taken from otelhttp, which the services
// used first. otelhttp builds, sorts and hashes each request's metric attribute set anew, grows the
// span's attribute slice when it adds the response's attributes, and wraps the writer twice: a
// fifth of POST /v1/score's CPU, and with it twice the baseline's share of open-loop requests
// slower than 5 ms (scoring-bench; docs/performance.md). Here the metric
// attribute sets are built once per route, method and status, and one writer wrapper serves the
// span, the metrics and the log.
type observer struct {
	service    string
	log        *slog.Logger
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	duration   httpconv.ServerRequestDuration
	reqSize    httpconv.ServerRequestBodySize
	respSize   httpconv.ServerResponseBodySize
	series     sync.Map // seriesKey -> *series
}

func newObserver(service string, log *slog.Logger, tp trace.TracerProvider, mp metric.MeterProvider, prop propagation.TextMapPropagator) (*observer, error) {
	meter := mp.Meter(scopeName)
	o := &observer{service: service, log: log, tracer: tp.Tracer(scopeName), propagator: prop}
	var err error
	// The bucket boundaries the semantic conventions recommend for durations in seconds.
	if o.duration, err = httpconv.NewServerRequestDuration(meter, metric.WithExplicitBucketBoundaries(
		0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10)); err != nil {
		return nil, err
	}
	if o.reqSize, err = httpconv.NewServerRequestBodySize(meter); err != nil {
		return nil, err
	}
	if o.respSize, err = httpconv.NewServerResponseBodySize(meter); err != nil {
		return nil, err
	}
	return o, nil
}

// exchange is the response writer every handler gets: it remembers the status and the size of the
// answer, and the route that served it (set by Handle's handlers and by the gateway's middleware).
type exchange struct {
	http.ResponseWriter
	status int
	bytes  int64
	route  string
	attrs  [13]attribute.KeyValue // room for the span's attributes, allocated with the exchange
}

func (x *exchange) WriteHeader(code int) {
	if x.status == 0 {
		x.status = code
	}
	x.ResponseWriter.WriteHeader(code)
}

func (x *exchange) Write(b []byte) (int, error) {
	if x.status == 0 {
		x.status = http.StatusOK
	}
	n, err := x.ResponseWriter.Write(b)
	x.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach Flush and deadlines (MCP streams need them).
func (x *exchange) Unwrap() http.ResponseWriter { return x.ResponseWriter }

// nameRoute records route as the one that served the request. The writer a handler gets is the
// observer's own: Server.Handle's handlers and the gateway's middleware sit between it and the
// handler, and neither wraps the writer.
func nameRoute(w http.ResponseWriter, route string) {
	if x, ok := w.(*exchange); ok {
		x.route = route
	}
}

// gatewayRoutes is the gateway middleware that names the route of each call: the route's template
// (for example /v1/workflows/{workflow}/schema), worked out on the route's first call.
func gatewayRoutes(next runtime.HandlerFunc) runtime.HandlerFunc {
	var route atomic.Pointer[string]
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		p := route.Load()
		if p == nil {
			if pat, ok := runtime.HTTPPattern(r.Context()); ok {
				// Pattern.String writes captures as {name=*}; http.route wants {name}.
				s := strings.ReplaceAll(pat.String(), "=*}", "}")
				p = &s
				route.Store(p)
			}
		}
		if p != nil {
			nameRoute(w, *p)
		}
		next(w, r, params)
	}
}

func (o *observer) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := o.propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		// The span's attributes are all set at its end, in one call: the SDK copies them once, where
		// attributes at the start and more at the end cost three copies and a growth of the span's
		// slice. Only an attribute-based sampler would see the difference, and none is configured
		// (OTEL_TRACES_SAMPLER's samplers decide on the trace id and the parent).
		ctx, span := o.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer))
		x := exchanges.Get().(*exchange)
		x.ResponseWriter = w
		r = r.WithContext(ctx)
		// Deferred so that a request net/http aborts (http.ErrAbortHandler) still ends its span.
		defer o.finish(ctx, span, x, r, start)
		next.ServeHTTP(x, r)
	})
}

// exchanges recycles the writers: with its room for attributes, an exchange was the largest single
// allocation of a scoring request (0.9 of its 15 KB). Reuse is safe because net/http forbids using a
// ResponseWriter after ServeHTTP returns, and finish, the last to touch one, puts it back.
var exchanges = sync.Pool{New: func() any { return new(exchange) }}

func (o *observer) finish(ctx context.Context, span trace.Span, x *exchange, r *http.Request, start time.Time) {
	elapsed := time.Since(start)
	status := x.status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http answers 200 with an empty body
	}
	k := seriesKey{method: standardMethod(r.Method), route: x.route, status: status, scheme: scheme(r), version: protocolVersion(r)}
	s := o.seriesOf(k)
	span.SetName(s.spanName)
	span.SetAttributes(append(requestAttributes(x.attrs[:0], r, k), s.spanAttrs...)...)
	if status >= 500 {
		span.SetStatus(codes.Error, "") // a server's 4xx is the client's error, not the span's
	}
	span.End()

	o.duration.RecordSet(ctx, elapsed.Seconds(), s.set)
	o.respSize.RecordSet(ctx, x.bytes, s.set)
	if r.ContentLength >= 0 { // unknown for a chunked body, which is left out rather than counted
		o.reqSize.RecordSet(ctx, r.ContentLength, s.set)
	}

	level := slog.LevelInfo
	switch {
	case r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/health":
		// Probes arrive every few seconds and would drown the log, failing ones too: the readiness
		// watcher logs what fails.
		level = slog.LevelDebug
	case status >= 500:
		level = slog.LevelError
	}
	if o.log.Enabled(ctx, level) { // before the arguments are built: at warn, the hot path writes no line
		// The query string is left out: it can carry tokens and identifiers.
		o.log.Log(ctx, level, "http request",
			"method", r.Method, "path", r.URL.Path, "status", status, "bytes", x.bytes,
			"duration_ms", elapsed.Milliseconds(), "request_id", r.Header.Get("X-Request-Id"))
	}
	*x = exchange{}
	exchanges.Put(x)
}

// requestAttributes appends the span's attributes that describe the request, k being its series. The
// query string is left out: it can carry tokens.
func requestAttributes(attrs []attribute.KeyValue, r *http.Request, k seriesKey) []attribute.KeyValue {
	attrs = append(attrs, semconv.HTTPRequestMethodKey.String(k.method))
	if k.method == methodOther {
		attrs = append(attrs, semconv.HTTPRequestMethodOriginal(r.Method))
	}
	attrs = append(attrs, semconv.URLScheme(k.scheme), semconv.URLPath(r.URL.Path),
		semconv.NetworkProtocolVersion(k.version))
	if host, port := splitHostPort(r.Host); host != "" {
		attrs = append(attrs, semconv.ServerAddress(host))
		if port > 0 {
			attrs = append(attrs, semconv.ServerPort(port))
		}
	}
	if host, port := splitHostPort(r.RemoteAddr); host != "" {
		attrs = append(attrs, semconv.NetworkPeerAddress(host))
		if port > 0 {
			attrs = append(attrs, semconv.NetworkPeerPort(port))
		}
	}
	if ua := r.UserAgent(); ua != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(ua))
	}
	return attrs
}

// seriesKey is what a request's metric attributes are made of. Each part takes few values: methods
// outside the standard set collapse into _OTHER, and routes are the registered templates, never the
// path itself, so a client cannot make the number of series grow.
type seriesKey struct {
	method  string // standardMethod's
	route   string
	status  int
	scheme  string
	version string
}

// series is what a request's outcome adds to its span and its metrics, built on its key's first
// request.
type series struct {
	spanName  string
	spanAttrs []attribute.KeyValue
	set       attribute.Set
}

func (o *observer) seriesOf(k seriesKey) *series {
	if s, ok := o.series.Load(k); ok {
		return s.(*series)
	}
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(k.method),
		semconv.URLScheme(k.scheme),
		semconv.ServerAddress(o.service),
		semconv.NetworkProtocolName("http"),
		semconv.NetworkProtocolVersion(k.version),
		semconv.HTTPResponseStatusCode(k.status),
	}
	s := &series{spanName: k.method, spanAttrs: []attribute.KeyValue{semconv.HTTPResponseStatusCode(k.status)}}
	if k.method == methodOther {
		s.spanName = "HTTP" // the conventions' span name for a method outside the standard set
	}
	if k.route != "" {
		attrs = append(attrs, semconv.HTTPRoute(k.route))
		s.spanName += " " + k.route
		s.spanAttrs = append(s.spanAttrs, semconv.HTTPRoute(k.route))
	}
	if k.status >= 500 {
		errType := semconv.ErrorTypeKey.String(strconv.Itoa(k.status))
		attrs = append(attrs, errType)
		s.spanAttrs = append(s.spanAttrs, errType)
	}
	s.set = attribute.NewSet(attrs...)
	actual, _ := o.series.LoadOrStore(k, s)
	return actual.(*series)
}

// standardMethod is the method as the semantic conventions record it: one of the methods HTTP
// defines, or _OTHER.
func standardMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return methodOther
}

// methodOther is http.request.method for a method outside the standard set.
const methodOther = "_OTHER"

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// protocolVersion is the request's HTTP version as network.protocol.version has it. net/http serves
// HTTP/1.2 and later minors as 1.1, and so are they counted: a client cannot add series.
func protocolVersion(r *http.Request) string {
	switch {
	case r.ProtoMajor == 2:
		return "2"
	case r.ProtoMajor == 1 && r.ProtoMinor == 0:
		return "1.0"
	}
	return "1.1"
}

// splitHostPort splits "host:port" (a Host header or a remote address); port is -1 when absent or
// not a number.
func splitHostPort(hostport string) (string, int) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport, -1
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return host, -1
	}
	return host, p
}
