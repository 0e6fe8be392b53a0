package loadtest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/trustlayer/trustlayer/pkg/loadtest"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
)

func TestTempDatabaseCreatesAndDrops(t *testing.T) {
	t.Parallel()
	admin := pgtest.AdminURL()
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

// TestPinBackends: the server process of a session on the database moves to the CPUs asked for.
func TestPinBackends(t *testing.T) {
	t.Parallel()
	admin := pgtest.AdminURL()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dbURL, drop, err := loadtest.TempDatabase(ctx, admin, "loadtest_pin")
	if err != nil {
		t.Fatalf("TempDatabase: %v", err)
	}
	t.Cleanup(drop)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	n, err := loadtest.PinBackends(ctx, admin, dbURL, 0)
	switch {
	case errors.Is(err, unix.EPERM):
		t.Skip("moving PostgreSQL's processes needs CAP_SYS_NICE")
	case err != nil && strings.Contains(err.Error(), "not on this machine"):
		t.Skip(err)
	case err != nil || n != 1:
		t.Fatalf("PinBackends: moved %d, %v; want the one session", n, err)
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "Cpus_allowed_list:\t0\n") {
		t.Errorf("backend %d after pinning to CPU 0:\n%s", pid, status)
	}
	if _, err := loadtest.PinBackends(ctx, "postgres://postgres@db.example.com:5432/postgres", dbURL, 0); err == nil {
		t.Error("PinBackends with a remote server: no error, want a refusal to touch local processes")
	}
}
