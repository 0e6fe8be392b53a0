package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/verification/internal/enforcement"
)

// enforcementServers reads every server at its current snapshot, with the highest risk of the
// changes that produced that snapshot (through intel_changes_server: the server's changes, whose
// to_snapshot_id is its current one).
const enforcementServers = `
SELECT s.namespace || '/' || s.name, sn.version, sn.status, sn.content_hash, sn.server_json::text,
    COALESCE((SELECT MAX(CASE c.risk WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END) FROM intel_changes c
              WHERE c.server_id = s.id AND c.to_snapshot_id = s.current_snapshot_id), 0)
FROM intel_servers s JOIN intel_snapshots sn ON sn.id = s.current_snapshot_id
ORDER BY s.namespace COLLATE "C", s.name COLLATE "C"`

// serverWire is what a compile reads of a server.json: its remotes and its packages' transports.
type serverWire struct {
	Remotes []struct {
		Type string `json:"type"`
		URL  string `json:"url"`
	} `json:"remotes"`
	Packages []struct {
		RegistryType string `json:"registryType"`
		Identifier   string `json:"identifier"`
		Version      string `json:"version"`
		Transport    *struct {
			Type string `json:"type"`
		} `json:"transport"`
	} `json:"packages"`
}

var riskNames = [...]string{"", "low", "medium", "high"}

// Servers returns every server at its current snapshot, sorted by "{namespace}/{name}" in byte order.
func (s *Enforcement) Servers(ctx context.Context) ([]enforcement.ServerInput, error) {
	rows, err := s.pool.Query(ctx, enforcementServers)
	if err != nil {
		return nil, err
	}
	var out []enforcement.ServerInput
	var in enforcement.ServerInput
	var doc string
	var risk int
	_, err = pgx.ForEachRow(rows, []any{&in.Key, &in.Version, &in.Status, &in.ContentHash, &doc, &risk}, func() error {
		var w serverWire
		if err := json.Unmarshal([]byte(doc), &w); err != nil {
			return fmt.Errorf("server %s: %w", in.Key, err)
		}
		srv := enforcement.ServerInput{Key: in.Key, Version: in.Version, Status: in.Status, ContentHash: in.ContentHash,
			ChangeRisk: riskNames[min(max(risk, 0), 3)]}
		for _, r := range w.Remotes {
			srv.Remotes = append(srv.Remotes, enforcement.RemoteInput{Type: r.Type, URL: r.URL})
		}
		for _, p := range w.Packages {
			transport := "stdio"
			if p.Transport != nil && p.Transport.Type != "" {
				transport = p.Transport.Type
			}
			srv.Packages = append(srv.Packages, enforcement.PackageInput{RegistryType: p.RegistryType, Identifier: p.Identifier,
				Version: p.Version, Transport: transport})
		}
		out = append(out, srv)
		return nil
	})
	return out, err
}

// enforcementAudits reads the latest audit of each kind of each URL (through enforcement_audits_url).
const enforcementAudits = `
SELECT DISTINCT ON (url, kind) url, kind, verdict, score, report->'surface'->'tools', created_at
FROM audits WHERE url = ANY($1)
ORDER BY url, kind, created_at DESC, id DESC`

// Audits returns what the latest audits of each URL say: the latest conformance verdict, the latest
// readiness score, and the tools of the newer of those two audits that listed tools.
func (s *Enforcement) Audits(ctx context.Context, urls []string) (map[string]enforcement.AuditInput, error) {
	out := map[string]enforcement.AuditInput{}
	if len(urls) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, enforcementAudits, urls)
	if err != nil {
		return nil, err
	}
	listedAt := map[string]time.Time{}
	var url, kind string
	var verdict *string
	var score *int
	var tools []byte
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&url, &kind, &verdict, &score, &tools, &at}, func() error {
		a := out[url]
		switch kind {
		case "mcp":
			if verdict != nil {
				a.Verdict = *verdict
			}
		case "readiness":
			if score != nil {
				v := *score
				a.Score = &v
			}
		}
		if len(tools) > 0 && string(tools) != "null" && (!a.Listed || at.After(listedAt[url])) {
			var list []enforcement.ToolInput
			if err := json.Unmarshal(tools, &list); err != nil {
				return fmt.Errorf("audit of %s: tools: %w", url, err)
			}
			a.Listed, a.Tools, listedAt[url] = true, list, at
		}
		out[url] = a
		return nil
	})
	return out, err
}
