package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/verification/app"
)

// TestSeedMatchesTheSync seeds a small registry history and runs the checks the bench runs after its
// seed: the schema is unchanged, no reference dangles, and a sample of servers has the snapshots,
// content hashes, classified changes (intelligence.Diff), pointers and counters the sync would have written.
func TestSeedMatchesTheSync(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	env := map[string]string{"VERIFICATION_DATABASE_URL": dbURL, "VERIFICATION_ADMIN_TOKEN": adminToken, "VERIFICATION_BLOB_URL": "mem://"}
	if err := app.Main(ctx, []string{"migrate"}, func(k string) string { return env[k] }, io.Discard); err != nil {
		t.Fatal(err)
	}
	spec := seedSpec{Servers: 40, History: 60, Long: 1, LongHistory: 300, Span: 30 * 24 * time.Hour}
	st, err := seed(ctx, dbURL, spec)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(spec.snapshots()); st.Snapshots != want || st.Servers != 41 {
		t.Errorf("got %d servers and %d snapshots, want 41 and %d", st.Servers, st.Snapshots, want)
	}
	// 59 releases of 40 servers and 299 of the long one, two changes each, three for every 25th.
	if want := int64(40*(2*59+2) + 2*299 + 299/25); st.Changes != want {
		t.Errorf("got %d changes, want %d", st.Changes, want)
	}
}
