// Package store is the ingestion service's PostgreSQL persistence (pgx) and its embedded migrations.
package store

import (
	"context"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/pg"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the service's migration set.
func Migrations() pg.MigrationSet {
	return pg.EmbeddedSet("ingestion", migrations, "migrations")
}

// Store implements ingest.Store on a pgx pool.
type Store struct {
	pool *pgxpool.Pool
}

var _ ingest.Store = (*Store)(nil)

// New returns a Store.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Page sizes of the list routes.
const (
	DefaultLimit = 50
	MaxLimit     = 100
)

func limitOf(p ingest.Page) int {
	if p.Limit <= 0 {
		return DefaultLimit
	}
	return min(p.Limit, MaxLimit)
}

// cursor is the position after the last row of a page: rows are ordered by (created_at, id) descending.
type cursor struct {
	At time.Time `json:"t"`
	ID uuid.UUID `json:"i"`
}

// ErrBadCursor is returned for a cursor that does not decode to a position.
var ErrBadCursor = errors.New("malformed cursor")

func encodeCursor(at time.Time, id uuid.UUID) string {
	b, _ := json.Marshal(cursor{At: at, ID: id})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (*cursor, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, ErrBadCursor
	}
	var c cursor
	if err := json.Unmarshal(b, &c); err != nil || c.ID == uuid.Nil {
		return nil, ErrBadCursor
	}
	return &c, nil
}

// pageQuery adds the cursor condition and limit to a query ordered newest first.
func pageQuery(base string, where []string, args []any, p ingest.Page) (string, []any, int, error) {
	c, err := decodeCursor(p.Cursor)
	if err != nil {
		return "", nil, 0, err
	}
	if c != nil {
		args = append(args, c.At, c.ID)
		where = append(where, fmt.Sprintf("(created_at, id) < ($%d, $%d)", len(args)-1, len(args)))
	}
	q := base
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	limit := limitOf(p)
	args = append(args, limit+1)
	q += fmt.Sprintf(" ORDER BY created_at DESC, id DESC LIMIT $%d", len(args))
	return q, args, limit, nil
}

// listPage runs the page query of base (with its filters where and their args) and returns the page's
// rows, scanned by scan, and the cursor of the next page; key gives the position a row is ordered by.
func listPage[T any](ctx context.Context, s *Store, base string, where []string, args []any, p ingest.Page,
	scan func(pgx.Row) (T, error), key func(T) (time.Time, uuid.UUID)) ([]T, string, error) {
	q, args, limit, err := pageQuery(base, where, args, p)
	if err != nil {
		return nil, "", err
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, "", err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (T, error) { return scan(r) })
	if err != nil {
		return nil, "", err
	}
	items, next := trimPage(items, limit, key)
	return items, next, nil
}

// trimPage cuts the extra row pageQuery asked for and returns the cursor of the next page, or "" on
// the last page.
func trimPage[T any](items []T, limit int, key func(T) (time.Time, uuid.UUID)) ([]T, string) {
	if len(items) <= limit {
		return items, ""
	}
	items = items[:limit]
	return items, encodeCursor(key(items[limit-1]))
}

func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return ingest.ErrNotFound
	}
	return err
}

// WithSourceLock holds a session-level advisory lock on the source for the duration of fn, on a
// dedicated connection, so that no two replicas run the same source at once. A crashed holder's lock
// goes with its connection.
func (s *Store) WithSourceLock(ctx context.Context, id uuid.UUID, fn func(context.Context) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtextextended('discovery:' || $1::text, 0))`, id).Scan(&locked); err != nil {
		return err
	}
	if !locked {
		return ingest.ErrRunInProgress
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended('discovery:' || $1::text, 0))`, id)
	}()
	return fn(ctx)
}
