// Package store is the scoring service's PostgreSQL persistence (pgx) and its embedded migrations.
package store

import (
	"embed"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/pkg/pg"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the service's migration set: 00001 accounts and keys, 00002 usage and request
// records, 00003 feedback and payer-policy signals, 00005 control-plane workspaces, sessions, sign-in
// throttle and key setup links, 00006 OAuth clients, grants and sign-in sessions.
func Migrations() pg.MigrationSet {
	return pg.EmbeddedSet("scoring", migrations, "migrations")
}

// Store reads and writes the service's tables.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }
