package api

import (
	"context"
	"net/http"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/gateway"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/policysignal"
)

// Signals implements scoring.v1.PolicySignalService (admin).
type Signals struct {
	scoringv1.UnimplementedPolicySignalServiceServer
	signals *policysignal.Service
}

// NewSignals returns the service.
func NewSignals(signals *policysignal.Service) *Signals { return &Signals{signals: signals} }

// PutPayerMapping is PUT /v1/policy-signals/payers/{payer_id}.
func (s *Signals) PutPayerMapping(ctx context.Context, req *scoringv1.PutPayerMappingRequest) (*scoringv1.PutPayerMappingResponse, error) {
	m, err := s.signals.PutMapping(ctx, req.GetPayerId(), req.GetOrganization())
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	return &scoringv1.PutPayerMappingResponse{Mapping: mappingToProto(m)}, nil
}

// ListPayerMappings is GET /v1/policy-signals/payers.
func (s *Signals) ListPayerMappings(ctx context.Context, _ *scoringv1.ListPayerMappingsRequest) (*scoringv1.ListPayerMappingsResponse, error) {
	list, err := s.signals.Mappings(ctx)
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	out := &scoringv1.ListPayerMappingsResponse{Mappings: []*scoringv1.PayerMapping{}}
	for _, m := range list {
		out.Mappings = append(out.Mappings, mappingToProto(m))
	}
	return out, nil
}

// DeletePayerMapping is DELETE /v1/policy-signals/payers/{payer_id} (204).
func (s *Signals) DeletePayerMapping(ctx context.Context, req *scoringv1.DeletePayerMappingRequest) (*scoringv1.DeletePayerMappingResponse, error) {
	if err := s.signals.DeleteMapping(ctx, req.GetPayerId()); err != nil {
		return nil, toAPI(ctx, err)
	}
	_ = gateway.SetHTTPStatus(ctx, http.StatusNoContent)
	return &scoringv1.DeletePayerMappingResponse{}, nil
}

// ListPolicySignals is GET /v1/policy-signals.
func (s *Signals) ListPolicySignals(ctx context.Context, req *scoringv1.ListPolicySignalsRequest) (*scoringv1.ListPolicySignalsResponse, error) {
	list, err := s.signals.Signals(ctx, req.GetOrganization(), int(req.GetLimit()))
	if err != nil {
		return nil, toAPI(ctx, err)
	}
	out := &scoringv1.ListPolicySignalsResponse{Signals: []*scoringv1.StoredPolicySignal{}}
	for _, p := range list {
		out.Signals = append(out.Signals, &scoringv1.StoredPolicySignal{
			ChangeEventId: p.ChangeEventID, Organization: p.Organization, ChangeType: p.ChangeType, AffectedCodes: p.AffectedCodes,
			Summary: p.Summary, PolicyUrl: p.PolicyURL, Confidence: p.Confidence,
			PublishedAt: timestamppb.New(p.PublishedAt), ReceivedAt: timestamppb.New(p.ReceivedAt),
		})
	}
	return out, nil
}

func mappingToProto(m policysignal.Mapping) *scoringv1.PayerMapping {
	return &scoringv1.PayerMapping{PayerId: m.PayerID, Organization: m.Organization, UpdatedAt: timestamppb.New(m.UpdatedAt)}
}
