package store

import (
	"context"

	"github.com/trustlayer/trustlayer/services/scoring/internal/feedback"
)

// CreateFeedback stores a feedback record and returns it with its receipt time.
func (s *Store) CreateFeedback(ctx context.Context, f feedback.Feedback) (feedback.Feedback, error) {
	err := s.pool.QueryRow(ctx, `
INSERT INTO feedback (id, request_id, key_id, endpoint, observed_outcome, expected_outcome, confidence_mismatch, notes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING received_at`,
		f.ID, f.RequestID, f.KeyID, f.Endpoint, f.ObservedOutcome, f.ExpectedOutcome, f.ConfidenceMismatch, f.Notes).Scan(&f.ReceivedAt)
	return f, err
}
