package store

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// orgEventEndpoints lists the endpoints of organization $1 that may receive an event of type $2:
// neither revoked nor disabled, and declaring no event types or this one. They are locked against a
// concurrent revocation until the deliveries are written.
const orgEventEndpoints = `SELECT id FROM webhook_endpoints
WHERE organization_id = $1 AND revoked_at IS NULL AND disabled_at IS NULL
  AND (cardinality(event_types) = 0 OR $2 = ANY (event_types))
ORDER BY id FOR SHARE`

// RecordEvent stores an organization's own event once per key, with one delivery (and its job) per
// endpoint that takes it, in one transaction.
func (s *Webhooks) RecordEvent(ctx context.Context, organizationID uuid.UUID, ev webhooks.Event, requeueAfter time.Duration) (int, error) {
	var created int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		created = 0
		rows, err := tx.Query(ctx, orgEventEndpoints, organizationID, ev.Type)
		if err != nil {
			return err
		}
		endpoints, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil || len(endpoints) == 0 {
			return err
		}
		var stored uuid.UUID
		err = tx.QueryRow(ctx, `INSERT INTO webhook_events (id, change_id, type, payload) VALUES ($1, $2, $3, $4)
ON CONFLICT (change_id) DO NOTHING RETURNING id`, ev.ID, ev.ChangeID, ev.Type, ev.Payload).Scan(&stored)
		if err != nil {
			return noRows(err, nil) // published before: nothing more to deliver
		}
		ids := make([]uuid.UUID, len(endpoints))
		orgs := make([]uuid.UUID, len(endpoints))
		for i := range endpoints {
			ids[i], orgs[i] = uuid.Must(uuid.NewV7()), organizationID
		}
		jobs, err := s.jobs(ids, func(int) int { return 1 })
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(insertWebhookDeliveries, ids, orgs, endpoints, ev.ID, requeueAfter.Seconds())
		if _, err := outbox.QueueAll(ctx, b, jobs); err != nil {
			return err
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		created = len(endpoints)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return created, nil
}
