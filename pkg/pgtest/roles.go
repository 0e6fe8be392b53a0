package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Roles is a fresh database owned by a role of its own, with an application role beside it, as a
// deployment has them (docs/database-roles.md): migrations run as Owner, the service as App.
type Roles struct {
	// OwnerURL connects as the owner of the database (and so of what migrations create there).
	OwnerURL string
	// AppURL connects to the same database as the application role: LOGIN, no superuser, no
	// CREATEROLE, no CREATEDB, owner of nothing. What it may do is what pg.GrantApp grants it.
	AppURL string
	// AdminURL connects to the same database as the server's administrator (a superuser), for
	// what a test sets up behind the roles' backs (SeedRow).
	AdminURL string
	// Owner and App are the roles' names.
	Owner, App string
}

// NewRoles creates two login roles and a database owned by the first, and returns their URLs. The
// database and both roles are dropped when the test ends (unless it failed and PGTEST_KEEP is set).
// Roles are global to the server, so their names are random like the database's.
func NewRoles(t testing.TB) Roles {
	t.Helper()
	admin := AdminURL()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := connectAdmin(ctx, t, admin)
	defer conn.Close(context.Background())

	base := uniqueName(t, 30)
	r := Roles{Owner: base + "_owner", App: base + "_app"}
	passwords := map[string]string{}
	for _, role := range []string{r.Owner, r.App} {
		pw := make([]byte, 16)
		_, _ = rand.Read(pw)
		passwords[role] = hex.EncodeToString(pw)
		// A literal password cannot be a query parameter in CREATE ROLE; hex needs no quoting.
		if _, err := conn.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+
			" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '"+passwords[role]+"'"); err != nil {
			t.Fatalf("pgtest: create role %s: %v", role, err)
		}
	}
	// The database first: the default privileges the roles hold live in it.
	dropAtEnd(t, admin, fmt.Sprintf("database %s and roles %s, %s", base, r.Owner, r.App),
		"DROP DATABASE IF EXISTS "+pgx.Identifier{base}.Sanitize()+" WITH (FORCE)",
		"DROP ROLE IF EXISTS "+pgx.Identifier{r.App}.Sanitize(),
		"DROP ROLE IF EXISTS "+pgx.Identifier{r.Owner}.Sanitize())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{base}.Sanitize()+" OWNER "+pgx.Identifier{r.Owner}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", base, err)
	}
	u := databaseURL(t, admin, base)
	r.AdminURL = u.String()
	u.User = url.UserPassword(r.Owner, passwords[r.Owner])
	r.OwnerURL = u.String()
	u.User = url.UserPassword(r.App, passwords[r.App])
	r.AppURL = u.String()
	return r
}
