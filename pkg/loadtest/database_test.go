package loadtest_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
)

func TestTempDatabaseCreatesAndDrops(t *testing.T) {
	t.Parallel()
	admin := os.Getenv(pgtest.AdminURLVar)
	if admin == "" {
		admin = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	dbURL, drop, err := loadtest.TempDatabase(ctx, admin, "loadtest_test")
	if err != nil {
		t.Fatalf("TempDatabase (is PostgreSQL running? `make deps` starts it): %v", err)
	}
	dropped := false
	t.Cleanup(func() {
		if !dropped {
			drop()
		}
	})
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect to the temporary database: %v", err)
	}
	var name string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, "loadtest_test_") || len(name) != len("loadtest_test_")+8 {
		t.Errorf("database name: got %q, want loadtest_test_ and 8 hex digits", name)
	}

	// The connection stays open: the drop must not wait for it.
	drop()
	dropped = true
	_ = conn.Close(ctx)

	admc, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer admc.Close(ctx)
	var exists bool
	if err := admc.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %s still exists after the drop", name)
	}
}
