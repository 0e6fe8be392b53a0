package api

import (
	"context"
	"net/http"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	ingestionv1 "github.com/trustlayer/trustlayer/proto/ingestion/v1"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
)

// Sources implements ingestion.v1.SourceService.
type Sources struct {
	ingestionv1.UnimplementedSourceServiceServer
	svc *ingest.Service
}

// NewSources returns the SourceService.
func NewSources(svc *ingest.Service) *Sources { return &Sources{svc: svc} }

// CreateSource registers a source and answers 201.
func (s *Sources) CreateSource(ctx context.Context, req *ingestionv1.CreateSourceRequest) (*ingestionv1.CreateSourceResponse, error) {
	src, err := s.svc.CreateSource(ctx, ingest.NewSource{
		Organization: req.GetOrganization(), Program: req.GetProgram(), Jurisdiction: req.GetJurisdiction(),
		AllowedHosts: req.GetAllowedHosts(), Adapter: req.GetAdapter(), AdapterConfig: req.GetAdapterConfig().AsMap(),
		CadenceSeconds: int(req.GetCadenceSeconds()), TermsReviewState: req.GetTermsReviewState(), Enabled: req.Enabled,
	})
	if err != nil {
		return nil, toAPI(err)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &ingestionv1.CreateSourceResponse{Source: sourceToProto(src)}, nil
}

// ListSources returns one page of sources.
func (s *Sources) ListSources(ctx context.Context, req *ingestionv1.ListSourcesRequest) (*ingestionv1.ListSourcesResponse, error) {
	items, next, err := listPage(req.Limit, req.GetCursor(), func(p ingest.Page) ([]ingest.Source, string, error) {
		return s.svc.ListSources(ctx, p)
	}, sourceToProto)
	if err != nil {
		return nil, err
	}
	return &ingestionv1.ListSourcesResponse{Items: items, NextCursor: next}, nil
}

// GetSource returns one source.
func (s *Sources) GetSource(ctx context.Context, req *ingestionv1.GetSourceRequest) (*ingestionv1.GetSourceResponse, error) {
	id, err := parseID(req.GetId())
	if err != nil {
		return nil, err
	}
	src, err := s.svc.GetSource(ctx, id)
	if err != nil {
		return nil, toAPI(err)
	}
	return &ingestionv1.GetSourceResponse{Source: sourceToProto(src)}, nil
}

// GetSourceStatus returns a source's health.
func (s *Sources) GetSourceStatus(ctx context.Context, req *ingestionv1.GetSourceStatusRequest) (*ingestionv1.GetSourceStatusResponse, error) {
	id, err := parseID(req.GetId())
	if err != nil {
		return nil, err
	}
	st, err := s.svc.SourceStatus(ctx, id)
	if err != nil {
		return nil, toAPI(err)
	}
	out := &ingestionv1.SourceStatus{
		SourceId: st.Source.ID.String(), HealthStatus: st.Source.HealthStatus, LastError: ingest.PublicError(st.Source.LastError),
		ConsecutiveFailures: int32(st.Source.ConsecutiveFailures), LastRunAt: tsp(st.Source.LastRunAt),
		NextRunAt: ts(st.Source.NextRunAt),
	}
	if st.LastRun != nil {
		out.LastRun = runToProto(*st.LastRun)
	}
	return &ingestionv1.GetSourceStatusResponse{Status: out}, nil
}

// CreateDiscoveryRun runs discovery now and answers 201 with the finished run.
func (s *Sources) CreateDiscoveryRun(ctx context.Context, req *ingestionv1.CreateDiscoveryRunRequest) (*ingestionv1.CreateDiscoveryRunResponse, error) {
	id, err := parseID(req.GetId())
	if err != nil {
		return nil, err
	}
	run, err := s.svc.Discover(ctx, id, ingest.TriggerManual)
	if err != nil {
		return nil, toAPI(err)
	}
	if err := gateway.SetHTTPStatus(ctx, http.StatusCreated); err != nil {
		return nil, err
	}
	return &ingestionv1.CreateDiscoveryRunResponse{Run: runToProto(run)}, nil
}
