package app_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/scoring/app"
)

// TestRolesServeAsApplicationRole boots the service as the application role with the migrations
// applied by the owner (SCORING_MIGRATE_DATABASE_URL), serves routes that write, and shows that the
// application role can neither change nor empty request_records, nor switch its triggers off.
func TestRolesServeAsApplicationRole(t *testing.T) {
	t.Parallel()
	roles := pgtest.NewRoles(t)
	s := startService(t, map[string]string{
		app.EnvPrefix + "DATABASE_URL":         roles.AppURL,
		app.EnvPrefix + "MIGRATE_DATABASE_URL": roles.OwnerURL,
	})
	key := s.paidKey()
	if r := s.scoreDenial(key); r.Status != http.StatusOK {
		t.Fatalf("score as the application role: got %d %s, want 200", r.Status, r.Body)
	}

	immutable := pgtest.ImmutableTables(t, roles.AdminURL)
	if !slices.Equal(immutable, []string{"request_records"}) {
		t.Errorf("immutable tables: got %v, want [request_records]", immutable)
	}
	guarded := pgtest.TruncateGuarded(t, roles.AdminURL)
	for _, table := range immutable {
		if !slices.Contains(guarded, table) {
			t.Errorf("%s has no TRUNCATE trigger", table)
		}
		pgtest.SeedRow(t, roles.AdminURL, table)
		pgtest.Refused(t, roles.AppURL, table)
	}
	if r := s.scoreDenial(key); r.Status != http.StatusOK {
		t.Fatalf("score after the refusals: got %d %s, want 200", r.Status, r.Body)
	}
}
