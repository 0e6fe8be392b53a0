package enforcement

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Artifact formats.
const (
	// FormatJSONAllowlist is one file, allowlist.json, valid against AllowlistSchema.
	FormatJSONAllowlist = "json_allowlist"
	// FormatOPARego is an Open Policy Agent policy (Rego v1), policy.rego, and its data document,
	// data.json ({"mcp_allowlist": <the allowlist>}).
	FormatOPARego = "opa_rego"
)

// Formats lists the artifact formats.
var Formats = []string{FormatJSONAllowlist, FormatOPARego}

// AllowlistFormat names the layout of allowlist.json.
const AllowlistFormat = "mcp-allowlist/v1"

// AllowlistSchema is the JSON Schema (draft 2020-12) of allowlist.json.
//
//go:embed allowlist.schema.json
var AllowlistSchema []byte

// RegoPolicy is the Rego module of the opa_rego format: the same for every snapshot, which only
// changes the data document. Query data.mcp_enforcement.allow (and .deny for the reasons).
//
//go:embed policy.rego
var RegoPolicy []byte

// Allowlist is allowlist.json: the allowed servers of a snapshot, their allowed remotes with their
// allowed tools (with their hashes when the policy pins tools), and their allowed packages.
type Allowlist struct {
	Format         string                   `json:"format"`
	PolicyID       string                   `json:"policy_id"`
	PolicyVersion  int                      `json:"policy_version"`
	SnapshotID     string                   `json:"snapshot_id"`
	SnapshotSHA256 string                   `json:"snapshot_sha256"`
	Pinned         bool                     `json:"pinned"`
	Servers        map[string]AllowedServer `json:"servers"`
}

// AllowedServer is an allowed server.
type AllowedServer struct {
	Version  string                   `json:"version"`
	Remotes  map[string]AllowedRemote `json:"remotes"`
	Packages []AllowedPackage         `json:"packages"`
}

// AllowedRemote is an allowed remote, by URL.
type AllowedRemote struct {
	Type string `json:"type"`
	// AllTools: the policy neither pins nor decides tools, so every tool of the remote is allowed,
	// listed or not.
	AllTools bool                   `json:"all_tools"`
	Tools    map[string]AllowedTool `json:"tools"`
}

// AllowedTool is an allowed tool; its hashes are set when the policy pins tools.
type AllowedTool struct {
	DescriptionSHA256  *string `json:"description_sha256,omitempty"`
	InputSchemaSHA256  *string `json:"input_schema_sha256,omitempty"`
	OutputSchemaSHA256 *string `json:"output_schema_sha256,omitempty"`
}

// AllowedPackage is an allowed package.
type AllowedPackage struct {
	RegistryType string `json:"registry_type"`
	Identifier   string `json:"identifier"`
	Version      string `json:"version"`
	Transport    string `json:"transport"`
}

// decidesTools tells whether rules say anything about tools.
func (r Rules) decidesTools() bool {
	return len(r.Tools.Names.Allow) > 0 || len(r.Tools.Names.Deny) > 0 || len(r.Tools.DenyAnnotations) > 0
}

// BuildAllowlist is the allowlist of s, compiled from rules.
func BuildAllowlist(s Snapshot, rules Rules) Allowlist {
	a := Allowlist{
		Format: AllowlistFormat, PolicyID: s.PolicyID.String(), PolicyVersion: s.Version, SnapshotID: s.ID.String(),
		SnapshotSHA256: s.ContentSHA256, Pinned: s.Content.Pinned, Servers: map[string]AllowedServer{},
	}
	allTools := !s.Content.Pinned && !rules.decidesTools()
	for _, srv := range s.Content.Servers {
		if srv.Decision != Allow {
			continue
		}
		as := AllowedServer{Version: srv.Version, Remotes: map[string]AllowedRemote{}, Packages: []AllowedPackage{}}
		for _, r := range srv.Remotes {
			if r.Decision != Allow {
				continue
			}
			ar := AllowedRemote{Type: r.Type, AllTools: allTools, Tools: map[string]AllowedTool{}}
			for _, t := range r.Tools {
				if t.Decision != Allow {
					continue
				}
				var at AllowedTool
				if s.Content.Pinned {
					at = AllowedTool{DescriptionSHA256: ptr(t.DescriptionSHA256), InputSchemaSHA256: ptr(t.InputSchemaSHA256),
						OutputSchemaSHA256: ptr(t.OutputSchemaSHA256)}
				}
				ar.Tools[t.Name] = at
			}
			as.Remotes[r.URL] = ar
		}
		for _, p := range srv.Packages {
			if p.Decision == Allow {
				as.Packages = append(as.Packages, AllowedPackage{RegistryType: p.RegistryType, Identifier: p.Identifier, Version: p.Version, Transport: p.Transport})
			}
		}
		a.Servers[srv.Server] = as
	}
	return a
}

func ptr(s string) *string { return &s }

// Generate makes the files of format from s (compiled from rules); they depend on nothing else, so
// the same snapshot and format always give the same bytes.
func Generate(format string, s Snapshot, rules Rules) ([]File, error) {
	list, err := encode(BuildAllowlist(s, rules))
	if err != nil {
		return nil, err
	}
	switch format {
	case FormatJSONAllowlist:
		return []File{newFile("allowlist.json", "application/json", list)}, nil
	case FormatOPARego:
		data, err := encode(map[string]any{"mcp_allowlist": json.RawMessage(list)})
		if err != nil {
			return nil, err
		}
		return []File{newFile("data.json", "application/json", data), newFile("policy.rego", "text/plain; charset=utf-8", RegoPolicy)}, nil
	}
	return nil, fmt.Errorf("unknown artifact format %q", format)
}

// encode is v as indented JSON (map keys sorted by encoding/json) with a final newline.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func newFile(path, mediaType string, content []byte) File {
	sum := sha256.Sum256(content)
	return File{Path: path, MediaType: mediaType, SHA256: hex.EncodeToString(sum[:]), Size: len(content), Content: content}
}

// ManifestSHA256 is an artifact's SHA-256: that of the sha256sum lines ("<sha256>  <path>\n") of its
// files in path order, which `sha256sum -c` checks against the files.
func ManifestSHA256(files []File) string {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	var b strings.Builder
	for _, f := range sorted {
		b.WriteString(f.SHA256 + "  " + f.Path + "\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}
