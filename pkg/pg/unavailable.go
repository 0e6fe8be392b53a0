package pg

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err means that the database could not be reached or dropped the
// connection, rather than that it refused the statement: a failed connection attempt
// (pgconn.ConnectError: refused, timed out, DNS, TLS, a server that is starting or shutting down), a
// network error or an unexpected end of stream on an open connection, a connection pgx had already closed, and
// the server's own connection-class answers (SQLSTATE class 08, 57P01-57P03 shutdown and recovery,
// 53300 too many connections). Every service maps a true answer to 503 with Retry-After, since the
// same request can succeed once the database is back; any other error keeps its own mapping.
//
// A caller whose own context ended (a client gone, a request deadline) should check ctx.Err() first:
// that is not an outage.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false // a caller that went away, not the database
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return unavailableState(pgErr.Code)
	}
	if errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	// pgconn's own errors say whether nothing was sent yet, or that a timeout cut the connection.
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return true
	}
	// A connection that dies under a statement surfaces as a bare io.ErrUnexpectedEOF (pgproto3
	// turns the end of the stream in the middle of reading a message into it; measured through
	// pgtest.Proxy's Cut). Readers of request bodies or files answer io.EOF, not this.
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	return false
}

// unavailableState reports whether a SQLSTATE says the server cannot serve this connection now.
func unavailableState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"): // connection_exception and its subclasses
		return true
	case code == "57P01", code == "57P02", code == "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
		return true
	case code == "53300": // too_many_connections
		return true
	}
	return false
}
