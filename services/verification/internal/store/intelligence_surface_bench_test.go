package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/pkg/pgtest"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
)

// BenchmarkAuditInsertWithSurface measures what recording the tool surface adds to storing an audit
// report, with 20,000 servers each listing a remote of its own: the GIN index on the remotes finds
// the listing servers. "unlisted" is an audit of a URL no server lists (most audits), "unchanged" of
// a listed URL whose surface did not change (every sweep audit of a quiet server), "plain" an audit
// without a listing (the cost before the timeline).
func BenchmarkAuditInsertWithSurface(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.NewPool(b, outbox.Migrations(), store.Migrations())
	if _, err := pool.Exec(ctx, `
INSERT INTO intel_servers (id, namespace, name)
SELECT gen_random_uuid(), 'io.bench', 's' || i FROM generate_series(1, 20000) i;
INSERT INTO intel_snapshots (id, server_id, registry, version, status, is_latest, content_hash, server_json)
SELECT gen_random_uuid(), s.id, 'https://registry.example', '1.0.0', 'active', true, repeat('a', 64),
       json_build_object('name', 'io.bench/' || s.name, 'version', '1.0.0',
           'remotes', json_build_array(json_build_object('type', 'streamable-http', 'url', 'https://' || s.name || '.example.com/mcp')))
FROM intel_servers s;
UPDATE intel_servers s SET current_snapshot_id = x.id FROM intel_snapshots x WHERE x.server_id = s.id;
ANALYZE intel_snapshots;`); err != nil {
		b.Fatal(err)
	}
	a := store.NewAudits(pool)
	verdict := "pass"
	insert := func(b *testing.B, url string, withListing bool) {
		rec := audits.Audit{ID: uuid.New(), Kind: audits.KindConformance, URL: url, Issuer: "bench", Subject: "s",
			Verdict: &verdict, Report: []byte(`{}`), CreatedAt: time.Now().UTC()}
		if withListing {
			rec.Listing = listing("get_forecast", "list_stations", "delete_alert")
		}
		if err := a.Insert(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			insert(b, "https://s1.example.com/mcp", false)
		}
	})
	b.Run("unlisted", func(b *testing.B) {
		for b.Loop() {
			insert(b, "https://nobody.example.com/mcp", true)
		}
	})
	b.Run("unchanged", func(b *testing.B) {
		insert(b, "https://s777.example.com/mcp", true)
		for b.Loop() {
			insert(b, "https://s777.example.com/mcp", true)
		}
	})
}
