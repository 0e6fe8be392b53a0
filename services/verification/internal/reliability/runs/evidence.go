package runs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
)

// EvidenceFormat names the evidence document's layout.
const EvidenceFormat = "trustlayer.agent-reliability.evidence/v1"

// Part is one top-level part of an evidence document with its hash.
type Part struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
	Bytes  int    `json:"bytes"`
}

// Manifest hashes each part of an evidence document and the whole: each hash is the SHA-256 of the
// RFC 8785 canonical JSON of the part (the document for DocumentSHA256), so that the stored JSON,
// whatever its key order or spacing, can be checked against it later.
type Manifest struct {
	Algorithm        string `json:"algorithm"`
	Canonicalization string `json:"canonicalization"`
	Parts            []Part `json:"parts"`
	DocumentSHA256   string `json:"document_sha256"`
}

// ManifestOf computes the manifest of an evidence document.
func ManifestOf(document []byte) (Manifest, error) {
	var parts map[string]json.RawMessage
	if err := json.Unmarshal(document, &parts); err != nil {
		return Manifest{}, fmt.Errorf("evidence: %w", err)
	}
	m := Manifest{Algorithm: "sha256", Canonicalization: "RFC 8785 (JSON Canonicalization Scheme)", Parts: []Part{}}
	names := make([]string, 0, len(parts))
	for k := range parts {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		c, err := surface.Canonical(parts[name])
		if err != nil {
			return Manifest{}, fmt.Errorf("evidence part %s: %w", name, err)
		}
		m.Parts = append(m.Parts, Part{Name: name, SHA256: digest(c), Bytes: len(c)})
	}
	whole, err := surface.Canonical(document)
	if err != nil {
		return Manifest{}, fmt.Errorf("evidence: %w", err)
	}
	m.DocumentSHA256 = digest(whole)
	return m, nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// evidence builds the document of a finished run: what the run was asked, the target, the audits'
// reports as stored (requests and responses trimmed and redacted by the engine), the summary with
// the tool surface, the baseline, the diff, the decision with the policy, timings and the service.
func (s *Service) evidence(c Claimed, f Finish, recs []auditRecord, started time.Time, baseline any, policy StoredPolicy) (Evidence, error) {
	r := c.Run
	auditParts := make([]map[string]any, 0, len(recs))
	timings := map[string]any{
		"queued_ms": started.Sub(r.CreatedAt).Milliseconds(),
		"total_ms":  f.FinishedAt.Sub(started).Milliseconds(),
	}
	for _, a := range recs {
		auditParts = append(auditParts, map[string]any{"evaluator": a.evaluator, "audit_id": a.rec.ID, "report": json.RawMessage(a.rec.Report)})
		timings[a.evaluator+"_audit_ms"] = a.took.Milliseconds()
	}
	doc := map[string]any{
		"format": EvidenceFormat,
		"run": map[string]any{
			"id": r.ID, "organization_id": r.OrganizationID, "repository_id": r.RepositoryID, "target_id": r.TargetID,
			"state": f.State, "trigger": r.Trigger, "commit_sha": r.CommitSHA, "ref": r.Ref, "requested_by": r.RequestedBy,
			"scheduled_for": r.ScheduledFor, "attempts": r.Attempts, "created_at": r.CreatedAt, "started_at": started,
			"finished_at": f.FinishedAt, "failure_code": f.FailureCode, "failure_message": f.FailureMessage,
		},
		"target":   map[string]any{"id": c.Target.ID, "name": c.Target.Name, "url": c.Target.URL, "evaluators": c.Target.Evaluators},
		"audits":   auditParts,
		"summary":  f.Summary,
		"baseline": baseline,
		"diff":     map[string]any{"changes": nonNil(f.Changes)},
		"decision": map[string]any{
			"decision": f.Decision, "reasons": nonNil(f.Reasons), "policy_source": policy.Source, "policy_revision": policy.Revision,
			"policy": policyOrNil(policy),
		},
		"timings": timings,
		"service": map[string]any{"name": "verification", "version": s.d.Version, "go_version": runtime.Version()},
	}
	body, err := json.Marshal(doc)
	if err != nil {
		return Evidence{}, err
	}
	// PostgreSQL's jsonb refuses the NUL character, which a hostile target's text may carry: it
	// becomes U+FFFD before the document is hashed, so that the stored document is the hashed one.
	body = bytes.ReplaceAll(body, []byte(`\u0000`), []byte(`\ufffd`))
	m, err := ManifestOf(body)
	if err != nil {
		return Evidence{}, err
	}
	return Evidence{RunID: r.ID, Document: body, SHA256: m.DocumentSHA256, CreatedAt: f.FinishedAt}, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func policyOrNil(p StoredPolicy) any {
	if p.Source == "" {
		return nil
	}
	return p.Policy
}
