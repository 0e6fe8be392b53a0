// Package pg opens a service's PostgreSQL pool and applies its embedded migrations.
package pg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	pgxuuid "github.com/vgarvardt/pgx-google-uuid/v5"
)

// Open returns a connected pool. It fails when the database cannot be reached within ctx, so that a
// service with a wrong URL stops at start rather than answering 503 forever.
func Open(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	cfg.ConnConfig.Tracer = otelpgx.NewTracer()
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// Without a bound, a request that needs a new connection while the database's host drops
		// packets waits as long as its caller does; bounded, it fails as Unavailable (a 503) instead.
		// connect_timeout in the URL overrides it.
		cfg.ConnConfig.ConnectTimeout = DefaultConnectTimeout
	}
	// Bounded health checks let the pool notice a database that came back after an outage.
	cfg.HealthCheckPeriod = 15 * time.Second
	cfg.AfterConnect = registerTypes
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "3D000" { // invalid_catalog_name
			// The commonest first-run mistake: say what to do rather than only what failed.
			return nil, fmt.Errorf("database %q does not exist on %s: create it (createdb %s; make run creates the databases its URLs name)",
				cfg.ConnConfig.Database, cfg.ConnConfig.Host, cfg.ConnConfig.Database)
		}
		return nil, fmt.Errorf("reach database %s/%s: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Database, err)
	}
	return pool, nil
}

// registerTypes teaches a new connection the Go types pgx does not encode natively. A uuid.UUID
// (google/uuid) is otherwise encoded through its driver.Valuer, as a string parsed back: 14 times
// slower for a ten-element uuid[] parameter (203 allocations against 23), a tenth of the
// verification service's CPU in its webhook fan-out benchmark.
func registerTypes(_ context.Context, conn *pgx.Conn) error {
	pgxuuid.Register(conn.TypeMap())
	return nil
}

// DefaultConnectTimeout bounds each connection attempt of a pool whose URL sets no connect_timeout.
const DefaultConnectTimeout = 5 * time.Second

// Ready is a readiness check: the database answers a round trip.
func Ready(pool *pgxpool.Pool) func(context.Context) error {
	return func(ctx context.Context) error { return pool.Ping(ctx) }
}

// MigrationSet is one numbered sequence of SQL migrations (goose format) with its own version table,
// so that a shared component (the outbox) and the service evolve their tables independently.
type MigrationSet struct {
	// Name identifies the set; its version table is "<name>_schema_version".
	Name string
	// FS holds the *.sql migrations at its root.
	FS fs.FS
}

// EmbeddedSet returns the migration set named name whose files are in dir of an embedded file system
// (//go:embed dir/*.sql).
func EmbeddedSet(name string, fsys fs.FS, dir string) MigrationSet {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err) // the embedded directory is fixed at build time
	}
	return MigrationSet{Name: name, FS: sub}
}

// migrationLockID is the advisory lock every migration run takes, so that replicas starting together
// apply each migration once.
const migrationLockID = 7_311_902_115

// Migrate applies every pending migration of each set, in order, under a PostgreSQL advisory lock.
func Migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, sets ...MigrationSet) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	for _, set := range sets {
		if err := migrateSet(ctx, db, log, set); err != nil {
			return err
		}
	}
	return nil
}

func migrateSet(ctx context.Context, db *sql.DB, log *slog.Logger, set MigrationSet) error {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(migrationLockID))
	if err != nil {
		return err
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, set.FS,
		goose.WithTableName(versionTable(set)),
		goose.WithSessionLocker(locker),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		return fmt.Errorf("migrations %s: %w", set.Name, err)
	}
	results, err := provider.Up(ctx)
	for _, r := range results {
		if r.Error == nil {
			log.Info("migration applied", "set", set.Name, "version", r.Source.Version, "file", r.Source.Path, "duration_ms", r.Duration.Milliseconds())
		}
	}
	if err != nil {
		var partial *goose.PartialError
		if errors.As(err, &partial) && partial.Failed != nil {
			return fmt.Errorf("migration %s %s failed: %w", set.Name, partial.Failed.Source.Path, partial.Err)
		}
		return fmt.Errorf("migrations %s: %w", set.Name, err)
	}
	return nil
}
