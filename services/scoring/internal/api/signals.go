package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trustlayer/trustlayer/pkg/apierror"
	"github.com/trustlayer/trustlayer/pkg/gateway"
	scoringv1 "github.com/trustlayer/trustlayer/proto/scoring/v1"
	"github.com/trustlayer/trustlayer/services/scoring/internal/policysignal"
	"github.com/trustlayer/trustlayer/services/scoring/internal/store"
)

// Signals implements scoring.v1.PolicySignalService (admin).
type Signals struct {
	scoringv1.UnimplementedPolicySignalServiceServer
	store *store.Store
	index *policysignal.Index
}

// NewSignals returns the service.
func NewSignals(st *store.Store, ix *policysignal.Index) *Signals {
	return &Signals{store: st, index: ix}
}

func checkPayer(id int64) error {
	if id <= 0 {
		return apierror.Newf(http.StatusUnprocessableEntity, "payer_id must be a positive integer (got %d)", id)
	}
	return nil
}

// PutPayerMapping is PUT /v1/policy-signals/payers/{payer_id}.
func (s *Signals) PutPayerMapping(ctx context.Context, req *scoringv1.PutPayerMappingRequest) (*scoringv1.PutPayerMappingResponse, error) {
	if err := checkPayer(req.GetPayerId()); err != nil {
		return nil, err
	}
	org := strings.TrimSpace(req.GetOrganization())
	if org == "" || len(org) > 200 {
		return nil, apierror.New(http.StatusUnprocessableEntity, "organization is required (at most 200 characters)")
	}
	m, err := s.store.PutPayerMapping(ctx, req.GetPayerId(), org)
	if err != nil {
		return nil, err
	}
	s.index.SetMapping(m.PayerID, m.Organization)
	return &scoringv1.PutPayerMappingResponse{Mapping: mappingToProto(m)}, nil
}

// ListPayerMappings is GET /v1/policy-signals/payers.
func (s *Signals) ListPayerMappings(ctx context.Context, _ *scoringv1.ListPayerMappingsRequest) (*scoringv1.ListPayerMappingsResponse, error) {
	list, err := s.store.PayerMappings(ctx)
	if err != nil {
		return nil, err
	}
	out := &scoringv1.ListPayerMappingsResponse{Mappings: []*scoringv1.PayerMapping{}}
	for _, m := range list {
		out.Mappings = append(out.Mappings, mappingToProto(m))
	}
	return out, nil
}

// DeletePayerMapping is DELETE /v1/policy-signals/payers/{payer_id} (204).
func (s *Signals) DeletePayerMapping(ctx context.Context, req *scoringv1.DeletePayerMappingRequest) (*scoringv1.DeletePayerMappingResponse, error) {
	if err := checkPayer(req.GetPayerId()); err != nil {
		return nil, err
	}
	err := s.store.DeletePayerMapping(ctx, req.GetPayerId())
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierror.Newf(http.StatusNotFound, "No mapping for payer %d", req.GetPayerId())
	}
	if err != nil {
		return nil, err
	}
	s.index.SetMapping(req.GetPayerId(), "")
	_ = gateway.SetHTTPStatus(ctx, http.StatusNoContent)
	return &scoringv1.DeletePayerMappingResponse{}, nil
}

// ListPolicySignals is GET /v1/policy-signals.
func (s *Signals) ListPolicySignals(ctx context.Context, req *scoringv1.ListPolicySignalsRequest) (*scoringv1.ListPolicySignalsResponse, error) {
	limit := int(req.GetLimit())
	if limit == 0 {
		limit = 20
	}
	if limit < 1 || limit > 100 {
		return nil, apierror.Newf(http.StatusUnprocessableEntity, "limit must be between 1 and 100 (got %d)", limit)
	}
	list, err := s.store.PolicySignals(ctx, strings.TrimSpace(req.GetOrganization()), limit)
	if err != nil {
		return nil, err
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
