package api

import (
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	ingestionv1 "github.com/trustlayer/trustlayer/proto/ingestion/v1"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
)

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func tsp(t *time.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(*t)
}

func idString(id uuid.UUID) string {
	if id == uuid.Nil {
		return ""
	}
	return id.String()
}

func sourceToProto(s ingest.Source) *ingestionv1.Source {
	cfg, _ := structpb.NewStruct(s.AdapterConfig) // built from JSON, so always encodable
	return &ingestionv1.Source{
		Id: s.ID.String(), Organization: s.Organization, Program: s.Program, Jurisdiction: s.Jurisdiction,
		AllowedHosts: s.AllowedHosts, Adapter: s.Adapter, AdapterConfig: cfg, CadenceSeconds: int32(s.CadenceSeconds),
		TermsReviewState: s.TermsReviewState, Enabled: s.Enabled, HealthStatus: s.HealthStatus,
		CreatedAt: ts(s.CreatedAt), UpdatedAt: ts(s.UpdatedAt), NextRunAt: ts(s.NextRunAt),
	}
}

func runToProto(r ingest.Run) *ingestionv1.DiscoveryRun {
	out := &ingestionv1.DiscoveryRun{
		Id: r.ID.String(), SourceId: r.SourceID.String(), Trigger: r.Trigger, Status: r.Status,
		StartedAt: ts(r.StartedAt), FinishedAt: tsp(r.FinishedAt), ErrorKind: r.ErrorKind, Error: ingest.PublicError(r.Error),
		Resources: []*ingestionv1.DiscoveredResource{},
	}
	for _, res := range r.Resources {
		out.Resources = append(out.Resources, &ingestionv1.DiscoveredResource{
			Url: res.URL, PolicyId: idString(res.PolicyID), ObservationId: idString(res.ObservationID),
			DocumentAssetId: idString(res.DocumentAssetID), NewAsset: res.NewAsset, NewVersion: res.NewVersion,
			Facts: int32(res.Facts), Error: ingest.PublicError(res.Error),
		})
	}
	return out
}

func eventToProto(e ingest.ChangeEvent) *ingestionv1.ChangeEvent {
	return &ingestionv1.ChangeEvent{
		Id: e.ID.String(), FactId: e.FactID.String(), PolicyId: e.PolicyID.String(), SourceId: e.SourceID.String(),
		ChangeType: e.ChangeType, Status: e.Status, Confidence: e.Confidence, ConfidenceComponents: e.Components,
		AutoPublishThreshold: e.AutoPublishThreshold, ReviewThreshold: e.ReviewThreshold,
		ThresholdScope: e.ThresholdScope, CreatedAt: ts(e.CreatedAt),
	}
}

func policyToProto(p ingest.Policy) *ingestionv1.Policy {
	out := &ingestionv1.Policy{
		Id: p.ID.String(), SourceId: p.SourceID.String(), Url: p.URL,
		FirstSeenAt: ts(p.FirstSeenAt), LastSeenAt: ts(p.LastSeenAt),
		Versions: []*ingestionv1.DocumentVersion{}, Facts: []*ingestionv1.Fact{},
	}
	for _, v := range p.Versions {
		dv := &ingestionv1.DocumentVersion{
			Id: v.ID.String(), Number: int32(v.Number), DocumentAssetId: v.Asset.ID.String(),
			RawSha256: v.Asset.RawSHA256, CanonicalContentHash: v.CanonicalContentHash, MediaType: v.Asset.MediaType,
			Sections: []string{}, CreatedAt: ts(v.CreatedAt),
		}
		for _, s := range v.Sections {
			dv.Sections = append(dv.Sections, s.Heading)
		}
		out.Versions = append(out.Versions, dv)
	}
	for _, f := range p.Facts {
		pf := &ingestionv1.Fact{
			Id: f.ID.String(), ChangeType: f.ChangeType, Summary: f.Summary, AffectedCodes: f.AffectedCodes,
			EvidenceQuote: f.EvidenceQuote, EvidenceSide: f.EvidenceSide, Status: f.Status,
			VersionId: f.VersionID.String(), PreviousVersionId: f.PreviousVersionID.String(),
			ChangeEvent: eventToProto(f.Event),
		}
		if pf.AffectedCodes == nil {
			pf.AffectedCodes = []string{}
		}
		if e := f.Evidence; e != nil {
			pf.EvidenceSpan = &ingestionv1.EvidenceSpan{
				Id: e.ID.String(), DocumentAssetId: e.DocumentAssetID.String(), RawSha256: e.RawSHA256,
				CanonicalContentHash: e.CanonicalContentHash, SourceUrl: e.SourceURL, Section: e.Section,
				VersionId: e.VersionID.String(), Quote: e.Quote, Side: e.Side,
			}
		}
		out.Facts = append(out.Facts, pf)
	}
	return out
}
