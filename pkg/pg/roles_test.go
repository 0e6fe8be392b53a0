package pg_test

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/trustlayer/trustlayer/pkg/pg"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
)

// ledger is a migration set with an immutable table (row triggers on UPDATE and DELETE, a statement
// trigger on TRUNCATE) and a plain one that references it.
var ledger = pg.MigrationSet{Name: "ledger", FS: fstest.MapFS{
	"00001_ledger.sql": {Data: []byte(`-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION ledger_reject() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is immutable: % rejected', TG_TABLE_NAME, TG_OP;
END;
$$;
-- +goose StatementEnd
CREATE TABLE entries (id bigserial PRIMARY KEY, note text NOT NULL);
CREATE TRIGGER entries_immutable BEFORE UPDATE OR DELETE ON entries FOR EACH ROW EXECUTE FUNCTION ledger_reject();
CREATE TRIGGER entries_no_truncate BEFORE TRUNCATE ON entries FOR EACH STATEMENT EXECUTE FUNCTION ledger_reject();
CREATE TABLE notes (id bigserial PRIMARY KEY, entry_id bigint REFERENCES entries (id), body text);
`)},
}}

// later is a migration the owner applies after the grants: default privileges cover its table.
var later = pg.MigrationSet{Name: "later", FS: fstest.MapFS{
	"00001_tags.sql": {Data: []byte("-- +goose Up\nCREATE TABLE tags (id serial PRIMARY KEY, name text);\n")},
}}

func TestApplicationRoleCannotChangeImmutableTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	roles := pgtest.NewRoles(t)
	owner, err := pg.Open(ctx, roles.OwnerURL)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	if err := pg.Migrate(ctx, owner, quiet, ledger); err != nil {
		t.Fatal(err)
	}
	if err := pg.GrantApp(ctx, owner, roles.App, ledger); err != nil {
		t.Fatal(err)
	}
	// Twice: the grants are idempotent, as every start of a service runs them.
	if err := pg.GrantApp(ctx, owner, roles.App, ledger); err != nil {
		t.Fatalf("second GrantApp: %v", err)
	}
	app, err := pg.Open(ctx, roles.AppURL)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()

	// A replica that starts as the application role after the owner migrated finds nothing to do,
	// which needs no right to create anything.
	if err := pg.Migrate(ctx, app, quiet, ledger); err != nil {
		t.Errorf("Migrate as the application role with the migrations applied: %v", err)
	}
	// What the service does works.
	for _, s := range []string{
		"INSERT INTO entries (note) VALUES ('first')",
		"INSERT INTO notes (entry_id, body) SELECT id, 'n' FROM entries",
		"UPDATE notes SET body = 'edited'",
		"DELETE FROM notes",
		"SELECT count(*) FROM ledger_schema_version",
	} {
		if _, err := app.Exec(ctx, s); err != nil {
			t.Errorf("as the application role, %q: %v", s, err)
		}
	}
	// What it must not do fails.
	pgtest.Refused(t, roles.AppURL, "entries")
	for _, s := range []string{
		"TRUNCATE notes",                    // no TRUNCATE privilege on any table
		"DELETE FROM ledger_schema_version", // the version table is read-only
		"DROP TABLE notes",                  // not the owner
		"CREATE TABLE intruder (id int)",    // no CREATE on the schema
	} {
		if _, err := app.Exec(ctx, s); err == nil {
			t.Errorf("as the application role, %q succeeded; want it refused", s)
		}
	}
	// The owner itself cannot empty the immutable table either: the statement trigger refuses.
	for _, s := range []string{"TRUNCATE entries", "TRUNCATE entries CASCADE"} {
		if _, err := owner.Exec(ctx, s); err == nil {
			t.Errorf("as the owner, %q succeeded; want the TRUNCATE trigger to refuse it", s)
		}
	}
	var rows int
	if err := owner.QueryRow(ctx, "SELECT count(*) FROM entries").Scan(&rows); err != nil || rows != 1 {
		t.Errorf("entries after the refusals: got %d rows (%v), want 1", rows, err)
	}

	// A table a later migration of the owner creates is usable at once (default privileges).
	if err := pg.Migrate(ctx, owner, quiet, later); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Exec(ctx, "INSERT INTO tags (name) VALUES ('x')"); err != nil {
		t.Errorf("a table created after the grants: %v", err)
	}
	if _, err := app.Exec(ctx, "TRUNCATE tags"); err == nil {
		t.Error("TRUNCATE of a table created after the grants succeeded; want it refused")
	}

	risks, err := pg.RoleRisks(ctx, app)
	if err != nil || len(risks) != 0 {
		t.Errorf("RoleRisks of the application role: got %v (%v), want none", risks, err)
	}
	risks, err = pg.RoleRisks(ctx, owner)
	if err != nil || !slices.ContainsFunc(risks, func(r string) bool { return r == "role "+roles.Owner+" owns 5 tables" }) {
		t.Errorf("RoleRisks of the owner: got %v (%v), want it to own its 5 tables (entries, notes, tags and two version tables)", risks, err)
	}
}
