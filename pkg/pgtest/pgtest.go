// Package pgtest gives each test its own fresh PostgreSQL database on the local server, so that test
// packages run in parallel without seeing each other's rows. The server comes from PGTEST_ADMIN_URL
// (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable); `make test` starts it first.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/pg"
)

// AdminURLVar names the variable holding the URL of a database with CREATEDB rights.
const AdminURLVar = "PGTEST_ADMIN_URL"

const defaultAdminURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL is the server tests create their databases on: AdminURLVar's value, else the local server.
func AdminURL() string {
	if u := os.Getenv(AdminURLVar); u != "" {
		return u
	}
	return defaultAdminURL
}

var unsafe = regexp.MustCompile(`[^a-z0-9_]+`)

// NewDatabase creates an empty database named after the test and returns its URL. The database is
// dropped when the test ends (unless it failed and PGTEST_KEEP is set, to look at what it left).
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := AdminURL()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := connectAdmin(ctx, t, admin)
	defer conn.Close(context.Background())

	name := uniqueName(t, 40)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	dropAtEnd(t, admin, "database "+name, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return databaseURL(t, admin, name).String()
}

// connectAdmin connects to the server tests create their databases on, or fails the test.
func connectAdmin(ctx context.Context, t testing.TB, admin string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("pgtest: connect to %s (is PostgreSQL running? `make deps` starts it): %v", redact(admin), err)
	}
	return conn
}

// uniqueName is a name for what a test creates on the server: t_, the test's name (at most
// maxPrefix characters of it, reduced to [a-z0-9_]) and a random suffix.
func uniqueName(t testing.TB, maxPrefix int) string {
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	prefix := unsafe.ReplaceAllString(strings.ToLower(t.Name()), "_")
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	return fmt.Sprintf("t_%s_%s", prefix, hex.EncodeToString(suffix))
}

// dropAtEnd runs the drop statements as the administrator when the test ends, unless it failed and
// PGTEST_KEEP is set (what names what is kept, for the log).
func dropAtEnd(t testing.TB, admin, what string, drops ...string) {
	t.Cleanup(func() {
		if t.Failed() && os.Getenv("PGTEST_KEEP") != "" {
			t.Logf("pgtest: kept %s", what)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Logf("pgtest: drop %s: %v", what, err)
			return
		}
		defer c.Close(ctx)
		for _, s := range drops {
			if _, err := c.Exec(ctx, s); err != nil {
				t.Logf("pgtest: %s: %v", s, err)
			}
		}
	})
}

// databaseURL is admin's URL with database name in place of its own.
func databaseURL(t testing.TB, admin, name string) *url.URL {
	t.Helper()
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("pgtest: %s is not a URL: %v", AdminURLVar, err)
	}
	u.Path = "/" + name
	return u
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the admin URL"
	}
	return u.Redacted()
}

// NewPool creates a fresh database (see NewDatabase), applies the migration sets and returns a pool on
// it, closed when the test ends.
func NewPool(t testing.TB, sets ...pg.MigrationSet) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pg.Open(ctx, NewDatabase(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	if err := pg.Migrate(ctx, pool, slog.New(slog.DiscardHandler), sets...); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return pool
}
