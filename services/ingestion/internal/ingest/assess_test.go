package ingest

import (
	"testing"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/confidence"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/extract"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/normalize"
)

func TestAssess(t *testing.T) {
	prevText := "Covered Services\nCPT 74150 is covered for suspected appendicitis in adults.\n"
	nextText := "Covered Services\nPrior authorization is required for CPT 72148 in all outpatient settings.\n"
	doc := func(text string) *normalize.Document {
		return &normalize.Document{Text: text, CanonicalHash: normalize.Hash(text),
			Sections: []normalize.Section{{Heading: "Covered Services", Start: 0, End: len(text)}}}
	}
	prev := Version{ID: uuid.New(), Asset: Asset{ID: uuid.New(), RawSHA256: "p"}, CanonicalContentHash: normalize.Hash(prevText)}
	next := Version{ID: uuid.New(), PolicyID: uuid.New(), Asset: Asset{ID: uuid.New(), RawSHA256: "n"}, CanonicalContentHash: normalize.Hash(nextText)}
	d := difference{
		src: Source{ID: uuid.New(), HealthStatus: HealthHealthy}, url: "https://docs.example/p", prev: prev, next: next,
		prevDoc: doc(prevText), nextDoc: doc(nextText),
		added: []string{"72148"}, removed: []string{"74150"}, onInserted: []string{"72148"}, onDeleted: []string{"74150"},
		rules: []confidence.Rule{{AutoPublish: 0.85, Review: 0.6}, {ChangeType: "coverage_removed", AutoPublish: 0.95, Review: 0.75}},
	}
	tests := []struct {
		name        string
		fact        extract.Fact
		wantStatus  string
		wantEvent   string
		wantSpanVer uuid.UUID
	}{
		{"addition verified on the current version",
			extract.Fact{ChangeType: "prior_auth_added", AffectedCodes: []string{"72148"}, EvidenceSide: "current",
				EvidenceQuote: "Prior authorization is required for CPT 72148 in all outpatient settings.", SectionHeading: "Covered Services"},
			FactVerified, confidence.AutoPublished, next.ID},
		{"removal verified on the previous version",
			extract.Fact{ChangeType: "coverage_removed", AffectedCodes: []string{"74150"}, EvidenceSide: "previous",
				EvidenceQuote: "CPT 74150 is covered for suspected appendicitis in adults.", SectionHeading: "Covered Services"},
			FactVerified, confidence.AutoPublished, prev.ID},
		{"a quote in neither version",
			extract.Fact{ChangeType: "coverage_added", EvidenceSide: "current", EvidenceQuote: "CPT 99999 is covered without limits."},
			FactNoVerifiableEvidence, confidence.NoVerifiableEvidence, uuid.Nil},
		{"a mismatched code cannot publish a critical change",
			extract.Fact{ChangeType: "coverage_removed", AffectedCodes: []string{"70553"}, EvidenceSide: "previous",
				EvidenceQuote: "CPT 74150 is covered for suspected appendicitis in adults."},
			FactVerified, confidence.PendingReview, prev.ID},
	}
	for _, tt := range tests {
		f := d.assess(tt.fact)
		if f.Status != tt.wantStatus || f.Event.Status != tt.wantEvent {
			t.Errorf("%s: got fact %s event %s (confidence %v %v), want %s %s", tt.name, f.Status, f.Event.Status,
				f.Event.Confidence, f.Event.Components, tt.wantStatus, tt.wantEvent)
		}
		if (f.Evidence == nil) != (tt.wantSpanVer == uuid.Nil) {
			t.Fatalf("%s: evidence span %v", tt.name, f.Evidence)
		}
		if f.Evidence != nil && (f.Evidence.VersionID != tt.wantSpanVer || f.Evidence.SourceURL != d.url || f.Evidence.Section != "Covered Services") {
			t.Errorf("%s: span %+v is not traced to version %s", tt.name, f.Evidence, tt.wantSpanVer)
		}
		if f.Event.FactID != f.ID || len(f.Event.Components) != 7 {
			t.Errorf("%s: event %+v", tt.name, f.Event)
		}
	}
}
