package store

import (
	"embed"

	"github.com/trustlayer/trustlayer/pkg/pg"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Migrations is the service's migration set: one numbered sequence shared by every part of the
// service (00001 organizations and keys, 00002 registry intelligence, ...).
func Migrations() pg.MigrationSet {
	return pg.EmbeddedSet("verification", migrations, "migrations")
}
