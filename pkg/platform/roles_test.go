package platform_test

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/pkg/natstest"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/pkg/platform"
)

// The migrate command runs as the owner of DEMO_MIGRATE_DATABASE_URL and grants the role of
// DEMO_DATABASE_URL; the service then opens as that role and migrates nothing.
func TestMigrateCommandAsOwnerGrantsTheApplicationRole(t *testing.T) {
	t.Parallel()
	roles := pgtest.NewRoles(t)
	env := getenv(map[string]string{
		"DEMO_DATABASE_URL": roles.AppURL, "DEMO_MIGRATE_DATABASE_URL": roles.OwnerURL,
		"DEMO_ADMIN_TOKEN": "0123456789abcdef", "NATS_URL": natstest.URL(), "NATS_NAMESPACE": natstest.Namespace(t),
	})
	s, err := platform.LoadSpec(env, "demo", "DEMO_", "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if s.MigrateDatabaseURL != roles.OwnerURL {
		t.Fatalf("MigrateDatabaseURL: got %q, want the owner's URL", s.MigrateDatabaseURL)
	}
	var out bytes.Buffer
	specOf := func(func(string) string) (platform.Spec, error) { return s, nil }
	if err := platform.Command(context.Background(), []string{"migrate"}, env, &out, specOf, nil); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if !strings.Contains(out.String(), `"msg":"application role granted"`) {
		t.Errorf("log %s: want the grant logged", out.String())
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, roles.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var owner string
	if err := conn.QueryRow(ctx, `SELECT tableowner FROM pg_tables WHERE tablename = 'outbox'`).Scan(&owner); err != nil || owner != roles.Owner {
		t.Fatalf("owner of outbox: got %q (%v), want %s", owner, err, roles.Owner)
	}

	p, err := platform.Open(ctx, s, env, io.Discard)
	if err != nil {
		t.Fatalf("open as the application role: %v", err)
	}
	defer p.Close()
	if _, err := p.Pool.Exec(ctx, `TRUNCATE outbox`); err == nil {
		t.Error("TRUNCATE as the application role succeeded; want it refused")
	}
}

func TestMigrateDatabaseURLIsValidatedAndListed(t *testing.T) {
	t.Parallel()
	_, err := platform.LoadSpec(getenv(map[string]string{
		"DEMO_DATABASE_URL": "postgres://a@h/db", "DEMO_ADMIN_TOKEN": "0123456789abcdef",
		"DEMO_MIGRATE_DATABASE_URL": "mysql://owner@h/db", "NATS_URL": "nats://127.0.0.1:4222",
	}), "demo", "DEMO_", ":1", ":2")
	if err == nil || !strings.Contains(err.Error(), "\nDEMO_MIGRATE_DATABASE_URL:") {
		t.Errorf("got %v, want a line for DEMO_MIGRATE_DATABASE_URL", err)
	}
	if !slices.Contains(platform.ConfigVars("DEMO_"), "DEMO_MIGRATE_DATABASE_URL") {
		t.Errorf("ConfigVars %v lacks DEMO_MIGRATE_DATABASE_URL", platform.ConfigVars("DEMO_"))
	}
}
