package policysignal

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
)

// Bounds of the admin routes (README "Prior authorization: payer support and policy signals").
const (
	MaxOrganization = 200
	DefaultLimit    = 20
	MaxLimit        = 100
)

// Service is the policy-signal use cases: the events consumed from the ingestion service, and the
// admin-managed payer mappings. Every change reaches the index at once on this replica; the others
// see it at their next Reload.
type Service struct {
	store Store
	index *Index
}

// NewService returns the use cases over st, keeping ix current.
func NewService(st Store, ix *Index) *Service { return &Service{store: st, index: ix} }

// Record stores a published policy change once and indexes it; a change already stored (a
// redelivered event) changes nothing.
func (s *Service) Record(ctx context.Context, sig Signal) error {
	if _, err := s.store.InsertPolicySignal(ctx, sig); err != nil {
		return err
	}
	s.index.Add(sig)
	return nil
}

// PutMapping maps a payer to the organization that publishes its policies.
func (s *Service) PutMapping(ctx context.Context, payerID int64, organization string) (Mapping, error) {
	if err := checkPayer(payerID); err != nil {
		return Mapping{}, err
	}
	org := strings.TrimSpace(organization)
	if org == "" || len(org) > MaxOrganization {
		return Mapping{}, fmt.Errorf("%w: organization is required (at most %d characters)", fault.ErrInvalid, MaxOrganization)
	}
	m, err := s.store.PutPayerMapping(ctx, payerID, org)
	if err != nil {
		return Mapping{}, err
	}
	s.index.SetMapping(m.PayerID, m.Organization)
	return m, nil
}

// Mappings lists every payer mapping by payer id.
func (s *Service) Mappings(ctx context.Context) ([]Mapping, error) { return s.store.PayerMappings(ctx) }

// DeleteMapping removes a payer's mapping.
func (s *Service) DeleteMapping(ctx context.Context, payerID int64) error {
	if err := checkPayer(payerID); err != nil {
		return err
	}
	err := s.store.DeletePayerMapping(ctx, payerID)
	if errors.Is(err, fault.ErrNotFound) {
		return fmt.Errorf("%w: No mapping for payer %d", fault.ErrNotFound, payerID)
	}
	if err != nil {
		return err
	}
	s.index.SetMapping(payerID, "")
	return nil
}

// Signals lists the stored signals of an organization (every one for ""), newest first; limit 0 is
// DefaultLimit.
func (s *Service) Signals(ctx context.Context, organization string, limit int) ([]Signal, error) {
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("%w: limit must be between 1 and %d (got %d)", fault.ErrInvalid, MaxLimit, limit)
	}
	return s.store.PolicySignals(ctx, strings.TrimSpace(organization), limit)
}

func checkPayer(id int64) error {
	if id <= 0 {
		return fmt.Errorf("%w: payer_id must be a positive integer (got %d)", fault.ErrInvalid, id)
	}
	return nil
}
