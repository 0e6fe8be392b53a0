package pg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// GrantApp gives the application role appRole what a service needs on the tables the migrations
// created, and on those later migrations of the pool's user will create: USAGE on schema public,
// SELECT, INSERT, UPDATE and DELETE on every table, USAGE and SELECT on every sequence, the last two
// also as the default privileges of the pool's user (ALTER DEFAULT PRIVILEGES), so that a table added
// by a new migration works for appRole at once. appRole gets neither TRUNCATE, REFERENCES nor
// TRIGGER, and owns nothing, so it can neither empty an immutable table nor disable its triggers
// (only an owner or a superuser may). The migration sets' version tables are readable only.
//
// pool connects as the owner of the tables (the role the migrations run as); GrantApp runs after
// Migrate, in one transaction, and is idempotent.
func GrantApp(ctx context.Context, pool *pgxpool.Pool, appRole string, sets ...MigrationSet) error {
	role := pgx.Identifier{appRole}.Sanitize()
	stmts := []string{
		"GRANT USAGE ON SCHEMA public TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO " + role,
		"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO " + role,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO " + role,
		"ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO " + role,
	}
	for _, set := range sets {
		stmts = append(stmts, "REVOKE INSERT, UPDATE, DELETE ON "+pgx.Identifier{versionTable(set)}.Sanitize()+" FROM "+role)
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("grant the application role %s: %w", appRole, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("grant the application role %s (%s): %w", appRole, s, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("grant the application role %s: %w", appRole, err)
	}
	return nil
}

// RoleRisks lists what makes the pool's role more than an application role: being a superuser
// (which may set session_replication_role = replica and so switch every trigger off), or owning
// tables (an owner may TRUNCATE them and ALTER TABLE ... DISABLE TRIGGER). Empty when the role is
// as narrow as GrantApp makes it.
func RoleRisks(ctx context.Context, pool *pgxpool.Pool) ([]string, error) {
	var name string
	var super bool
	var owned int
	err := pool.QueryRow(ctx, `
		SELECT r.rolname, r.rolsuper,
		       (SELECT count(*) FROM pg_class c
		         WHERE c.relowner = r.oid AND c.relkind IN ('r', 'p')
		           AND c.relnamespace = 'public'::regnamespace)
		  FROM pg_roles r WHERE r.rolname = current_user`).Scan(&name, &super, &owned)
	if err != nil {
		return nil, err
	}
	var risks []string
	if super {
		risks = append(risks, fmt.Sprintf("role %s is a superuser", name))
	}
	if owned > 0 {
		risks = append(risks, fmt.Sprintf("role %s owns %d tables", name, owned))
	}
	return risks, nil
}

// UserOf returns the user a database URL connects as (the URL's, else PGUSER's, else the OS user's,
// as pgx resolves it).
func UserOf(url string) (string, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "", fmt.Errorf("parse database URL: %w", err)
	}
	return cfg.User, nil
}

func versionTable(set MigrationSet) string { return set.Name + "_schema_version" }
