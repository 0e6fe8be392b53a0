package api

import (
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/intelligence"
)

// intelTime returns nil for a zero time, so that absent registry timestamps are absent in JSON.
func intelTime(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// intelServerJSON returns a snapshot's server.json as a Struct.
func intelServerJSON(s intelligence.Server) *structpb.Struct {
	out := &structpb.Struct{}
	if err := out.UnmarshalJSON(s.JSON); err != nil {
		return nil // validated as a JSON object when observed; unreachable
	}
	return out
}

// intelServerTemplate returns the part of a server state answer that the snapshot determines
// (fields 1 to 18 and server_json): immutable, so readcache keeps it by snapshot id.
func intelServerTemplate(key intelligence.ServerKey, cur intelligence.Snapshot) *verificationv1.IntelligenceServerResponse {
	srv := cur.Server
	out := &verificationv1.IntelligenceServerResponse{
		Namespace: key.Namespace, Name: key.Name, FullName: key.String(),
		Version: srv.Version, Status: cur.Status, StatusMessage: cur.StatusMessage,
		Title: srv.Title, Description: srv.Description, WebsiteUrl: srv.WebsiteURL,
		Packages: make([]*verificationv1.IntelligencePackage, 0, len(srv.Packages)),
		Remotes:  make([]*verificationv1.IntelligenceRemote, 0, len(srv.Remotes)),
		IsLatest: cur.IsLatest, PublishedAt: intelTime(cur.PublishedAt), RegistryUpdatedAt: intelTime(cur.UpdatedAt),
		Registry: cur.Registry, SnapshotId: cur.ID.String(), ContentHash: cur.ContentHash,
		ServerJson: intelServerJSON(srv),
	}
	if r := srv.Repository; r != nil {
		out.Repository = &verificationv1.IntelligenceRepository{Url: r.URL, Source: r.Source, Id: r.ID, Subfolder: r.Subfolder}
	}
	for _, p := range srv.Packages {
		out.Packages = append(out.Packages, &verificationv1.IntelligencePackage{
			RegistryType: p.RegistryType, RegistryBaseUrl: p.RegistryBaseURL, Identifier: p.Identifier, Version: p.Version,
			FileSha256: p.FileSHA256, RuntimeHint: p.RuntimeHint,
			Transport:            &verificationv1.IntelligenceTransport{Type: p.Transport.Type, Url: p.Transport.URL, Headers: intelInputs(p.Transport.Headers)},
			EnvironmentVariables: intelInputs(p.EnvironmentVariables),
		})
	}
	for _, r := range srv.Remotes {
		out.Remotes = append(out.Remotes, &verificationv1.IntelligenceRemote{Type: r.Type, Url: r.URL, Headers: intelInputs(r.Headers)})
	}
	return out
}

func intelInputs(in []intelligence.Input) []*verificationv1.IntelligenceInput {
	out := make([]*verificationv1.IntelligenceInput, 0, len(in))
	for _, i := range in {
		out = append(out, &verificationv1.IntelligenceInput{
			Name: i.Name, Description: i.Description, IsRequired: i.IsRequired, IsSecret: i.IsSecret, Format: i.Format, Default: i.Default,
		})
	}
	return out
}

func intelHistoryEntryToProto(s intelligence.Snapshot) *verificationv1.IntelligenceHistoryEntry {
	return &verificationv1.IntelligenceHistoryEntry{
		SnapshotId: s.ID.String(), Version: s.Server.Version, Status: s.Status, StatusMessage: s.StatusMessage,
		IsLatest: s.IsLatest, ContentHash: s.ContentHash, Registry: s.Registry,
		PublishedAt: intelTime(s.PublishedAt), RegistryUpdatedAt: intelTime(s.UpdatedAt), ObservedAt: intelTime(s.ObservedAt),
		ServerJson: intelServerJSON(s.Server), EntryType: intelligence.EntryListingVersion,
	}
}

func intelTimelineEntryToProto(e intelligence.TimelineEntry) *verificationv1.IntelligenceHistoryEntry {
	if o := e.Observation; o != nil {
		return &verificationv1.IntelligenceHistoryEntry{
			EntryType: intelligence.EntrySurfaceObservation, ObservationId: o.ID.String(), RemoteUrl: o.URL,
			SurfaceHash: o.Hash, ToolCount: int32(o.Counts.Tools), PromptCount: int32(o.Counts.Prompts),
			ResourceCount: int32(o.Counts.Resources + o.Counts.Templates), ObservedAt: intelTime(o.ObservedAt),
		}
	}
	return intelHistoryEntryToProto(*e.Snapshot)
}

// Sources of a change or diff entry.
const (
	intelSourceListing = "listing"
	intelSourceSurface = "surface"
)

func intelPointDiffToProto(key intelligence.ServerKey, from, to string, d intelligence.PointDiff) *verificationv1.IntelligenceHistoryDiffResponse {
	out := &verificationv1.IntelligenceHistoryDiffResponse{
		Namespace: key.Namespace, Name: key.Name, From: from, To: to,
		FromSnapshotId: d.From.ID.String(), ToSnapshotId: d.To.ID.String(),
		Changes: intelDiffToProto(d.Changes), HighestRisk: string(d.HighestRisk()),
		FromType: intelligence.EntryListingVersion, ToType: intelligence.EntryListingVersion,
	}
	if o := d.FromObservation; o != nil {
		out.FromType, out.FromObservationId = intelligence.EntrySurfaceObservation, o.ID.String()
	}
	if o := d.ToObservation; o != nil {
		out.ToType, out.ToObservationId = intelligence.EntrySurfaceObservation, o.ID.String()
	}
	for _, c := range d.Surface {
		out.Changes = append(out.Changes, &verificationv1.IntelligenceDiffEntry{
			Field: c.Field, Old: c.Old, New: c.New, ChangeType: string(c.Type), Risk: string(c.Risk), Summary: c.Summary,
			Source: intelSourceSurface, RemoteUrl: c.URL,
		})
	}
	return out
}

func intelChangeToProto(c intelligence.Change) *verificationv1.IntelligenceChange {
	out := &verificationv1.IntelligenceChange{
		Id: c.ID.String(), Namespace: c.Key.Namespace, Name: c.Key.Name, FromVersion: c.FromVersion, ToVersion: c.ToVersion,
		FromSnapshotId: c.FromSnapshotID.String(), ToSnapshotId: c.ToSnapshotID.String(),
		Field: c.Field, OldValue: c.Old, NewValue: c.New, ChangeType: string(c.Type), Risk: string(c.Risk),
		Summary: c.Summary, DetectedAt: intelTime(c.DetectedAt), Source: intelSourceListing,
	}
	if c.RemoteURL != "" {
		out.Source, out.RemoteUrl = intelSourceSurface, c.RemoteURL
		out.FromObservationId, out.ToObservationId = c.FromObservationID.String(), c.ToObservationID.String()
	}
	return out
}

func intelChangesToProto(items []intelligence.Change, next string) *verificationv1.IntelligenceChangesResponse {
	out := &verificationv1.IntelligenceChangesResponse{Items: make([]*verificationv1.IntelligenceChange, 0, len(items)), NextCursor: next}
	for _, c := range items {
		out.Items = append(out.Items, intelChangeToProto(c))
	}
	return out
}

func intelDiffToProto(changes []intelligence.FieldChange) []*verificationv1.IntelligenceDiffEntry {
	out := make([]*verificationv1.IntelligenceDiffEntry, 0, len(changes))
	for _, c := range changes {
		out = append(out, &verificationv1.IntelligenceDiffEntry{
			Field: c.Field, Old: c.Old, New: c.New, ChangeType: string(c.Type), Risk: string(c.Risk), Summary: c.Summary,
			Source: intelSourceListing,
		})
	}
	return out
}

func intelCompareResultToProto(r intelligence.CompareResult) *verificationv1.IntelligenceCompareResult {
	out := &verificationv1.IntelligenceCompareResult{
		Index: int32(r.Index), Namespace: r.Item.Key.Namespace, Name: r.Item.Key.Name, From: r.Item.From, To: r.Item.To,
		Changes: []*verificationv1.IntelligenceDiffEntry{},
	}
	if r.Err != nil {
		out.Error = compareItemError(r.Err, r.Item.Key)
		return out
	}
	out.FromSnapshotId, out.ToSnapshotId = r.Diff.From.ID.String(), r.Diff.To.ID.String()
	out.Changes = intelDiffToProto(r.Diff.Changes)
	out.HighestRisk = string(intelligence.HighestRisk(r.Diff.Changes))
	return out
}
