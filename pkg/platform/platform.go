// Package platform is the composition root the three services share: it turns a service's Spec into a
// running process in the order of STYLE.md (config, telemetry, database + migrations, NATS, servers in
// an errgroup) and closes everything in reverse on the way out. Each service's own main supplies only
// its configuration and registers its APIs.
package platform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/buildinfo"
	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pg"
	"github.com/trustlayer/trustlayer/pkg/serve"
	"github.com/trustlayer/trustlayer/pkg/telemetry"
)

// Spec describes one service to the platform.
type Spec struct {
	// Name is the service name: verification, scoring or ingestion.
	Name    string
	Service config.Service
	NATS    config.NATS
	// MigrateDatabaseURL, when set (<PREFIX>MIGRATE_DATABASE_URL), is the URL migrations run with:
	// the role that owns the tables. Service.DatabaseURL is then the application role the service
	// serves with, which Open grants what it needs (pg.GrantApp). When empty, migrations run as the
	// service's own role, as they did before the roles were split. docs/database-roles.md.
	MigrateDatabaseURL string
	// Unavailable is the answer of a call that failed because the database cannot be reached (see
	// pg.Unavailable), in the service's own error shape; nil is apierror.Unavailable(). Errors the
	// service already mapped to an answer pass unchanged.
	Unavailable *apierror.Error
	// Migrations are applied in order at start (and by the migrate subcommand). The outbox's set is
	// always applied first.
	Migrations []pg.MigrationSet
	// Streams the service publishes to or consumes from; provisioned in the background at start.
	Streams []jetstream.StreamConfig
	// Gateway options (forwarded headers, validation style).
	Gateway []gateway.Option
	// Unary returns the service's own gRPC interceptors (authentication). It runs once the database
	// is open, since checking a credential usually needs it.
	Unary func(*Platform) []grpc.UnaryServerInterceptor
	// Prometheus makes the service's metrics readable for a scrape (Platform.Metrics). It is off
	// unless the service serves them: with a reader installed, every request's measurements are
	// aggregated, which costs a read-heavy service a measurable share of its CPU for nothing.
	Prometheus bool
	// Relay configures the outbox relay every service runs (a service that fans events out asks for
	// larger batches); one relay per replica, woken by the outbox's notifications.
	Relay []outbox.RelayOption
	// Routes raise the body cap (Service.MaxBodyBytes) or change the write timeout for the routes
	// that need it (a batch, a stream).
	Routes []serve.RouteLimits
}

// Platform is a started service's shared infrastructure.
type Platform struct {
	Log     *slog.Logger
	Pool    *pgxpool.Pool
	Bus     *bus.Bus
	Server  *serve.Server
	Metrics *telemetry.Prometheus // for a scrape when Spec.Prometheus; the service decides where and to whom it serves it
	spec    Spec
	loops   []func(context.Context) error
	closers []func()
}

// NewLogger returns the JSON logger every service writes to stdout, with trace ids on each line.
func NewLogger(w io.Writer, level string) *slog.Logger {
	l, _ := config.ParseLevel(level) // validated with the configuration
	return slog.New(traceHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})})
}

// Open starts the infrastructure of spec: telemetry, the database (migrated), NATS and the servers'
// listeners. On error everything opened so far is closed again.
func Open(ctx context.Context, spec Spec, getenv func(string) string, stdout io.Writer) (_ *Platform, err error) {
	p := &Platform{spec: spec, Log: NewLogger(stdout, spec.Service.LogLevel).With("service", spec.Name)}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	var telemetryOpts []telemetry.Option
	if spec.Prometheus {
		if p.Metrics, err = telemetry.NewPrometheus(); err != nil {
			return nil, err
		}
		telemetryOpts = append(telemetryOpts, telemetry.WithReader(p.Metrics.Reader()))
	}
	shutdownTelemetry, err := telemetry.Setup(ctx, getenv, spec.Name, buildinfo.Get(spec.Name).Version, telemetryOpts...)
	if err != nil {
		return nil, err
	}
	p.closers = append(p.closers, func() { _ = shutdownTelemetry(context.Background()) })

	if spec.MigrateDatabaseURL != "" {
		if err := migrateAsOwner(ctx, spec, p.Log, p.migrationSets()); err != nil {
			return nil, err
		}
	}
	if p.Pool, err = pg.Open(ctx, spec.Service.DatabaseURL); err != nil {
		return nil, err
	}
	p.closers = append(p.closers, p.Pool.Close)
	if spec.MigrateDatabaseURL == "" {
		if err := pg.Migrate(ctx, p.Pool, p.Log, p.migrationSets()...); err != nil {
			return nil, err
		}
	} else if risks, err := pg.RoleRisks(ctx, p.Pool); err == nil && len(risks) > 0 {
		p.Log.Warn("the service's database role can switch off the immutability triggers; give "+
			spec.Name+" an application role of its own (docs/database-roles.md)", "risks", strings.Join(risks, "; "))
	}

	if p.Bus, err = bus.Connect(spec.NATS.URL, spec.NATS.Namespace, spec.Name, p.Log); err != nil {
		return nil, err
	}
	p.closers = append(p.closers, p.Bus.Close)

	// Outermost of the service's own interceptors, so that an outage met while authenticating is a
	// 503 too.
	unary := []grpc.UnaryServerInterceptor{answerUnavailable(p.Log, spec.Unavailable)}
	if spec.Unary != nil {
		unary = append(unary, spec.Unary(p)...)
	}
	p.Server, err = serve.New(serve.Config{
		Name:              spec.Name,
		HTTPAddr:          spec.Service.HTTPAddr,
		GRPCAddr:          spec.Service.GRPCAddr,
		ShutdownTimeout:   spec.Service.ShutdownTimeout,
		MaxBodyBytes:      spec.Service.MaxBodyBytes,
		Routes:            spec.Routes,
		ReadHeaderTimeout: spec.Service.HTTPReadHeaderTimeout,
		ReadTimeout:       spec.Service.HTTPReadTimeout,
		WriteTimeout:      spec.Service.HTTPWriteTimeout,
		IdleTimeout:       spec.Service.HTTPIdleTimeout,
		MaxConnections:    spec.Service.MaxConnections,
		Logger:            p.Log,
		Readiness:         map[string]serve.Check{"database": pg.Ready(p.Pool)},
		// A 503's Retry-After reaches the client; a service may list it again.
		Gateway: append([]gateway.Option{gateway.WithOutgoingHeaders("retry-after")}, spec.Gateway...),
		Unary:   unary,
	})
	if err != nil {
		return nil, err
	}
	relay := outbox.NewRelay(p.Pool, p.Bus.JS, p.Bus.Subject, p.Log, spec.Relay...)
	p.Go(relay.Run)
	if len(spec.Streams) > 0 {
		p.Go(func(ctx context.Context) error { return p.Bus.Provision(ctx, spec.Streams...) })
	}
	return p, nil
}

func (p *Platform) migrationSets() []pg.MigrationSet {
	return append([]pg.MigrationSet{outbox.Migrations()}, p.spec.Migrations...)
}

// Go adds a background loop (a consumer, a scheduler) that runs beside the servers until the service
// stops. A loop that returns an error other than the context's stops the service.
func (p *Platform) Go(loop func(context.Context) error) {
	p.loops = append(p.loops, loop)
}

// Run serves until ctx ends, then drains and returns.
func (p *Platform) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return p.Server.Run(gctx) })
	for _, loop := range p.loops {
		g.Go(func() error {
			if err := loop(gctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		})
	}
	return g.Wait()
}

// OnClose adds a release step that Close runs before releasing the platform's own resources.
func (p *Platform) OnClose(fn func()) {
	p.closers = append(p.closers, fn)
}

// Close releases what Open acquired, in reverse order.
func (p *Platform) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
	p.closers = nil
}

// Migrate applies spec's migrations and returns: the `migrate` subcommand, for deployments that run
// migrations as a separate step (a Kubernetes Job) before rolling out replicas.
func Migrate(ctx context.Context, spec Spec, stdout io.Writer) error {
	log := NewLogger(stdout, spec.Service.LogLevel).With("service", spec.Name)
	p := &Platform{spec: spec}
	if spec.MigrateDatabaseURL != "" {
		if err := migrateAsOwner(ctx, spec, log, p.migrationSets()); err != nil {
			return err
		}
	} else {
		pool, err := pg.Open(ctx, spec.Service.DatabaseURL)
		if err != nil {
			return err
		}
		defer pool.Close()
		if err := pg.Migrate(ctx, pool, log, p.migrationSets()...); err != nil {
			return err
		}
	}
	log.Info("migrations up to date")
	return nil
}

// migrateAsOwner applies sets over a pool of its own on spec.MigrateDatabaseURL, then grants the
// service's application role (the user of spec.Service.DatabaseURL) its rights on what they created.
func migrateAsOwner(ctx context.Context, spec Spec, log *slog.Logger, sets []pg.MigrationSet) error {
	owner, err := pg.UserOf(spec.MigrateDatabaseURL)
	if err != nil {
		return fmt.Errorf("migration database URL: %w", err)
	}
	app, err := pg.UserOf(spec.Service.DatabaseURL)
	if err != nil {
		return err
	}
	pool, err := pg.Open(ctx, spec.MigrateDatabaseURL)
	if err != nil {
		return fmt.Errorf("migration database: %w", err)
	}
	defer pool.Close()
	if err := pg.Migrate(ctx, pool, log, sets...); err != nil {
		return err
	}
	if app == owner {
		log.Warn("the migration URL and the service's URL name the same role: the service owns its tables (docs/database-roles.md)", "role", app)
		return nil
	}
	if err := pg.GrantApp(ctx, pool, app, sets...); err != nil {
		return err
	}
	log.Info("application role granted", "owner", owner, "role", app)
	return nil
}

// answerUnavailable turns an error of an unreachable database (pg.Unavailable) into the service's
// 503, and sets the Retry-After of every answer that announces one. A caller whose own context ended
// is left to the platform's mapping (a cancelled client is not an outage), and so is an error that
// already is an answer.
func answerUnavailable(log *slog.Logger, answer *apierror.Error) grpc.UnaryServerInterceptor {
	if answer == nil {
		answer = apierror.Unavailable()
	}
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if err == nil {
			return resp, nil
		}
		e, isAnswer := apierror.As(err)
		if !isAnswer {
			if ctx.Err() != nil || !pg.Unavailable(err) {
				return resp, err
			}
			log.WarnContext(ctx, "database unavailable", "method", info.FullMethod, "error", err)
			e, err = answer, answer
		}
		if v := e.RetryAfterSeconds(); v != "" {
			_ = grpc.SetHeader(ctx, metadata.Pairs("retry-after", v))
		}
		return resp, err
	}
}

// Boot loads a service's configuration from getenv and opens its platform with every API and loop
// registered, logging to stdout; the caller runs it. A service's app.Boot is one: its binary serves
// through it and its tests start it in-process (pkg/servicetest).
type Boot func(ctx context.Context, getenv func(string) string, stdout io.Writer) (*Platform, error)

// Command runs a service binary: no argument (or "serve") boots the service and serves until ctx
// ends; "migrate" applies the migrations of the spec that spec reads from getenv, and exits.
func Command(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer,
	spec func(getenv func(string) string) (Spec, error), boot Boot) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd = args[0]
	}
	switch cmd {
	case "migrate":
		s, err := spec(getenv)
		if err != nil {
			return err
		}
		return Migrate(ctx, s, stdout)
	case "serve":
		p, err := boot(ctx, getenv, stdout)
		if err != nil {
			return err
		}
		defer p.Close()
		return p.Run(ctx)
	default:
		return fmt.Errorf("unknown command %q (want serve or migrate)", cmd)
	}
}

// LoadSpec reads the shared configuration of the service name from getenv: the service's own variables
// behind prefix (with the given default listen addresses), the NATS variables, and each of extras (the
// service's own settings structs, read behind prefix too). Every problem is reported, one line each.
func LoadSpec(getenv func(string) string, name, prefix, httpAddr, grpcAddr string, extras ...any) (Spec, error) {
	spec := Spec{Name: name, Service: config.Service{HTTPAddr: httpAddr, GRPCAddr: grpcAddr}}
	var errs []error
	if err := config.Load(getenv, prefix, &spec.Service); err != nil {
		errs = append(errs, err)
	}
	for _, extra := range extras {
		if err := config.Load(getenv, prefix, extra); err != nil {
			errs = append(errs, err)
		}
	}
	if err := config.Load(getenv, "", &spec.NATS); err != nil {
		errs = append(errs, err)
	}
	var roles migrationConfig
	if err := config.Load(getenv, prefix, &roles); err != nil {
		errs = append(errs, err)
	}
	spec.MigrateDatabaseURL = roles.URL
	if err := errors.Join(errs...); err != nil {
		// A variable that several parts read would otherwise be reported once per part.
		lines := strings.Split(err.Error(), "\n")
		seen := map[string]bool{}
		out := lines[:0]
		for _, l := range lines {
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
		return Spec{}, fmt.Errorf("invalid configuration:\n%s", strings.Join(out, "\n"))
	}
	return spec, nil
}

// migrationConfig is the optional URL of the role that owns the tables (Spec.MigrateDatabaseURL).
type migrationConfig struct {
	URL string `env:"MIGRATE_DATABASE_URL"`
}

// Validate checks the URL's scheme, as DATABASE_URL's is checked.
func (m *migrationConfig) Validate(prefix string) error {
	if m.URL == "" {
		return nil
	}
	return config.CheckURL(prefix+"MIGRATE_DATABASE_URL", m.URL, "postgres", "postgresql")
}

// ConfigVars lists every environment variable a service with this prefix reads: the shared ones and
// those of its extras (deployment files are checked against it).
func ConfigVars(prefix string, extras ...any) []string {
	vars, _ := config.Vars(prefix, &config.Service{})
	nats, _ := config.Vars("", &config.NATS{})
	roles, _ := config.Vars(prefix, &migrationConfig{})
	vars = append(append(append(vars, nats...), roles...), telemetry.EndpointVar)
	for _, extra := range extras {
		own, _ := config.Vars(prefix, extra)
		vars = append(vars, own...)
	}
	// Parts of a service may share a variable (ALLOW_PRIVATE_CIDRS): list it once.
	slices.Sort(vars)
	return slices.Compact(vars)
}

// RunMain is a service binary's whole main: it runs main with the process's arguments, environment
// and stdout until SIGINT or SIGTERM (which main treats as a graceful stop), and exits 1 with main's
// error, prefixed by the service's name, on standard error.
func RunMain(name string, main func(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := main(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
