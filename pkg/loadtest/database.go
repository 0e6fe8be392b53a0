package loadtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
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
