package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"html/template"
	"time"

	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/runs"
)

//go:embed evidence_templates/*.html
var evidenceFiles embed.FS

// evidenceTemplate is the evidence page: html/template escapes every value (a target's tool names
// and descriptions are the target's own text), and the page loads nothing from elsewhere.
var evidenceTemplate = template.Must(template.New("evidence.html").Funcs(template.FuncMap{
	"when": func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	},
}).ParseFS(evidenceFiles, "evidence_templates/evidence.html"))

// evidenceAudit is one audit of the evidence document, as the page shows it.
type evidenceAudit struct {
	Evaluator string `json:"evaluator"`
	AuditID   string `json:"audit_id"`
	Report    struct {
		URL        string `json:"url"`
		Verdict    string `json:"verdict"`
		Score      *int   `json:"score"`
		DurationMS int64  `json:"duration_ms"`
		Checks     []struct {
			ID      string `json:"id"`
			Name    string `json:"name"`
			Status  string `json:"status"`
			Details string `json:"details"`
		} `json:"checks"`
		Rules []struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Passed bool   `json:"passed"`
		} `json:"rules"`
	} `json:"report"`
}

type evidenceDoc struct {
	Target struct {
		Name       string   `json:"name"`
		URL        string   `json:"url"`
		Evaluators []string `json:"evaluators"`
	} `json:"target"`
	Audits  []evidenceAudit `json:"audits"`
	Service struct {
		Version string `json:"version"`
	} `json:"service"`
	Decision struct {
		PolicySource string `json:"policy_source"`
	} `json:"decision"`
}

// EvidencePage renders a finished run's evidence as a self-contained HTML page a reviewer can
// attach to a change request: the run, the decision and its reasons, the changes, the checks, the
// tool surface and the manifest with which the JSON evidence can be checked.
func EvidencePage(run runs.Run, ev runs.Evidence, m runs.Manifest) ([]byte, error) {
	var doc evidenceDoc
	if err := json.Unmarshal(ev.Document, &doc); err != nil {
		return nil, err
	}
	data := struct {
		Run      runs.Run
		Evidence runs.Evidence
		Manifest runs.Manifest
		Doc      evidenceDoc
		Intact   bool
	}{run, ev, m, doc, m.DocumentSHA256 == ev.SHA256}
	var buf bytes.Buffer
	if err := evidenceTemplate.Execute(&buf, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
