package pg_test

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/trustlayer/trustlayer/pkg/pg"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestMigrateAppliesEachSetOnceEvenWithConcurrentReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	a := pg.MigrationSet{Name: "alpha", FS: fstest.MapFS{
		"00001_widgets.sql": {Data: []byte("-- +goose Up\nCREATE TABLE widgets (id int PRIMARY KEY);\n-- +goose Down\nDROP TABLE widgets;\n")},
		"00002_seed.sql":    {Data: []byte("-- +goose Up\nINSERT INTO widgets VALUES (1);\n-- +goose Down\nDELETE FROM widgets;\n")},
	}}
	// A second set with its own version numbers: shows that sets keep separate version tables.
	b := pg.MigrationSet{Name: "beta", FS: fstest.MapFS{
		"00001_gadgets.sql": {Data: []byte("-- +goose Up\nCREATE TABLE gadgets (id int);\n-- +goose Down\nDROP TABLE gadgets;\n")},
	}}

	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 { // four replicas starting at once
		wg.Go(func() {
			pool, err := pg.Open(ctx, url)
			if err != nil {
				errs <- err
				return
			}
			defer pool.Close()
			errs <- pg.Migrate(ctx, pool, quiet, a, b)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	}
	pool, err := pg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var rows int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM widgets").Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("seed migration: got %d rows (%v), want exactly 1", rows, err)
	}
	var versions int
	if err := pool.QueryRow(ctx, "SELECT max(version_id) FROM beta_schema_version").Scan(&versions); err != nil || versions != 1 {
		t.Fatalf("beta version: got %d (%v), want 1", versions, err)
	}
}

func TestMigrateReportsTheFailingFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pg.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	bad := pg.MigrationSet{Name: "bad", FS: fstest.MapFS{
		"00001_ok.sql":     {Data: []byte("-- +goose Up\nCREATE TABLE ok (id int);\n")},
		"00002_broken.sql": {Data: []byte("-- +goose Up\nCREATE TABLE ok (id int);\n")},
	}}
	err = pg.Migrate(ctx, pool, quiet, bad)
	if err == nil || !strings.Contains(err.Error(), "00002_broken.sql") {
		t.Fatalf("got %v, want an error naming 00002_broken.sql", err)
	}
}

func TestOpenFailsFastOnUnreachableDatabase(t *testing.T) {
	t.Parallel()
	_, err := pg.Open(context.Background(), "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Open succeeded against a closed port")
	}
}

func TestOpenSaysHowToCreateAMissingDatabase(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(pgtest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/no_such_database_for_this_test"
	_, err = pg.Open(context.Background(), u.String())
	if err == nil || !strings.Contains(err.Error(), `database "no_such_database_for_this_test" does not exist`) ||
		!strings.Contains(err.Error(), "createdb no_such_database_for_this_test") {
		t.Fatalf("got %v, want the missing database named with the way to create it", err)
	}
}

func TestReadyFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy, url := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	pool, err := pg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ready := pg.Ready(pool)
	if err := ready(ctx); err != nil {
		t.Fatalf("ready while reachable: %v", err)
	}
	proxy.Cut()
	if err := ready(ctx); err == nil {
		t.Fatal("ready while unreachable: got nil, want an error")
	}
	proxy.Restore()
	if err := ready(ctx); err != nil {
		t.Fatalf("ready after the database returned: %v", err)
	}
}

// TestOpenEncodesUUIDsDirectly: a pool from Open encodes a []uuid.UUID parameter from the ids' bytes,
// without the string per id that uuid.UUID's driver.Valuer makes (and the database parses back), and
// the ids round-trip.
func TestOpenEncodesUUIDsDirectly(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	ids := []uuid.UUID{uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New(), uuid.New()}
	var back []uuid.UUID
	if err := pool.QueryRow(ctx, `SELECT $1::uuid[]`, ids).Scan(&back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back, ids) {
		t.Fatalf("round trip = %v, want %v", back, ids)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	m := conn.Conn().TypeMap()
	buf := make([]byte, 0, 1024)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := m.Encode(pgtype.UUIDArrayOID, pgtype.BinaryFormatCode, ids, buf[:0]); err != nil {
			t.Fatal(err)
		}
	})
	// As [16]byte values: 23 allocations; through driver.Valuer: 203.
	if allocs > 50 {
		t.Errorf("encoding 10 ids allocates %.0f times, want at most 50", allocs)
	}
}
