package loadtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"
)

// TempDatabase creates a database named prefix_<8 random hex digits> on the server of adminURL (a
// role with CREATEDB) and returns its URL and a function that drops it, even with sessions still
// open. The drop runs after a run's context may have ended, so it has a context of its own; it
// reports a failure on standard error, under the program's name, as there is no one to return it to.
func TempDatabase(ctx context.Context, adminURL, prefix string) (string, func(), error) {
	u, err := url.Parse(adminURL)
	if err != nil {
		return "", nil, err
	}
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("connect to PostgreSQL (make deps starts it): %w", err)
	}
	defer conn.Close(context.Background())
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name := prefix + "_" + hex.EncodeToString(suffix)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: database %s was not dropped: %v\n", filepath.Base(os.Args[0]), name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			fmt.Fprintf(os.Stderr, "%s: database %s was not dropped: %v\n", filepath.Base(os.Args[0]), name, err)
		}
	}, nil
}

// PinBackends moves the PostgreSQL server processes that serve the sessions of dbURL's database onto
// the listed CPUs, and returns how many it moved. A bench gives the service under test a core of its
// own; with the database on the same machine, the backends of the service's connections would run on
// that core too, and their bursts of work (a usage flush's COPY, tens of milliseconds) would stall the
// service as a database on its own host never does. The server must run on this machine, and moving
// another user's process needs CAP_SYS_NICE (root has it). Sessions opened later are not moved: call
// it again before each measured phase.
func PinBackends(ctx context.Context, adminURL, dbURL string, cpus ...int) (int, error) {
	db, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return 0, err
	}
	// Process ids are this machine's: those of a remote server would name local processes.
	cfg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		return 0, err
	}
	if ip := net.ParseIP(cfg.Host); !strings.HasPrefix(cfg.Host, "/") && cfg.Host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0, fmt.Errorf("PostgreSQL at %s is not on this machine", cfg.Host)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = $1`, db.Database)
	if err != nil {
		return 0, err
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return 0, err
	}
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	n := 0
	for _, pid := range pids {
		switch err := unix.SchedSetaffinity(int(pid), &set); {
		case errors.Is(err, unix.ESRCH):
			// The session ended meanwhile.
		case err != nil:
			return n, fmt.Errorf("pin PostgreSQL backend %d to CPUs %v: %w", pid, cpus, err)
		default:
			n++
		}
	}
	return n, nil
}
