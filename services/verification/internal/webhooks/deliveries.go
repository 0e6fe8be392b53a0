package webhooks

import (
	"context"

	"github.com/google/uuid"
)

// Listing bounds (README, "Webhooks": 1..100, default 20).
const (
	DefaultDeliveryLimit = 20
	MaxDeliveryLimit     = 100
)

// GetDelivery returns one of the organization's deliveries with its attempts.
func (s *Service) GetDelivery(ctx context.Context, organizationID, id uuid.UUID) (Delivery, error) {
	return s.store.GetDelivery(ctx, organizationID, id)
}

// ListDeliveries returns a page of an endpoint's deliveries, newest first; the limit is checked by the
// caller (a 422 belongs to the transport).
func (s *Service) ListDeliveries(ctx context.Context, organizationID, endpointID uuid.UUID, page Page) ([]Delivery, string, error) {
	if page.Limit == 0 {
		page.Limit = DefaultDeliveryLimit
	}
	return s.store.ListDeliveries(ctx, organizationID, endpointID, page)
}

// Replay sends a delivery's event again as a new delivery to the same endpoint. The event keeps its id
// and body, so the receiver sees the same webhook-id (and can tell a replay from a new event), while
// the original delivery keeps its own history.
func (s *Service) Replay(ctx context.Context, organizationID, id uuid.UUID) (Delivery, error) {
	return s.store.Replay(ctx, organizationID, id, s.cfg.RequeueAfter)
}
