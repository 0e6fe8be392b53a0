package app_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

const enforcementPath = "/v1/intelligence/enforcement"

// intelServer is a server the tests write straight into the intelligence tables, as the registry
// sync would have left it: its current snapshot, and (when risk is set) a change of that risk from
// a previous snapshot.
type intelServer struct {
	name, version, status string
	remotes               []map[string]any
	packages              []map[string]any
	risk                  string
}

// seedServer writes srv into the intelligence tables.
func seedServer(t *testing.T, s *stack, srv intelServer) {
	t.Helper()
	ctx := context.Background()
	key := srv.name
	var ns, name string
	for i := range key {
		if key[i] == '/' {
			ns, name = key[:i], key[i+1:]
			break
		}
	}
	doc := map[string]any{"name": key, "version": srv.version, "description": "test server"}
	if srv.remotes != nil {
		doc["remotes"] = srv.remotes
	}
	if srv.packages != nil {
		doc["packages"] = srv.packages
	}
	raw, _ := json.Marshal(doc)
	canonical, err := surface.Canonical(raw)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canonical)
	serverID, snapID := uuid.New(), uuid.New()
	status := srv.status
	if status == "" {
		status = "active"
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := s.Pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("seed %s: %v", key, err)
		}
	}
	exec(`INSERT INTO intel_servers (id, namespace, name) VALUES ($1, $2, $3)`, serverID, ns, name)
	// Only the current snapshot is its server's latest.
	insertSnapshot := `INSERT INTO intel_snapshots (id, server_id, registry, version, status, is_latest, content_hash, server_json)
VALUES ($1, $2, 'https://registry.test', $3, $4, $7, $5, $6)`
	if srv.risk != "" {
		prevID := uuid.New()
		exec(insertSnapshot, prevID, serverID, srv.version+"-previous", "active", hex.EncodeToString(make([]byte, 32)), `{}`, false)
		exec(insertSnapshot, snapID, serverID, srv.version, status, hex.EncodeToString(sum[:]), string(canonical), true)
		exec(`INSERT INTO intel_changes (id, server_id, namespace, name, from_snapshot_id, to_snapshot_id, from_version, to_version,
    field, old_value, new_value, change_type, risk, summary) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'version', '', '', 'version_changed', $9, 'test')`,
			uuid.New(), serverID, ns, name, prevID, snapID, srv.version+"-previous", srv.version, srv.risk)
	} else {
		exec(insertSnapshot, snapID, serverID, srv.version, status, hex.EncodeToString(sum[:]), string(canonical), true)
	}
	exec(`UPDATE intel_servers SET current_snapshot_id = $1 WHERE id = $2`, snapID, serverID)
}

// seedAudit stores an audit of url as the audit routes would: kind mcp with a verdict, or
// readiness with a score; tools, when not nil, is the listing its surface hashes.
func seedAudit(t *testing.T, s *stack, url, kind string, verdict *string, score *int, tools []surface.Tool, at time.Time) {
	t.Helper()
	report := map[string]any{"url": url, "kind": kind}
	if tools != nil {
		report["surface"] = surface.Digest(surface.Listing{Tools: tools})
	}
	raw, _ := json.Marshal(report)
	if _, err := s.Pool.Exec(context.Background(), `INSERT INTO audits (id, kind, url, issuer, subject, verdict, score, report, created_at)
VALUES ($1, $2, $3, 'test', 'test', $4, $5, $6, $7)`, uuid.New(), kind, url, verdict, score, raw, at); err != nil {
		t.Fatalf("seed audit of %s: %v", url, err)
	}
}

func strp(s string) *string { return &s }
func intp(n int) *int       { return &n }
