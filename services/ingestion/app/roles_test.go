package app_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/ingestion/app"
)

// immutable are the ledger's immutable records, which migration 00002 guards against TRUNCATE.
var immutable = []string{
	"change_events", "document_assets", "document_observations", "document_versions", "evidence_spans", "extracted_facts",
}

// TestRolesServeAsApplicationRole boots the service as the application role with the migrations
// applied by the owner (INGESTION_MIGRATE_DATABASE_URL), serves a route that writes, and shows that
// the application role can neither change nor empty an immutable record table, nor switch its
// triggers off.
func TestRolesServeAsApplicationRole(t *testing.T) {
	t.Parallel()
	roles := pgtest.NewRoles(t)
	s := startService(t, map[string]string{
		app.EnvPrefix + "DATABASE_URL":         roles.AppURL,
		app.EnvPrefix + "MIGRATE_DATABASE_URL": roles.OwnerURL,
	})
	s.literalSource("/policy.html", nil)

	if got := pgtest.ImmutableTables(t, roles.AdminURL); !slices.Equal(got, immutable) {
		t.Errorf("immutable tables: got %v, want %v", got, immutable)
	}
	guarded := pgtest.TruncateGuarded(t, roles.AdminURL)
	for _, table := range immutable {
		if !slices.Contains(guarded, table) {
			t.Errorf("%s has no TRUNCATE trigger", table)
		}
		pgtest.SeedRow(t, roles.AdminURL, table)
		pgtest.Refused(t, roles.AppURL, table)
	}
	s.admin("GET", "/v1/sources", nil, http.StatusOK)
}
