package api

import (
	"context"

	ingestionv1 "github.com/trustlayer/trustlayer/proto/ingestion/v1"
	"github.com/trustlayer/trustlayer/services/ingestion/internal/ingest"
)

// Ledger implements ingestion.v1.LedgerService.
type Ledger struct {
	ingestionv1.UnimplementedLedgerServiceServer
	svc *ingest.Service
}

// NewLedger returns the LedgerService.
func NewLedger(svc *ingest.Service) *Ledger { return &Ledger{svc: svc} }

// ListChangeEvents returns one page of change events.
func (l *Ledger) ListChangeEvents(ctx context.Context, req *ingestionv1.ListChangeEventsRequest) (*ingestionv1.ListChangeEventsResponse, error) {
	items, next, err := listPage(req.Limit, req.GetCursor(), func(p ingest.Page) ([]ingest.ChangeEvent, string, error) {
		return l.svc.ListChangeEvents(ctx, req.GetStatus(), p)
	}, eventToProto)
	if err != nil {
		return nil, err
	}
	return &ingestionv1.ListChangeEventsResponse{Items: items, NextCursor: next}, nil
}

// GetPolicy returns a policy with its facts and their change events.
func (l *Ledger) GetPolicy(ctx context.Context, req *ingestionv1.GetPolicyRequest) (*ingestionv1.GetPolicyResponse, error) {
	id, err := parseID(req.GetId())
	if err != nil {
		return nil, err
	}
	p, err := l.svc.GetPolicy(ctx, id)
	if err != nil {
		return nil, toAPI(err)
	}
	return &ingestionv1.GetPolicyResponse{Policy: policyToProto(p)}, nil
}
