package intelligence_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence/registryfixture"
)

// TestSyncEveryVersionPublishedBetweenPollsGetsItsChanges is the operator's finding: several versions
// published within one poll interval each got a snapshot but only the last one a change set, and the
// superseded snapshots stayed is_latest. Every version must be compared with the version before it,
// in version order (1.0.10 after 1.0.9, whatever the listing's string order), and one snapshot per
// server stays latest. Page size 2 splits the server's versions across pages.
func TestSyncEveryVersionPublishedBetweenPollsGetsItsChanges(t *testing.T) {
	t.Parallel()
	for _, pageSize := range []int{2, 100} {
		t.Run(fmt.Sprintf("page size %d", pageSize), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, pageSize)
			h.reg.Publish(registryfixture.Server("io.example/w", "1.0.7"))
			h.poll()

			h.reg.Advance(time.Hour)
			versions := []string{"1.0.8", "1.0.9", "1.0.10", "1.0.11"}
			for i, v := range versions {
				srv := registryfixture.Server("io.example/w", v)
				srv["description"] = fmt.Sprintf("Weather, edition %d", i)
				h.reg.Publish(srv)
			}
			res := h.poll()
			if res.Snapshots != len(versions) {
				t.Fatalf("got %d snapshots, want %d", res.Snapshots, len(versions))
			}

			// Each version's changes are against the version before it: a version bump and a
			// description change (and the package version) per published version.
			key := intelligence.ServerKey{Namespace: "io.example", Name: "w"}
			changes, _, err := h.reader.Changes(h.ctx, &key, intelligence.ChangeFilter{Type: intelligence.VersionBump}, intelligence.Page{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			// Newest first.
			want := []string{"1.0.10->1.0.11", "1.0.9->1.0.10", "1.0.8->1.0.9", "1.0.7->1.0.8"}
			if len(changes) != len(want) {
				t.Fatalf("got %d version bumps, want %d (%v)", len(changes), len(want), want)
			}
			for i, c := range changes {
				if got := c.FromVersion + "->" + c.ToVersion; got != want[i] {
					t.Errorf("version bump %d: got %s, want %s", i, got, want[i])
				}
			}
			if n := h.count(`SELECT count(*) FROM intel_changes WHERE name = 'w' AND change_type = 'description_changed'`); n != len(versions) {
				t.Errorf("got %d description changes, want one per version, %d", n, len(versions))
			}
			// Every change has its event, in the same transaction.
			if n, m := h.count(`SELECT count(*) FROM outbox`), h.count(`SELECT count(*) FROM intel_changes`); n != m {
				t.Errorf("got %d events for %d changes", n, m)
			}

			st := h.server("io.example/w")
			if st.Current.Server.Version != "1.0.11" || !st.Current.IsLatest {
				t.Errorf("current: got %s (is_latest %t), want 1.0.11, latest", st.Current.Server.Version, st.Current.IsLatest)
			}
			if n := h.count(`SELECT count(*) FROM intel_snapshots WHERE is_latest`); n != 1 {
				t.Errorf("got %d snapshots stored is_latest, want 1", n)
			}
			hist, _, err := h.reader.History(h.ctx, key, intelligence.Page{Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			latest := 0
			for _, s := range hist {
				if s.IsLatest {
					latest++
					if s.ID != st.Current.ID {
						t.Errorf("history: %s is latest, want only the current %s", s.Server.Version, st.Current.Server.Version)
					}
				}
			}
			if latest != 1 || len(hist) != len(versions)+1 {
				t.Errorf("history: got %d entries, %d latest; want %d entries, 1 latest", len(hist), latest, len(versions)+1)
			}
		})
	}
}

// TestSyncOneLatestSnapshotPerServerIsEnforced: the database refuses a second latest snapshot of a
// server, and any edit of a snapshot other than clearing is_latest.
func TestSyncOneLatestSnapshotPerServerIsEnforced(t *testing.T) {
	t.Parallel()
	h := newHarness(t, 10)
	h.reg.Publish(registryfixture.Server("io.example/w", "1.0.0"))
	h.poll()
	h.reg.Publish(registryfixture.Server("io.example/w", "1.1.0"))
	h.poll()
	if _, err := h.pool.Exec(h.ctx, `
INSERT INTO intel_snapshots (id, server_id, registry, version, status, is_latest, content_hash, server_json)
SELECT gen_random_uuid(), server_id, registry, '9.9.9', status, true, content_hash, server_json
FROM intel_snapshots WHERE is_latest LIMIT 1`); err == nil {
		t.Error("a second latest snapshot of the server was accepted")
	}
	for _, stmt := range []string{
		`UPDATE intel_snapshots SET is_latest = true WHERE NOT is_latest`,
		`UPDATE intel_snapshots SET is_latest = false, status = 'deleted' WHERE is_latest`,
	} {
		if _, err := h.pool.Exec(h.ctx, stmt); err == nil {
			t.Errorf("%s: got no error, want the trigger to reject it", stmt)
		}
	}
}
