// Package serve is the server bootstrap every service shares: one gRPC listener and one HTTP listener
// (grpc-gateway JSON plus plain handlers), interceptors for panic recovery, logging, OpenTelemetry and
// error mapping, the probes, the gRPC health service, and a graceful shutdown that drains in-flight
// requests.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/net/netutil"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/trustlayer/trustlayer/pkg/buildinfo"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/periodic"
	platformv1 "github.com/trustlayer/trustlayer/proto/platform/v1"
)

// Check reports whether one dependency the service needs to answer requests is usable.
type Check func(context.Context) error

// Config describes one service's servers.
type Config struct {
	// Name is the service name, used in logs, traces and GET /v1/build.
	Name     string
	HTTPAddr string
	GRPCAddr string
	// ShutdownTimeout bounds how long in-flight requests may drain after the context ends.
	ShutdownTimeout time.Duration
	// MaxBodyBytes caps every request body (0: DefaultMaxBodyBytes); Routes raise it, or change the
	// write timeout, for the routes that need it.
	MaxBodyBytes int64
	Routes       []RouteLimits
	// The HTTP server's timeouts (0: the Default ones): ReadHeaderTimeout bounds reading the headers,
	// ReadTimeout the whole request with its body, WriteTimeout the answer (from the end of the
	// headers), IdleTimeout a kept-alive connection between requests.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// MaxConnections bounds the HTTP connections open at once (0: DefaultMaxConnections); further
	// clients wait in the listen backlog until one closes.
	MaxConnections int
	Logger         *slog.Logger
	// Readiness checks, by name, behind GET /readyz and the gRPC health service. /healthz only says
	// the process serves.
	Readiness map[string]Check
	// Gateway configures the JSON gateway (headers to forward, validation style).
	Gateway []gateway.Option
	// Unary interceptors the service adds (authentication), run after logging and error mapping.
	Unary []grpc.UnaryServerInterceptor
	// TracerProvider and MeterProvider receive the servers' spans and metrics, and Propagator reads
	// the callers' trace context; nil means the global ones (telemetry.Setup installs them).
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagator     propagation.TextMapPropagator
}

// Server owns a service's listeners until Run returns.
type Server struct {
	cfg     Config
	log     *slog.Logger
	grpc    *grpc.Server
	health  *health.Server
	gateway *runtime.ServeMux
	mux     *http.ServeMux
	inproc  *inProcess
	observe *observer
	httpLn  net.Listener
	grpcLn  net.Listener
	ctx     context.Context

	routesMu        sync.Mutex
	gatewayServices []string          // registered services whose HTTP rules the gateway serves
	gatewayMethods  map[string]string // "METHOD /path/{template}" -> the rule's gRPC method
	plainRoutes     []Route           // patterns given to Handle, and the probes
}

// New opens both listeners (so an address ":0" is resolved before Run) and builds the servers. The
// caller registers its services, then calls Run.
func New(cfg Config) (*Server, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 20 * time.Second
	}
	setDefault(&cfg.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	setDefault(&cfg.ReadTimeout, DefaultReadTimeout)
	setDefault(&cfg.WriteTimeout, DefaultWriteTimeout)
	setDefault(&cfg.IdleTimeout, DefaultIdleTimeout)
	setDefault(&cfg.MaxConnections, DefaultMaxConnections)
	if cfg.TracerProvider == nil {
		cfg.TracerProvider = otel.GetTracerProvider()
	}
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = otel.GetMeterProvider()
	}
	if cfg.Propagator == nil {
		cfg.Propagator = otel.GetTextMapPropagator()
	}
	observe, err := newObserver(cfg.Name, cfg.Logger, cfg.TracerProvider, cfg.MeterProvider, cfg.Propagator)
	if err != nil {
		return nil, fmt.Errorf("HTTP server telemetry: %w", err)
	}
	grpcLn, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return nil, fmt.Errorf("listen gRPC on %s: %w", cfg.GRPCAddr, err)
	}
	httpLn, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		_ = grpcLn.Close()
		return nil, fmt.Errorf("listen HTTP on %s: %w", cfg.HTTPAddr, err)
	}
	s := &Server{cfg: cfg, log: cfg.Logger, grpcLn: grpcLn, httpLn: httpLn, mux: http.NewServeMux(), observe: observe, ctx: context.Background()}

	unary := append([]grpc.UnaryServerInterceptor{
		mapErrorsUnary(s.log),
		recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(s.recovered)),
	}, cfg.Unary...)
	s.grpc = grpc.NewServer(
		grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(cfg.TracerProvider), otelgrpc.WithMeterProvider(cfg.MeterProvider),
			otelgrpc.WithPropagators(cfg.Propagator))),
		grpc.ChainUnaryInterceptor(append([]grpc.UnaryServerInterceptor{logUnary(s.log)}, unary...)...),
		grpc.ChainStreamInterceptor(
			recovery.StreamServerInterceptor(recovery.WithRecoveryHandlerContext(s.recovered)),
		),
	)
	s.health = health.NewServer()
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)

	// The gateway calls the services in process, through the same interceptors (error mapping,
	// recovery, authentication) and with the same metadata a gRPC caller's request has, but without a
	// loopback HTTP/2 connection: serialising each call twice, HTTP/2 framing and the socket writes cost
	// three quarters of a scoring request's CPU (profile in docs/performance.md). The access
	// log is the HTTP server's, so the gRPC call log is not in this chain.
	// The HTTP request's span (observer) is the call's span: the handler runs in the request's context.
	s.inproc = newInProcess(chainUnary(unary))
	s.gateway = gateway.NewServeMux(append([]gateway.Option{gateway.WithLogger(s.log), gateway.WithMiddleware(gatewayRoutes),
		gateway.WithMiddleware(s.authenticateFirst)}, cfg.Gateway...)...)

	s.Handle("GET /healthz", http.HandlerFunc(s.serveHealthz))
	s.Handle("GET /readyz", http.HandlerFunc(s.serveReadyz))
	s.mux.Handle("/", s.gateway)
	if err := s.Register(&platformv1.BuildService_ServiceDesc, buildinfo.NewServer(cfg.Name),
		Gateway(platformv1.RegisterBuildServiceHandlerClient, platformv1.NewBuildServiceClient)); err != nil {
		return nil, err
	}
	return s, nil
}

// GatewayRegistrar registers a service's HTTP rules on the gateway, calling the service through conn.
// Gateway builds one from the generated functions.
type GatewayRegistrar func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error

// Gateway adapts a generated Register<Service>HandlerClient and New<Service>Client pair to a
// GatewayRegistrar.
func Gateway[C any](register func(context.Context, *runtime.ServeMux, C) error, newClient func(grpc.ClientConnInterface) C) GatewayRegistrar {
	return func(ctx context.Context, mux *runtime.ServeMux, conn grpc.ClientConnInterface) error {
		return register(ctx, mux, newClient(conn))
	}
}

// Register serves impl over gRPC and, when gw is not nil, its HTTP rules through the JSON gateway.
func (s *Server) Register(desc *grpc.ServiceDesc, impl any, gw GatewayRegistrar) error {
	s.grpc.RegisterService(desc, impl)
	if gw == nil {
		return nil
	}
	s.inproc.register(desc, impl)
	if err := gw(s.ctx, s.gateway, s.inproc); err != nil {
		return fmt.Errorf("register %s on the gateway: %w", desc.ServiceName, err)
	}
	s.addGatewayService(desc.ServiceName)
	return nil
}

// InProcess is a connection to the services registered with a gateway, for plain handlers of the same
// process (the MCP endpoint) that must call them exactly as the JSON gateway does: through the same
// interceptors (error mapping, recovery, authentication), on the caller's goroutine, with the
// caller's outgoing metadata as the call's incoming metadata. Unary methods only.
func (s *Server) InProcess() grpc.ClientConnInterface { return s.inproc }

// Handle serves a plain net/http handler (HTML pages, Prometheus text, MCP, OAuth, .well-known
// documents) beside the gateway. Patterns follow net/http.ServeMux.
func (s *Server) Handle(pattern string, h http.Handler) {
	// The pattern's path is the route the request's span and metrics name.
	route := parsePattern(pattern)
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nameRoute(w, route.Path)
		h.ServeHTTP(w, r)
	}))
	s.addPlainRoute(route)
}

// LivenessHandler answers like GET /healthz, for services whose spec names another liveness path.
func (s *Server) LivenessHandler() http.Handler { return http.HandlerFunc(s.serveHealthz) }

// HTTPAddr is the address the HTTP listener is bound to.
func (s *Server) HTTPAddr() string { return s.httpLn.Addr().String() }

// GRPCAddr is the address the gRPC listener is bound to.
func (s *Server) GRPCAddr() string { return s.grpcLn.Addr().String() }

// Run serves until ctx ends, then stops accepting, lets in-flight requests finish (up to
// ShutdownTimeout) and returns. A listener failure ends Run with that error.
func (s *Server) Run(ctx context.Context) error {
	httpServer := &http.Server{
		Handler:           s.httpHandler(),
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		if err := s.grpc.Serve(s.grpcLn); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			return fmt.Errorf("gRPC server: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		if err := httpServer.Serve(netutil.LimitListener(s.httpLn, s.cfg.MaxConnections)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("HTTP server: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		s.watchReadiness(gctx)
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		s.log.Info("shutting down", "drain_timeout", s.cfg.ShutdownTimeout.String())
		s.health.Shutdown()
		drainCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		if err := httpServer.Shutdown(drainCtx); err != nil {
			s.log.Warn("HTTP drain cut short", "error", err)
			_ = httpServer.Close()
		}
		stopped := make(chan struct{})
		go func() { s.grpc.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-drainCtx.Done():
			s.log.Warn("gRPC drain cut short")
			s.grpc.Stop()
		}
		return nil
	})
	s.log.Info("serving", "http", s.HTTPAddr(), "grpc", s.GRPCAddr())
	return g.Wait()
}

// watchReadiness keeps the gRPC health status in step with the readiness checks, so that gRPC probes
// and GET /readyz agree.
func (s *Server) watchReadiness(ctx context.Context) {
	_ = periodic.Run(ctx, 5*time.Second, func(ctx context.Context) {
		st := healthpb.HealthCheckResponse_SERVING
		if _, ok := s.ready(ctx); !ok {
			st = healthpb.HealthCheckResponse_NOT_SERVING
		}
		if ctx.Err() == nil {
			s.health.SetServingStatus("", st)
		}
	})
}

func (s *Server) recovered(ctx context.Context, p any) error {
	// The panic value may hold request data; the stack is for operators, never for the client.
	s.log.ErrorContext(ctx, "panic in gRPC handler", "panic", fmt.Sprint(p))
	return status.Error(codes.Internal, "internal error")
}

// chainUnary composes interceptors into one, the first outermost, as grpc.ChainUnaryInterceptor does
// for a server; the in-process channel takes a single interceptor.
func chainUnary(list []grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		next := handler
		for i := len(list) - 1; i >= 0; i-- {
			interceptor, inner := list[i], next
			next = func(ctx context.Context, req any) (any, error) { return interceptor(ctx, req, info, inner) }
		}
		return next(ctx, req)
	}
}

func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
