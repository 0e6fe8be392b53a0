package runs

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/verification/internal/audit/surface"
	"github.com/trustlayer/trustlayer/services/verification/internal/audits"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/gate"
)

// TestManifestOf: the manifest depends on the document's content, not on its key order or spacing,
// and any change of a part changes that part's hash and the document's.
func TestManifestOf(t *testing.T) {
	a := []byte(`{"run":{"id":"r","attempts":1},"diff":{"changes":[]},"format":"f"}`)
	b := []byte(`{ "format" : "f", "diff": {"changes": []}, "run": {"attempts": 1.0, "id": "r"} }`)
	c := []byte(`{"run":{"id":"r","attempts":2},"diff":{"changes":[]},"format":"f"}`)
	ma, err := ManifestOf(a)
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := ManifestOf(b)
	mc, _ := ManifestOf(c)
	if ma.DocumentSHA256 != mb.DocumentSHA256 || len(ma.Parts) != 3 || ma.Parts[0].Name != "diff" || ma.Parts[2].Name != "run" {
		t.Errorf("manifests %+v %+v", ma, mb)
	}
	for i := range ma.Parts {
		if ma.Parts[i] != mb.Parts[i] {
			t.Errorf("part %s: %+v != %+v", ma.Parts[i].Name, ma.Parts[i], mb.Parts[i])
		}
	}
	if mc.DocumentSHA256 == ma.DocumentSHA256 || mc.Parts[2].SHA256 == ma.Parts[2].SHA256 || mc.Parts[0].SHA256 != ma.Parts[0].SHA256 {
		t.Errorf("a changed run part: %+v vs %+v", mc, ma)
	}
	if _, err := ManifestOf([]byte(`[1]`)); err == nil {
		t.Error("a document that is not an object")
	}
}

// TestSummarize reads the summary of a run from its audits' reports.
func TestSummarize(t *testing.T) {
	conf := audits.Record{ID: uuid.New(), Kind: audits.KindConformance, Listing: &surface.Listing{Tools: []surface.Tool{{Name: "b"}, {Name: "a"}}},
		Report: []byte(`{"verdict":"warn","checks":[{"id":"x","status":"SUCCESS"},{"id":"y","status":"FAILURE"}],"surface":{"hash":"abc"}}`)}
	ready := audits.Record{ID: uuid.New(), Kind: audits.KindReadiness, Listing: &surface.Listing{},
		Report: []byte(`{"score":85,"production_ready":true,"rules":[{"id":"r1","passed":true},{"id":"r2","passed":false}],"surface":{"hash":"zzz"}}`)}
	sum, err := summarize([]auditRecord{{evaluator: audits.KindConformance, rec: conf}, {evaluator: audits.KindReadiness, rec: ready}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(sum.Checks)
	want := `[{"id":"x","evaluator":"mcp","status":"SUCCESS"},{"id":"y","evaluator":"mcp","status":"FAILURE"},` +
		`{"id":"r1","evaluator":"readiness","status":"SUCCESS"},{"id":"r2","evaluator":"readiness","status":"FAILURE"}]`
	if sum.Verdict != "warn" || sum.ReadinessScore == nil || *sum.ReadinessScore != 85 || !sum.ProductionReady || !sum.Listed ||
		sum.SurfaceSHA256 != "abc" || len(sum.Tools) != 2 || string(got) != want {
		t.Errorf("summary %+v checks %s", sum, got)
	}
	if names := sum.ToolNames(); names[0] != "a" {
		t.Errorf("tool names %v", names)
	}
	// Without a listing the surface is not listed, and diffs leave it out.
	conf.Listing = nil
	sum, _ = summarize([]auditRecord{{evaluator: audits.KindConformance, rec: conf}})
	if sum.Listed || sum.SurfaceSHA256 != "" {
		t.Errorf("unlisted summary %+v", sum)
	}
	if _, err := summarize([]auditRecord{{evaluator: audits.KindConformance, rec: audits.Record{Report: []byte("{")}}}); err == nil {
		t.Error("a report that is not JSON")
	}
}

// TestFailure: a failed audit's code and message are stable and name no internal cause.
func TestFailure(t *testing.T) {
	for _, c := range []struct {
		err  error
		code string
	}{
		{audits.ErrUnavailable, FailureDependency},
		{audits.ErrAuditFailed, FailureAuditFailed},
		{json.Unmarshal([]byte("{"), &struct{}{}), FailureAuditFailed},
	} {
		code, msg := failure(c.err)
		if code != c.code || msg == "" || msg == c.err.Error() {
			t.Errorf("%v: %s %q", c.err, code, msg)
		}
	}
}

// TestEvidenceNUL: a NUL a target put in its tool listing is replaced before the document is hashed,
// so that the stored document (jsonb refuses NUL) still matches its hash.
func TestEvidenceNUL(t *testing.T) {
	s := New(Deps{Version: "test"})
	now := time.Now().UTC()
	c := Claimed{Run: Run{ID: uuid.New(), CreatedAt: now}, Target: Target{Name: "t", URL: "https://example.com/mcp", Evaluators: []string{"mcp"}}}
	f := Finish{State: reliability.Succeeded, FinishedAt: now, Summary: &gate.Summary{Listed: true, Tools: []surface.Tool{{Name: "a\x00b"}}}}
	ev, err := s.evidence(c, f, nil, now, nil, StoredPolicy{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := ManifestOf(ev.Document)
	if err != nil || bytes.Contains(ev.Document, []byte(`\u0000`)) || m.DocumentSHA256 != ev.SHA256 || !bytes.Contains(ev.Document, []byte(`a\ufffdb`)) {
		t.Errorf("document %s, hash %s, manifest %+v (%v)", ev.Document, ev.SHA256, m, err)
	}
}
