package ingest

import (
	"context"
	"slices"

	"github.com/google/uuid"

	"github.com/trustlayer/trustlayer/services/ingestion/internal/confidence"
)

// EventStatuses are the statuses a change event can have.
var EventStatuses = []string{confidence.AutoPublished, confidence.PendingReview, confidence.Rejected, confidence.NoVerifiableEvidence}

// ListChangeEvents returns one page of the ledger, newest first, optionally of one status.
func (s *Service) ListChangeEvents(ctx context.Context, status string, p Page) ([]ChangeEvent, string, error) {
	if status != "" && !slices.Contains(EventStatuses, status) {
		v := &ValidationError{}
		v.add("status", "enum", "Input should be one of AUTO_PUBLISHED, PENDING_REVIEW, REJECTED, NO_VERIFIABLE_EVIDENCE")
		return nil, "", v
	}
	return s.store.ListChangeEvents(ctx, status, p)
}

// GetPolicy returns a policy with its versions and facts, each with its change event.
func (s *Service) GetPolicy(ctx context.Context, id uuid.UUID) (Policy, error) {
	return s.store.GetPolicy(ctx, id)
}
