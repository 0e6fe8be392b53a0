package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"

	"github.com/trustlayer/trustlayer/pkg/bus"
	"github.com/trustlayer/trustlayer/pkg/outbox"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// webhookJobSubject is the work queue's subject (written without the bus namespace, as the outbox wants).
var webhookJobSubject = bus.WebhookDeliveries.Subjects[0]

// queueWebhookJob adds the outbox row of one delivery job to b. Its Nats-Msg-Id is a fresh id: a job
// that is enqueued again (a retry, a lost job) must not be dropped as a duplicate; Store.Attempt is
// what makes a job run at most once per attempt.
func queueWebhookJob(ctx context.Context, b *pgx.Batch, deliveryID uuid.UUID, attempt int) error {
	payload, err := proto.Marshal(&verificationv1.WebhookDeliveryJob{DeliveryId: deliveryID.String(), Attempt: int32(attempt)})
	if err != nil {
		return err
	}
	_, err = outbox.Queue(ctx, b, outbox.Event{Subject: webhookJobSubject, Payload: payload})
	return err
}

// matchWatches lists the endpoints a change goes to: those of every organization with an active watch
// of the server whose filters keep the change (its change type listed, or none listed; its risk at
// least min_risk), restricted to the watch's endpoint_ids when it names some, and only endpoints that
// are neither revoked nor disabled and take intel.change events. An organization watches a server at
// most once, so an endpoint appears at most once.
const matchWatches = `
SELECT e.id, e.organization_id
FROM webhook_watches w
JOIN webhook_endpoints e ON e.organization_id = w.organization_id
WHERE w.namespace = $1 AND w.name = $2 AND w.state = 'active'
  AND (cardinality(w.change_types) = 0 OR $3 = ANY (w.change_types))
  AND (CASE w.min_risk WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END)
      <= (CASE $4::text WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END)
  AND (cardinality(w.endpoint_ids) = 0 OR e.id = ANY (w.endpoint_ids))
  AND e.revoked_at IS NULL AND e.disabled_at IS NULL
  AND (cardinality(e.event_types) = 0 OR 'intel.change' = ANY (e.event_types))`

const insertWebhookDelivery = `
INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, replay_of, status, due_at)
VALUES ($1, $2, $3, $4, $5, 'pending', now() + make_interval(secs => $6))`

type webhookTarget struct {
	endpointID, organizationID uuid.UUID
}

// RecordChange stores a change's event and deliveries once per change id.
func (s *Webhooks) RecordChange(ctx context.Context, c webhooks.Change, ev webhooks.Event, requeueAfter time.Duration) (int, error) {
	var created int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO webhook_inbox (change_id) VALUES ($1) ON CONFLICT DO NOTHING`, c.ID)
		if err != nil || tag.RowsAffected() == 0 {
			return err // a redelivered change: handled before
		}
		rows, err := tx.Query(ctx, matchWatches, c.Namespace, c.Name, c.ChangeType, c.Risk)
		if err != nil {
			return err
		}
		targets, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhookTarget, error) {
			var t webhookTarget
			return t, r.Scan(&t.endpointID, &t.organizationID)
		})
		if err != nil || len(targets) == 0 {
			return err
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO webhook_events (id, change_id, type, payload) VALUES ($1, $2, $3, $4)`, ev.ID, ev.ChangeID, ev.Type, ev.Payload)
		for _, t := range targets {
			id := uuid.Must(uuid.NewV7())
			b.Queue(insertWebhookDelivery, id, t.organizationID, t.endpointID, ev.ID, nil, requeueAfter.Seconds())
			if err := queueWebhookJob(ctx, b, id, 1); err != nil {
				return err
			}
		}
		created = len(targets)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return 0, err
	}
	return created, nil
}

// claimWebhookDelivery leases a delivery for attempt $2: it must be pending, have made $2-1 attempts
// and not be leased by another worker. The lease is a column, not a row lock, so that no connection
// is held while the worker POSTs (a slow receiver would otherwise tie up one per worker).
const claimWebhookDelivery = `
UPDATE webhook_deliveries d SET lease_until = now() + make_interval(secs => $3)
FROM webhook_events ev, webhook_endpoints e
WHERE d.id = $1 AND d.status = 'pending' AND d.attempt_count = $2 - 1
  AND (d.lease_until IS NULL OR d.lease_until < now())
  AND ev.id = d.event_id AND e.id = d.endpoint_id
RETURNING d.event_id, ev.payload, e.id, e.url, e.secret, e.disabled_at IS NOT NULL, e.revoked_at IS NOT NULL`

// Attempt leases the delivery, runs send, and records its outcome. Each step is one statement or
// one pipelined batch (a batch runs as one transaction), because a delivery is mostly round trips.
// If the record fails the lease simply expires, and the job, left unacknowledged, runs again.
func (s *Webhooks) Attempt(ctx context.Context, deliveryID uuid.UUID, attempt int, lease time.Duration, send func(context.Context, webhooks.Claim) (webhooks.Outcome, error)) (bool, error) {
	c := webhooks.Claim{DeliveryID: deliveryID, Attempt: attempt}
	found := false
	claim := &pgx.Batch{}
	// The lease is committed without waiting for its WAL flush: a lease lost in a database crash only
	// frees the delivery early, which the redelivered job needs anyway. It saves a flush per delivery.
	claim.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	claim.Queue(claimWebhookDelivery, deliveryID, attempt, lease.Seconds()).QueryRow(func(row pgx.Row) error {
		err := row.Scan(&c.EventID, &c.Payload, &c.Endpoint.ID, &c.Endpoint.URL, &c.Endpoint.Secret, &c.Endpoint.Disabled, &c.Endpoint.Revoked)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err := s.pool.SendBatch(ctx, claim).Close(); err != nil {
		return false, err
	}
	if !found {
		return false, nil // leased by another worker, or a stale or duplicate job
	}
	out, err := send(ctx, c)
	if err != nil {
		return false, err
	}
	if err := s.pool.SendBatch(ctx, webhookOutcomeBatch(c, out)).Close(); err != nil {
		return false, err
	}
	return true, nil
}

// webhookOutcomeBatch writes an outcome: the attempt record, the delivery's new state and the
// endpoint's health.
func webhookOutcomeBatch(c webhooks.Claim, out webhooks.Outcome) *pgx.Batch {
	b := &pgx.Batch{}
	made, lastStatus := 0, 0
	if a := out.Attempt; a != nil {
		made, lastStatus = 1, a.StatusCode
		b.Queue(`INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms, error, response_excerpt, started_at, finished_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, c.DeliveryID, a.Attempt, a.StatusCode, a.LatencyMS, a.Error, a.ResponseExcerpt, a.StartedAt, a.FinishedAt)
	}
	var next *time.Time
	if out.Status == webhooks.StatusPending {
		next = &out.NextAttemptAt
	}
	b.Queue(`UPDATE webhook_deliveries SET status = $2, failure_reason = nullif($3, ''),
    attempt_count = attempt_count + $4, last_status = CASE WHEN $4 = 1 THEN $5 ELSE last_status END,
    next_attempt_at = $6, due_at = $6, lease_until = NULL, updated_at = now()
WHERE id = $1`, c.DeliveryID, out.Status, out.FailureReason, made, lastStatus, next)
	switch e := out.Endpoint; {
	case e.Succeeded:
		b.Queue(`UPDATE webhook_endpoints SET consecutive_failures = 0 WHERE id = $1 AND consecutive_failures <> 0`, c.Endpoint.ID)
	case e.Gone:
		b.Queue(`UPDATE webhook_endpoints SET disabled_at = coalesce(disabled_at, now()),
    disabled_reason = coalesce(disabled_reason, $2) WHERE id = $1`, c.Endpoint.ID, webhooks.DisabledGone)
	case e.Exhausted:
		b.Queue(`UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1,
    disabled_at = CASE WHEN disabled_at IS NULL AND consecutive_failures + 1 >= $2 THEN now() ELSE disabled_at END,
    disabled_reason = CASE WHEN disabled_at IS NULL AND consecutive_failures + 1 >= $2 THEN $3 ELSE disabled_reason END
WHERE id = $1`, c.Endpoint.ID, e.DisableAfter, webhooks.DisabledFailing)
	}
	return b
}

// enqueueDueWebhooks claims due deliveries and pushes their due time ahead, so that a job that is lost
// is enqueued again later. Leased deliveries are being attempted, and rows another scheduler holds
// are being enqueued: both are skipped.
const enqueueDueWebhooks = `
WITH due AS (
    SELECT id FROM webhook_deliveries
    WHERE status = 'pending' AND due_at <= now() AND (lease_until IS NULL OR lease_until < now())
    ORDER BY due_at LIMIT $1
    FOR UPDATE SKIP LOCKED)
UPDATE webhook_deliveries d SET due_at = now() + make_interval(secs => $2)
FROM due WHERE d.id = due.id
RETURNING d.id, d.attempt_count + 1`

// EnqueueDue enqueues jobs for due deliveries through the outbox.
func (s *Webhooks) EnqueueDue(ctx context.Context, limit int, requeueAfter time.Duration) (int, error) {
	var n int
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, enqueueDueWebhooks, limit, requeueAfter.Seconds())
		if err != nil {
			return err
		}
		type due struct {
			id      uuid.UUID
			attempt int
		}
		list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
			var d due
			return d, r.Scan(&d.id, &d.attempt)
		})
		if err != nil || len(list) == 0 {
			return err
		}
		b := &pgx.Batch{}
		for _, d := range list {
			if err := queueWebhookJob(ctx, b, d.id, d.attempt); err != nil {
				return err
			}
		}
		n = len(list)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// PruneInbox forgets handled change ids older than age.
func (s *Webhooks) PruneInbox(ctx context.Context, age time.Duration) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM webhook_inbox WHERE received_at < now() - make_interval(secs => $1)`, age.Seconds())
	return err
}
