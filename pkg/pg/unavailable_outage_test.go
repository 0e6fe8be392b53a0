package pg_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trustlayer/trustlayer/pkg/pg"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
)

func TestUnavailableClassifiesErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"wrapped network error", fmt.Errorf("list watches: %w", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}), true},
		{"connection exception 08006", &pgconn.PgError{Code: "08006"}, true},
		{"admin shutdown 57P01", &pgconn.PgError{Code: "57P01"}, true},
		{"starting up 57P03", fmt.Errorf("x: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"too many connections 53300", &pgconn.PgError{Code: "53300"}, true},
		{"conn closed", fmt.Errorf("q: %w", pgconn.ErrConnClosed), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"immutable row", &pgconn.PgError{Code: "23000"}, false},
		{"query cancelled 57014", &pgconn.PgError{Code: "57014"}, false},
		{"caller cancelled", fmt.Errorf("q: %w", context.Canceled), false},
		{"connection died under a statement", fmt.Errorf("create organization: %w", io.ErrUnexpectedEOF), true},
		{"plain EOF (not from the driver)", io.EOF, false},
		{"other error", errors.New("boom"), false},
	} {
		if got := pg.Unavailable(tc.err); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The errors a pool really returns while its database is cut off, on an idle pooled connection and
// on a new one, are Unavailable; an SQL error of a reachable database is not.
func TestUnavailableDuringAnOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy, url := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	pool, err := pg.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "SELECT * FROM no_such_table"); err == nil || pg.Unavailable(err) {
		t.Fatalf("an SQL error: got %v, Unavailable %v; want an error that is not Unavailable", err, pg.Unavailable(err))
	}
	proxy.Cut()
	for i := range 3 { // the pooled connection's failure, then new connections refused
		_, err := pool.Exec(ctx, "SELECT 1")
		if err == nil || !pg.Unavailable(err) {
			t.Fatalf("query %d while cut: got %v, want an Unavailable error", i, err)
		}
	}
	proxy.Restore()
	if _, err := pool.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatalf("after the database returned: %v", err)
	}
}
