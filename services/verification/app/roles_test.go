package app_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/verification/app"
)

// immutableBefore00010 are the tables migration 00017 guards against TRUNCATE, with audits, whose rows
// never change but may be deleted; later migrations guard their own tables, which the catalog check
// below covers too.
var immutableBefore00010 = []string{
	"feed_artifacts", "intel_changes", "intel_snapshots", "webhook_attempts", "webhook_events",
}

// TestRolesServeAsApplicationRole boots the service as the application role with the migrations
// applied by the owner (VERIFICATION_MIGRATE_DATABASE_URL), serves a route that writes, and shows that
// the application role can neither change nor empty an immutable table, nor switch its triggers off.
func TestRolesServeAsApplicationRole(t *testing.T) {
	t.Parallel()
	roles := pgtest.NewRoles(t)
	s := startService(t, map[string]string{
		app.EnvPrefix + "DATABASE_URL":         roles.AppURL,
		app.EnvPrefix + "MIGRATE_DATABASE_URL": roles.OwnerURL,
	})
	orgID, _ := s.newKey("acme") // an organization and a key: INSERTs through the application role

	immutable := pgtest.ImmutableTables(t, roles.AdminURL)
	for _, table := range immutableBefore00010 {
		if !slices.Contains(immutable, table) {
			t.Errorf("%s has no row trigger refusing UPDATE or DELETE", table)
		}
	}
	if guarded := pgtest.TruncateGuarded(t, roles.AdminURL); !isSubset(immutable, guarded) {
		t.Errorf("immutable tables without a TRUNCATE trigger: got guarded %v, immutable %v", guarded, immutable)
	}
	for _, table := range immutable {
		pgtest.SeedRow(t, roles.AdminURL, table)
		pgtest.Refused(t, roles.AppURL, table)
	}
	pgtest.SeedRow(t, roles.AdminURL, "audits")
	pgtest.RefusedButDelete(t, roles.AppURL, "audits")
	// Still serving after the refusals.
	s.Must("GET", "/v1/intelligence/organizations/"+orgID+"/api-keys", nil, admin, http.StatusOK)
}

func isSubset(small, big []string) bool {
	for _, v := range small {
		if !slices.Contains(big, v) {
			return false
		}
	}
	return true
}
