package api

import (
	"context"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/feeds"
)

// Feeds implements verification.v1.DataFeedService.
type Feeds struct {
	verificationv1.UnimplementedDataFeedServiceServer
	svc *feeds.Service
	// publicURL is the service's external base URL for download links; empty means the Host the
	// request came to, over http.
	publicURL string
}

// NewFeeds returns the DataFeedService.
func NewFeeds(svc *feeds.Service, publicURL string) *Feeds {
	return &Feeds{svc: svc, publicURL: publicURL}
}

func artifactToProto(a feeds.Artifact) *verificationv1.Artifact {
	return &verificationv1.Artifact{Id: a.ID.String(), Dataset: a.Dataset, Format: a.Format, Sha256: a.SHA256,
		SizeBytes: a.Size, Rows: a.Rows, CreatedAt: ts(a.CreatedAt)}
}

// ListDatasets returns the catalog.
func (f *Feeds) ListDatasets(ctx context.Context, _ *verificationv1.ListDatasetsRequest) (*verificationv1.ListDatasetsResponse, error) {
	items, err := f.svc.Catalog(ctx)
	if err != nil {
		return nil, err
	}
	out := &verificationv1.ListDatasetsResponse{Datasets: []*verificationv1.Dataset{}}
	for _, it := range items {
		d := &verificationv1.Dataset{Name: it.Name, Description: it.Description,
			Formats: []string{feeds.FormatJSONL, feeds.FormatCSV}, ArtifactCount: it.Count}
		if it.Latest != nil {
			d.LatestArtifactAt = ts(*it.Latest)
		}
		out.Datasets = append(out.Datasets, d)
	}
	return out, nil
}

// ListArtifacts returns one page of a dataset's artifacts.
func (f *Feeds) ListArtifacts(ctx context.Context, req *verificationv1.ListArtifactsRequest) (*verificationv1.ListArtifactsResponse, error) {
	q := feeds.Query{Dataset: req.GetDataset(), Format: req.GetFormat(), Limit: feeds.DefaultLimit}
	var bad []apierror.Violation
	if req.Limit != nil {
		if l := req.GetLimit(); l < 1 || l > feeds.MaxLimit {
			bad = append(bad, apierror.Violation{Loc: []any{"query", "limit"}, Msg: "Input should be between 1 and 100", Type: "value_error"})
		} else {
			q.Limit = int(l)
		}
	}
	if q.Format != "" && q.Format != feeds.FormatJSONL && q.Format != feeds.FormatCSV {
		bad = append(bad, apierror.Violation{Loc: []any{"query", "format"}, Msg: "Input should be 'jsonl' or 'csv'", Type: "enum"})
	}
	for _, p := range []struct {
		name, raw string
		into      **time.Time
	}{{"since", req.GetSince(), &q.Since}, {"until", req.GetUntil(), &q.Until}, {"before", req.GetBefore(), &q.Before}} {
		if p.raw == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, p.raw)
		if err != nil {
			bad = append(bad, apierror.Violation{Loc: []any{"query", p.name}, Msg: "Input should be a valid RFC 3339 date-time", Type: "datetime_parsing"})
			continue
		}
		*p.into = &t
	}
	if len(bad) > 0 {
		return nil, apierror.Validation(bad...)
	}
	arts, next, err := f.svc.List(ctx, q)
	if err != nil {
		return nil, toAPI(err, datasetTarget)
	}
	out := &verificationv1.ListArtifactsResponse{Items: []*verificationv1.Artifact{}}
	for _, a := range arts {
		out.Items = append(out.Items, artifactToProto(a))
	}
	if next != nil {
		out.NextBefore = ts(*next)
	}
	return out, nil
}

// DownloadArtifact returns a short-lived signed URL of the artifact.
func (f *Feeds) DownloadArtifact(ctx context.Context, req *verificationv1.DownloadArtifactRequest) (*verificationv1.DownloadArtifactResponse, error) {
	if _, ok := feeds.DatasetNamed(req.GetDataset()); !ok {
		return nil, toAPI(fault.ErrNotFound, datasetTarget)
	}
	id, err := pathID(req.GetArtifactId(), artifactTarget)
	if err != nil {
		return nil, err
	}
	a, path, exp, err := f.svc.Download(ctx, req.GetDataset(), id)
	if err != nil {
		return nil, toAPI(err, artifactTarget)
	}
	return &verificationv1.DownloadArtifactResponse{Url: f.base(ctx) + path, ExpiresAt: ts(exp), Artifact: artifactToProto(a)}, nil
}

// base is the URL prefix of download links.
func (f *Feeds) base(ctx context.Context) string {
	if f.publicURL != "" {
		return f.publicURL
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if h := md.Get("x-forwarded-host"); len(h) == 1 && h[0] != "" {
		return "http://" + h[0]
	}
	return ""
}
