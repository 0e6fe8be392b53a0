package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

const deliveryColumns = `d.id, d.organization_id, d.endpoint_id, d.event_id, ev.type, ev.change_id, d.status,
coalesce(d.failure_reason, ''), d.attempt_count, d.last_status, d.next_attempt_at, d.replay_of, d.created_at, d.updated_at`

const deliveryFrom = ` FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id `

func scanDelivery(row pgx.Row) (webhooks.Delivery, error) {
	var d webhooks.Delivery
	err := row.Scan(&d.ID, &d.OrganizationID, &d.EndpointID, &d.EventID, &d.EventType, &d.ChangeID, &d.Status,
		&d.FailureReason, &d.AttemptCount, &d.LastStatusCode, &d.NextAttemptAt, &d.ReplayOf, &d.CreatedAt, &d.UpdatedAt)
	return d, err
}

// GetDelivery returns a delivery of the organization with its attempts, oldest first.
func (s *Webhooks) GetDelivery(ctx context.Context, organizationID, id uuid.UUID) (webhooks.Delivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryColumns+deliveryFrom+`WHERE d.id = $1 AND d.organization_id = $2`, id, organizationID))
	if err != nil {
		return webhooks.Delivery{}, noRows(err, fault.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, `SELECT attempt, status_code, latency_ms, error, response_excerpt, started_at, finished_at
FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt`, id)
	if err != nil {
		return webhooks.Delivery{}, err
	}
	d.Attempts, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhooks.Attempt, error) {
		var a webhooks.Attempt
		return a, r.Scan(&a.Attempt, &a.StatusCode, &a.LatencyMS, &a.Error, &a.ResponseExcerpt, &a.StartedAt, &a.FinishedAt)
	})
	return d, err
}

// ListDeliveries pages an endpoint's deliveries by id (UUIDv7, so newest first) with a keyset cursor:
// the id of the last item of the previous page.
func (s *Webhooks) ListDeliveries(ctx context.Context, organizationID, endpointID uuid.UUID, page webhooks.Page) ([]webhooks.Delivery, string, error) {
	var after *uuid.UUID
	if page.Cursor != "" {
		id, err := uuid.Parse(page.Cursor)
		if err != nil {
			return nil, "", fault.ErrBadCursor
		}
		after = &id
	}
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_endpoints
WHERE id = $1 AND organization_id = $2 AND revoked_at IS NULL)`, endpointID, organizationID).Scan(&exists); err != nil {
		return nil, "", err
	}
	if !exists {
		return nil, "", fault.ErrNotFound
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryColumns+deliveryFrom+`
WHERE d.endpoint_id = $1 AND ($2::uuid IS NULL OR d.id < $2) ORDER BY d.id DESC LIMIT $3`, endpointID, after, page.Limit+1)
	if err != nil {
		return nil, "", err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhooks.Delivery, error) { return scanDelivery(r) })
	if err != nil {
		return nil, "", err
	}
	if len(items) <= page.Limit {
		return items, "", nil
	}
	items = items[:page.Limit]
	return items, items[len(items)-1].ID.String(), nil
}

// Replay creates a new pending delivery of the same event to the same endpoint, with its job.
func (s *Webhooks) Replay(ctx context.Context, organizationID, id uuid.UUID, requeueAfter time.Duration) (webhooks.Delivery, error) {
	var replay webhooks.Delivery
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var endpointID, eventID uuid.UUID
		var disabled, revoked bool
		err := tx.QueryRow(ctx, `SELECT d.endpoint_id, d.event_id, e.disabled_at IS NOT NULL, e.revoked_at IS NOT NULL
FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
WHERE d.id = $1 AND d.organization_id = $2
FOR SHARE OF e`, id, organizationID).Scan(&endpointID, &eventID, &disabled, &revoked)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fault.ErrNotFound
		case err != nil:
			return err
		case revoked:
			return fault.ErrEndpointRevoked
		case disabled:
			return fault.ErrEndpointDisabled
		}
		newID := uuid.Must(uuid.NewV7())
		b := &pgx.Batch{}
		b.Queue(insertWebhookDelivery, newID, organizationID, endpointID, eventID, id, requeueAfter.Seconds())
		if err := s.queueJob(ctx, b, newID, 1); err != nil {
			return err
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		replay, err = scanDelivery(tx.QueryRow(ctx, `SELECT `+deliveryColumns+deliveryFrom+`WHERE d.id = $1`, newID))
		return err
	})
	return replay, err
}
