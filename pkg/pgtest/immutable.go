package pgtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// ImmutableTables lists the tables of schema public that the database itself keeps immutable: those
// with a BEFORE row trigger on UPDATE and DELETE (some let a marked purge or prune delete; none lets
// an update through). Sorted by name.
func ImmutableTables(t testing.TB, dbURL string) []string {
	t.Helper()
	return triggered(t, dbURL, "tg.tgtype & 1 = 1 AND tg.tgtype & 2 = 2 AND tg.tgtype & 8 = 8 AND tg.tgtype & 16 = 16")
}

// TruncateGuarded lists the tables of schema public with a BEFORE TRUNCATE statement trigger.
func TruncateGuarded(t testing.TB, dbURL string) []string {
	t.Helper()
	return triggered(t, dbURL, "tg.tgtype & 1 = 0 AND tg.tgtype & 2 = 2 AND tg.tgtype & 32 = 32")
}

// triggered lists, sorted, the tables of schema public with a trigger of their own whose type
// (pg_trigger.tgtype, a bit mask) passes typeTest.
func triggered(t testing.TB, dbURL, typeTest string) []string {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, dbURL)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT DISTINCT c.relname FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid
		 WHERE c.relnamespace = 'public'::regnamespace AND NOT tg.tgisinternal AND `+typeTest+`
		 ORDER BY 1`)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return names
}

// connect connects to dbURL or fails the test; the caller closes the connection.
func connect(t testing.TB, dbURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return conn
}

// SeedRow inserts one row into table, connected as adminURL's superuser, so that a test can show
// that an UPDATE or a DELETE of it is refused. Every NOT NULL column without a default gets a value
// of its type; foreign keys and triggers are skipped (session_replication_role = replica) and the
// table's CHECK constraints are dropped first, so only use it on a database the test throws away.
func SeedRow(t testing.TB, adminURL, table string) {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, adminURL)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT a.attname, format_type(a.atttypid, a.atttypmod), ty.typcategory,
		       coalesce((SELECT e.enumlabel FROM pg_enum e WHERE e.enumtypid = a.atttypid ORDER BY e.enumsortorder LIMIT 1), '')
		  FROM pg_attribute a JOIN pg_type ty ON ty.oid = a.atttypid
		 WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
		   AND a.attnotnull AND NOT a.atthasdef AND a.attidentity = '' AND a.attgenerated = ''
		 ORDER BY a.attnum`, pgx.Identifier{table}.Sanitize())
	if err != nil {
		t.Fatalf("pgtest: columns of %s: %v", table, err)
	}
	type column struct{ name, typ, category, label string }
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (column, error) {
		var c column
		err := r.Scan(&c.name, &c.typ, &c.category, &c.label)
		return c, err
	})
	if err != nil {
		t.Fatalf("pgtest: columns of %s: %v", table, err)
	}
	var names, values []string
	for _, c := range cols {
		names = append(names, pgx.Identifier{c.name}.Sanitize())
		values = append(values, literalOf(c.typ, c.category, c.label))
	}
	checks, err := conn.Query(ctx, `SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'c'`,
		pgx.Identifier{table}.Sanitize())
	if err != nil {
		t.Fatalf("pgtest: checks of %s: %v", table, err)
	}
	constraints, err := pgx.CollectRows(checks, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("pgtest: checks of %s: %v", table, err)
	}
	stmts := []string{"SET session_replication_role = replica"}
	for _, c := range constraints {
		stmts = append(stmts, "ALTER TABLE "+pgx.Identifier{table}.Sanitize()+" DROP CONSTRAINT "+pgx.Identifier{c}.Sanitize())
	}
	insert := "INSERT INTO " + pgx.Identifier{table}.Sanitize() + " DEFAULT VALUES"
	if len(names) > 0 {
		insert = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", pgx.Identifier{table}.Sanitize(),
			strings.Join(names, ", "), strings.Join(values, ", "))
	}
	stmts = append(stmts, insert, "RESET session_replication_role")
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("pgtest: seed %s (%s): %v", table, s, err)
		}
	}
}

// literalOf is a value of a column's type, as SQL.
func literalOf(typ, category, enumLabel string) string {
	var lit string
	switch {
	case category == "E":
		lit = enumLabel
	case category == "A":
		lit = "{}"
	case category == "N":
		lit = "1"
	case category == "B":
		lit = "false"
	case category == "D":
		lit = "2026-01-01T00:00:00Z"
	case category == "T":
		lit = "1 second"
	case category == "I":
		lit = "192.0.2.1"
	case typ == "uuid":
		return "gen_random_uuid()"
	case typ == "jsonb", typ == "json":
		lit = "{}"
	case typ == "bytea":
		lit = `\x00`
	default:
		lit = "x"
	}
	return "'" + strings.ReplaceAll(lit, "'", "''") + "'::" + typ
}

// Refused runs each statement that must fail on an immutable table, connected as appURL's
// application role, and fails the test for each one that succeeded: TRUNCATE with and without
// CASCADE, UPDATE and DELETE of its rows (seed one first with SeedRow, or they touch nothing), and
// the two ways around the triggers, ALTER TABLE ... DISABLE TRIGGER and session_replication_role.
func Refused(t testing.TB, appURL, table string) {
	t.Helper()
	refused(t, appURL, table, true)
}

// RefusedButDelete is Refused for a table whose rows never change but may be deleted one by one (a
// retention): DELETE is not tried.
func RefusedButDelete(t testing.TB, appURL, table string) {
	t.Helper()
	refused(t, appURL, table, false)
}

func refused(t testing.TB, appURL, table string, deleteToo bool) {
	t.Helper()
	ctx := context.Background()
	conn := connect(t, appURL)
	defer conn.Close(ctx)
	var first string
	if err := conn.QueryRow(ctx, `SELECT attname FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0
		AND NOT attisdropped AND attgenerated = '' ORDER BY attnum LIMIT 1`, pgx.Identifier{table}.Sanitize()).Scan(&first); err != nil {
		t.Fatalf("pgtest: first column of %s: %v", table, err)
	}
	tbl, col := pgx.Identifier{table}.Sanitize(), pgx.Identifier{first}.Sanitize()
	stmts := []string{
		"TRUNCATE " + tbl,
		"TRUNCATE " + tbl + " CASCADE",
		"UPDATE " + tbl + " SET " + col + " = " + col,
		"ALTER TABLE " + tbl + " DISABLE TRIGGER ALL",
		"ALTER TABLE " + tbl + " DISABLE TRIGGER USER",
		"SET session_replication_role = replica",
	}
	if deleteToo {
		stmts = append(stmts, "DELETE FROM "+tbl)
	}
	for _, s := range stmts {
		if tag, err := conn.Exec(ctx, s); err == nil {
			t.Errorf("as the application role, %q succeeded (%s); want it refused", s, tag)
		}
	}
}
