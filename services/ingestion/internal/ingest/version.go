package ingest

import (
	"context"
	"fmt"
	"io"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/confidence"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/extract"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/normalize"
)

type versionOutcome struct {
	newVersion bool
	facts      int
}

// recordVersion normalises a fetched document and, when its text differs from the policy's current
// version, writes the new version with the facts extracted from the difference. Identical bytes and
// markup-only re-renders (same canonical text) write nothing.
func (s *Service) recordVersion(ctx context.Context, src Source, policyID uuid.UUID, url string, asset Asset, body io.Reader, mediaType string, opts ...normalize.Option) (versionOutcome, error) {
	cur, err := s.store.CurrentVersion(ctx, policyID)
	if err != nil {
		return versionOutcome{}, err
	}
	if cur != nil && cur.Asset.RawSHA256 == asset.RawSHA256 {
		return versionOutcome{}, nil
	}
	doc, err := normalize.Normalize(ctx, mediaType, body, opts...)
	if err != nil {
		return versionOutcome{}, fmt.Errorf("normalise: %w", err)
	}
	if cur != nil && cur.CanonicalContentHash == doc.CanonicalHash {
		return versionOutcome{}, nil
	}
	next := Version{
		ID: uuid.Must(uuid.NewV7()), PolicyID: policyID, Number: 1, Asset: asset,
		CanonicalContentHash: doc.CanonicalHash, CanonicalText: doc.Text, Sections: sectionsOf(doc),
	}
	rec := VersionRecord{Source: src, Version: next}
	if cur != nil {
		next.Number = cur.Number + 1
		rec.Version = next
		if cur.CanonicalText, cur.Sections, err = s.store.VersionContent(ctx, cur.ID); err != nil {
			return versionOutcome{}, err
		}
		if rec.Facts, err = s.facts(ctx, src, url, *cur, next, documentOf(*cur), doc); err != nil {
			return versionOutcome{}, err
		}
	}
	for _, f := range rec.Facts {
		if f.Event.Status != confidence.AutoPublished {
			continue
		}
		msg, err := s.encode(src, f, s.now())
		if err != nil {
			return versionOutcome{}, err
		}
		rec.Published = append(rec.Published, msg)
	}
	if err := s.store.RecordVersion(ctx, rec); err != nil {
		return versionOutcome{}, err
	}
	return versionOutcome{newVersion: true, facts: len(rec.Facts)}, nil
}

// facts extracts the facts of one difference, verifies their evidence, scores them and decides their
// change events' statuses.
func (s *Service) facts(ctx context.Context, src Source, url string, prev, next Version, prevDoc, nextDoc *normalize.Document) ([]Fact, error) {
	extracted, err := extract.Extract(ctx, prevDoc, nextDoc)
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	d := difference{src: src, url: url, prev: prev, next: next, prevDoc: prevDoc, nextDoc: nextDoc}
	// Computed independently of the extracted facts, for the cross-check component.
	d.added, d.removed = extract.CodeDiff(prevDoc.Text, nextDoc.Text)
	if d.onInserted, d.onDeleted, err = extract.ChangedLineCodes(ctx, prevDoc.Text, nextDoc.Text); err != nil {
		return nil, fmt.Errorf("cross-check diff: %w", err)
	}
	if d.rules, err = s.store.ThresholdRules(ctx, src.ID); err != nil {
		return nil, err
	}
	out := make([]Fact, 0, len(extracted))
	for _, x := range extracted {
		out = append(out, d.assess(x))
	}
	return out, nil
}

// difference is one version change of a policy with what its facts are assessed against.
type difference struct {
	src                   Source
	url                   string
	prev, next            Version
	prevDoc, nextDoc      *normalize.Document
	added, removed        []string
	onInserted, onDeleted []string
	rules                 []confidence.Rule
}

// assess verifies an extracted fact's evidence, scores it and decides its change event.
func (d difference) assess(x extract.Fact) Fact {
	prev, next := d.prev, d.next
	f := Fact{
		ID: uuid.Must(uuid.NewV7()), PolicyID: next.PolicyID, VersionID: next.ID, PreviousVersionID: prev.ID,
		ChangeType: x.ChangeType, Summary: x.Summary, AffectedCodes: x.AffectedCodes,
		EvidenceQuote: x.EvidenceQuote, EvidenceSide: x.EvidenceSide, Section: x.SectionHeading,
		Status: FactNoVerifiableEvidence,
	}
	side, section, ok := extract.VerifyEvidence(x.EvidenceQuote, d.prevDoc, d.nextDoc)
	if ok {
		// README "Policies, facts and the ledger": evidence_side records which version the quote matched.
		f.Status = FactVerified
		f.EvidenceSide, f.Section = side, section
		span := &EvidenceSpan{
			ID: uuid.Must(uuid.NewV7()), SourceURL: d.url, Section: section, Quote: x.EvidenceQuote, Side: side,
			DocumentAssetID: next.Asset.ID, RawSHA256: next.Asset.RawSHA256,
			CanonicalContentHash: next.CanonicalContentHash, VersionID: next.ID,
		}
		if side == "previous" {
			span.DocumentAssetID, span.RawSHA256 = prev.Asset.ID, prev.Asset.RawSHA256
			span.CanonicalContentHash, span.VersionID = prev.CanonicalContentHash, prev.ID
		}
		f.Evidence = span
	}
	score, components := confidence.Score(confidence.Input{
		ChangeType: f.ChangeType, EvidenceVerified: ok, ClaimedSide: x.EvidenceSide, VerifiedSide: side,
		AffectedCodes: f.AffectedCodes, CodesAdded: d.added, CodesRemoved: d.removed,
		CodesOnInserted: d.onInserted, CodesOnDeleted: d.onDeleted,
		Section: f.Section, SourceHealth: d.src.HealthStatus, Quote: f.EvidenceQuote,
	})
	th := confidence.Select(d.rules, f.ChangeType)
	f.Event = ChangeEvent{
		ID: uuid.Must(uuid.NewV7()), FactID: f.ID, PolicyID: f.PolicyID, SourceID: d.src.ID,
		ChangeType: f.ChangeType, Status: confidence.Decide(score, ok, th), Confidence: score,
		Components: components, AutoPublishThreshold: th.AutoPublish, ReviewThreshold: th.Review,
		ThresholdScope: th.Scope,
	}
	return f
}

func sectionsOf(doc *normalize.Document) []VersionSection {
	out := make([]VersionSection, 0, len(doc.Sections))
	for _, sec := range doc.Sections {
		out = append(out, VersionSection{Heading: sec.Heading, Start: sec.Start, End: sec.End})
	}
	return out
}

// documentOf rebuilds the normalised document of a stored version, so that the previous version is
// never fetched or normalised again.
func documentOf(v Version) *normalize.Document {
	doc := &normalize.Document{Text: v.CanonicalText, CanonicalHash: v.CanonicalContentHash}
	for i, sec := range v.Sections {
		doc.Sections = append(doc.Sections, normalize.Section{Index: i, Heading: sec.Heading, Start: sec.Start, End: sec.End})
	}
	return doc
}
