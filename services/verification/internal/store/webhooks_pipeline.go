package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/pkg/outbox"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// jobs returns the outbox events of delivery jobs: attempt(i) is the attempt of deliveryIDs[i].
func (s *Webhooks) jobs(deliveryIDs []uuid.UUID, attempt func(i int) int) ([]outbox.Event, error) {
	evs := make([]outbox.Event, len(deliveryIDs))
	for i, id := range deliveryIDs {
		ev, err := s.events.DeliveryJob(id, attempt(i))
		if err != nil {
			return nil, err
		}
		evs[i] = ev
	}
	return evs, nil
}

// queueJob adds the outbox row of one delivery job to b.
func (s *Webhooks) queueJob(ctx context.Context, b *pgx.Batch, deliveryID uuid.UUID, attempt int) error {
	ev, err := s.events.DeliveryJob(deliveryID, attempt)
	if err != nil {
		return err
	}
	_, err = outbox.Queue(ctx, b, ev)
	return err
}

// matchWatches records a change in the inbox and lists the endpoints it goes to, in one statement: none
// when the change was handled before (the inbox row exists), else those of every organization with an
// active watch of the server whose filters keep the change (its change type listed, or none listed;
// its risk at least min_risk), restricted to the watch's endpoint_ids when it names some, and only
// endpoints that are neither revoked nor disabled and take intel.change events, with what sending to
// them needs. An organization watches a server at most once, so an endpoint appears at most once.
const matchWatches = `
WITH first AS (INSERT INTO webhook_inbox (change_id) VALUES ($1) ON CONFLICT DO NOTHING RETURNING change_id)
SELECT e.id, e.organization_id, e.url, e.secret
FROM first, webhook_watches w
JOIN webhook_endpoints e ON e.organization_id = w.organization_id
WHERE w.namespace = $2 AND w.name = $3 AND w.state = 'active'
  AND (cardinality(w.change_types) = 0 OR $4 = ANY (w.change_types))
  AND (CASE w.min_risk WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END)
      <= (CASE $5::text WHEN 'high' THEN 3 WHEN 'medium' THEN 2 ELSE 1 END)
  AND (cardinality(w.endpoint_ids) = 0 OR e.id = ANY (w.endpoint_ids))
  AND e.revoked_at IS NULL AND e.disabled_at IS NULL
  AND (cardinality(e.event_types) = 0 OR 'intel.change' = ANY (e.event_types))`

// insertWebhookDelivery creates one delivery (a replay).
const insertWebhookDelivery = `
INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, replay_of, status, due_at)
VALUES ($1, $2, $3, $4, $5, 'pending', now() + make_interval(secs => $6))`

// insertWebhookDeliveries creates a change's deliveries in one statement, one row per endpoint.
const insertWebhookDeliveries = `
INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, status, due_at)
SELECT d.id, d.organization_id, d.endpoint_id, $4, 'pending', now() + make_interval(secs => $5)
FROM unnest($1::uuid[], $2::uuid[], $3::uuid[]) AS d (id, organization_id, endpoint_id)`

// insertMatchedWebhookDeliveries creates a change's deliveries, each in the state its first attempt
// left it (d.ended), or leased to the matcher while that attempt goes on: such a delivery is due when
// its lease runs out, so that the scheduler enqueues the job of a first attempt that was never
// recorded.
const insertMatchedWebhookDeliveries = `
INSERT INTO webhook_deliveries (id, organization_id, endpoint_id, event_id, status, failure_reason, attempt_count,
    last_status, next_attempt_at, lease_until, due_at)
SELECT d.id, d.organization_id, d.endpoint_id, $4, d.status, nullif(d.failure_reason, ''), d.made, d.last_status,
       d.next_attempt_at,
       CASE WHEN NOT d.ended THEN now() + make_interval(secs => $5) END,
       CASE WHEN NOT d.ended THEN now() + make_interval(secs => $5) ELSE d.next_attempt_at END
FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $6::text[], $7::text[], $8::int[], $9::int[], $10::timestamptz[], $11::bool[])
    AS d (id, organization_id, endpoint_id, status, failure_reason, made, last_status, next_attempt_at, ended)`

// takePendingChange removes the oldest queued change that no other matcher holds, and says whether
// changes were queued after it; the row stays locked, and the removal undone, until the matcher's
// transaction ends.
const takePendingChange = `
DELETE FROM webhook_pending_changes t WHERE seq = (
    SELECT seq FROM webhook_pending_changes ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING payload, EXISTS (SELECT FROM webhook_pending_changes n WHERE n.seq > t.seq)`

// MatchNext takes the oldest queued change and, in one transaction, records its event and its
// deliveries, each as its first attempt left it or leased to the caller while that attempt goes on,
// so that a change whose receivers answer at once costs one transaction of five round trips whatever
// the fan-out: begin, the queue, the inbox and match statement, the writes (the event, the
// deliveries, the attempts, the endpoints' health), commit. queued is called as soon as the change
// is taken if changes were queued after it; send starts the first attempts and returns a function
// that waits for them. A change that can never be matched (its payload does not decode, or event
// refuses it) leaves the queue, so that it does not hold up the ones after it.
func (s *Webhooks) MatchNext(ctx context.Context, queued func(), event func(webhooks.Change) (webhooks.Event, error), lease time.Duration,
	send func([]webhooks.Claim) func() []webhooks.Attempted) (bool, error) {
	var found bool
	var dropped error
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var payload []byte
		var more bool
		err := tx.QueryRow(ctx, takePendingChange).Scan(&payload, &more)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if more {
			queued()
		}
		c, err := s.events.Change(payload)
		if err != nil {
			dropped = err
			return nil
		}
		ev, err := event(c)
		if err != nil {
			dropped = err
			return nil
		}
		claims, err := s.match(ctx, tx, c, ev)
		if err != nil || len(claims) == 0 {
			return err
		}
		ended := send(claims)()
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO webhook_events (id, change_id, type, payload) VALUES ($1, $2, $3, $4)`, ev.ID, ev.ChangeID, ev.Type, ev.Payload)
		queueMatchedDeliveries(b, claims, ended, ev.ID, lease)
		queueAttemptsAndEndpoints(b, ended)
		return tx.SendBatch(ctx, b).Close()
	})
	switch {
	case err != nil:
		return found, err
	case dropped != nil:
		return true, fmt.Errorf("%w: %w", webhooks.ErrChangeDropped, dropped)
	}
	return found, nil
}

// match records a change's id in the inbox and returns one claim for each delivery it must get:
// none when the inbox holds the id already.
func (s *Webhooks) match(ctx context.Context, tx pgx.Tx, c webhooks.Change, ev webhooks.Event) ([]webhooks.Claim, error) {
	rows, err := tx.Query(ctx, matchWatches, c.ID, c.Namespace, c.Name, c.ChangeType, c.Risk)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhooks.Claim, error) {
		c := webhooks.Claim{DeliveryID: uuid.Must(uuid.NewV7()), Attempt: 1, EventID: ev.ID, Payload: ev.Payload}
		return c, r.Scan(&c.Endpoint.ID, &c.OrganizationID, &c.Endpoint.URL, &c.Endpoint.Secret)
	})
}

// queueMatchedDeliveries adds the insert of a change's deliveries to b: those in ended as their first
// attempt left them, the others leased for lease.
func queueMatchedDeliveries(b *pgx.Batch, claims []webhooks.Claim, ended []webhooks.Attempted, eventID uuid.UUID, lease time.Duration) {
	outcomes := make(map[uuid.UUID]webhooks.Outcome, len(ended))
	for _, a := range ended {
		outcomes[a.Claim.DeliveryID] = a.Outcome
	}
	n := len(claims)
	ids, orgs, endpoints := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n)
	statuses, reasons := make([]string, n), make([]string, n)
	made, lastStatus := make([]int32, n), make([]int32, n)
	next, done := make([]*time.Time, n), make([]bool, n)
	for i, c := range claims {
		ids[i], orgs[i], endpoints[i], statuses[i] = c.DeliveryID, c.OrganizationID, c.Endpoint.ID, webhooks.StatusPending
		out, ok := outcomes[c.DeliveryID]
		if !ok {
			continue
		}
		done[i], statuses[i], reasons[i], next[i] = true, out.Status, out.FailureReason, nextAttempt(out)
		made[i], lastStatus[i] = attemptsMade(out)
	}
	b.Queue(insertMatchedWebhookDeliveries, ids, orgs, endpoints, eventID, lease.Seconds(), statuses, reasons, made, lastStatus, next, done)
}

// claimWebhookDelivery leases a delivery for attempt $2: it must be pending, have made $2-1 attempts
// and not be leased by another worker. The lease is a column, not a row lock, so that no connection
// is held while the worker POSTs (a slow receiver would otherwise tie up one per worker). It is one
// statement per delivery, sent in a batch with the others being claimed, rather than one statement
// over an array of ids: with an array, the planner chose the partial index on pending deliveries,
// whose statistics lag behind a burst, and read every pending row (10,000 in the fan-out benchmark)
// for each claim; by primary key each claim reads one row.
const claimWebhookDelivery = `
UPDATE webhook_deliveries d SET lease_until = now() + make_interval(secs => $3)
FROM webhook_events ev, webhook_endpoints e
WHERE d.id = $1 AND d.status = 'pending' AND d.attempt_count = $2 - 1
  AND (d.lease_until IS NULL OR d.lease_until < now())
  AND ev.id = d.event_id AND e.id = d.endpoint_id
RETURNING d.event_id, ev.payload, e.id, e.url, e.secret, e.disabled_at IS NOT NULL, e.revoked_at IS NOT NULL`

// maxCoalesced caps the claims or outcomes of one statement batch; coalescedRuns is how many such
// batches of each kind are in flight at once, each on a connection of the pipeline's pool (whose
// min(workers, 16) connections for the workers cover both kinds). With 4 in flight the in-process
// fan-out benchmark delivered less than the previous one-round-trip-per-worker code on a loaded
// machine, whose long scheduling delays reward more statements in flight; with 8, as much or more,
// at less PostgreSQL CPU per delivery.
const (
	maxCoalesced  = 64
	coalescedRuns = 8
)

// claimRequest asks for a lease on one delivery for one attempt.
type claimRequest struct {
	deliveryID uuid.UUID
	attempt    int
	lease      time.Duration
}

// claimResult is the lease a claimRequest got, if any.
type claimResult struct {
	claim webhooks.Claim
	found bool
}

// ClaimDelivery leases the delivery for attempt number attempt. The lease is one statement batch
// shared with the other workers that claim at the same moment (coalescer), because a delivery is
// mostly round trips and commits.
func (s *Webhooks) ClaimDelivery(ctx context.Context, deliveryID uuid.UUID, attempt int, lease time.Duration) (webhooks.Claim, bool, error) {
	got, err := s.claims.do(ctx, claimRequest{deliveryID: deliveryID, attempt: attempt, lease: lease})
	if err != nil {
		return webhooks.Claim{}, false, err
	}
	return got.claim, got.found, nil
}

// RecordOutcome records what became of a claimed delivery and ends its lease, in one statement batch
// shared with the other workers that record at the same moment. If it fails the lease simply
// expires, and the job, left unacknowledged, runs again.
func (s *Webhooks) RecordOutcome(ctx context.Context, c webhooks.Claim, out webhooks.Outcome) error {
	_, err := s.outcomes.do(ctx, webhooks.Attempted{Claim: c, Outcome: out})
	return err
}

// claimDeliveries leases the deliveries of reqs in one batch (one transaction). A delivery asked for
// twice (a duplicate job) is leased by its first statement; the second finds it leased.
func (s *Webhooks) claimDeliveries(ctx context.Context, reqs []claimRequest) ([]claimResult, error) {
	out := make([]claimResult, len(reqs))
	b := &pgx.Batch{}
	// The lease is committed without waiting for its WAL flush: a lease lost in a database crash only
	// frees the delivery early, which the redelivered job needs anyway. It saves a flush per batch.
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	for i, r := range reqs {
		res := &out[i]
		c := &res.claim
		c.DeliveryID, c.Attempt = r.deliveryID, r.attempt
		b.Queue(claimWebhookDelivery, r.deliveryID, r.attempt, r.lease.Seconds()).QueryRow(func(row pgx.Row) error {
			err := row.Scan(&c.EventID, &c.Payload, &c.Endpoint.ID, &c.Endpoint.URL, &c.Endpoint.Secret, &c.Endpoint.Disabled, &c.Endpoint.Revoked)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			res.found = err == nil
			return err
		})
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return out, nil
}

// recordOutcomes writes outcomes in one transaction. When that fails, each is tried alone, so that
// one outcome the database refuses cannot fail the others' records (their jobs would be sent again).
func (s *Webhooks) recordOutcomes(ctx context.Context, outs []webhooks.Attempted) ([]struct{}, error) {
	err := s.pool.SendBatch(ctx, webhookOutcomesBatch(outs)).Close()
	if err == nil || len(outs) == 1 {
		return make([]struct{}, len(outs)), err
	}
	var errs []error
	for _, o := range outs {
		if err := s.pool.SendBatch(ctx, webhookOutcomesBatch([]webhooks.Attempted{o})).Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		// The coalescer fails the whole group; the outcomes that were recorded are found again by
		// their redelivered jobs as attempts already made, and skipped.
		return nil, errors.Join(errs...)
	}
	return make([]struct{}, len(outs)), nil
}

const (
	insertWebhookAttempts = `
INSERT INTO webhook_attempts (delivery_id, attempt, status_code, latency_ms, error, response_excerpt, started_at, finished_at)
SELECT * FROM unnest($1::uuid[], $2::int[], $3::int[], $4::bigint[], $5::text[], $6::text[], $7::timestamptz[], $8::timestamptz[])`

	// One statement per delivery, by primary key: joined to an unnest of ids, the planner read the
	// whole table for each batch while its statistics still described it small (1,196 sequential
	// scans in a 10,000-delivery run of the bench, seen with auto_explain).
	updateWebhookDelivery = `
UPDATE webhook_deliveries SET status = $2, failure_reason = nullif($3, ''),
    attempt_count = attempt_count + $4, last_status = CASE WHEN $4 = 1 THEN $5 ELSE last_status END,
    next_attempt_at = $6, due_at = $6, lease_until = NULL, updated_at = now()
WHERE id = $1`

	resetWebhookEndpoints = `UPDATE webhook_endpoints SET consecutive_failures = 0 WHERE id = ANY ($1) AND consecutive_failures <> 0`

	disableGoneWebhookEndpoint = `UPDATE webhook_endpoints SET disabled_at = coalesce(disabled_at, now()),
    disabled_reason = coalesce(disabled_reason, $2) WHERE id = $1`

	countExhaustedWebhookEndpoint = `UPDATE webhook_endpoints SET consecutive_failures = consecutive_failures + 1,
    disabled_at = CASE WHEN disabled_at IS NULL AND consecutive_failures + 1 >= $2 THEN now() ELSE disabled_at END,
    disabled_reason = CASE WHEN disabled_at IS NULL AND consecutive_failures + 1 >= $2 THEN $3 ELSE disabled_reason END
WHERE id = $1`
)

// attemptsMade is how many attempts an outcome adds to its delivery (none when nothing was sent) and
// the status code the last one got.
func attemptsMade(out webhooks.Outcome) (int32, int32) {
	if a := out.Attempt; a != nil {
		return 1, int32(a.StatusCode)
	}
	return 0, 0
}

// nextAttempt is when the delivery's retry is due; nil unless it stays pending.
func nextAttempt(out webhooks.Outcome) *time.Time {
	if out.Status == webhooks.StatusPending {
		return &out.NextAttemptAt
	}
	return nil
}

// webhookOutcomesBatch writes outcomes: the deliveries' new states, the attempt records and the
// endpoints' health. A batch runs as one transaction.
func webhookOutcomesBatch(outs []webhooks.Attempted) *pgx.Batch {
	b := &pgx.Batch{}
	for _, o := range outs {
		made, lastStatus := attemptsMade(o.Outcome)
		b.Queue(updateWebhookDelivery, o.Claim.DeliveryID, o.Outcome.Status, o.Outcome.FailureReason, made, lastStatus, nextAttempt(o.Outcome))
	}
	queueAttemptsAndEndpoints(b, outs)
	return b
}

// queueAttemptsAndEndpoints adds to b the attempt records of outs and what they do to their
// endpoints' health. Endpoint rows are updated in id order, so that two replicas recording at once
// lock them in the same order. Within one batch, the successes reset their endpoints' failure counts
// before the exhausted deliveries count theirs: the outcomes of one batch happened at the same
// moment, and no order among them is more right than another.
func queueAttemptsAndEndpoints(b *pgx.Batch, outs []webhooks.Attempted) {
	var (
		aIDs                       []uuid.UUID
		aNums, aCodes              []int32
		aLatency                   []int64
		aErrs, aExcerpts           []string
		aStart, aEnd               []time.Time
		succeeded, gone, exhausted []uuid.UUID
		disableAfter               = map[uuid.UUID]int{}
	)
	for _, o := range outs {
		if a := o.Outcome.Attempt; a != nil {
			aIDs, aNums, aCodes = append(aIDs, o.Claim.DeliveryID), append(aNums, int32(a.Attempt)), append(aCodes, int32(a.StatusCode))
			aLatency, aErrs, aExcerpts = append(aLatency, a.LatencyMS), append(aErrs, a.Error), append(aExcerpts, a.ResponseExcerpt)
			aStart, aEnd = append(aStart, a.StartedAt), append(aEnd, a.FinishedAt)
		}
		switch e := o.Outcome.Endpoint; {
		case e.Succeeded:
			succeeded = append(succeeded, o.Claim.Endpoint.ID)
		case e.Gone:
			gone = append(gone, o.Claim.Endpoint.ID)
		case e.Exhausted:
			exhausted = append(exhausted, o.Claim.Endpoint.ID)
			disableAfter[o.Claim.Endpoint.ID] = e.DisableAfter
		}
	}
	if len(aIDs) > 0 {
		b.Queue(insertWebhookAttempts, aIDs, aNums, aCodes, aLatency, aErrs, aExcerpts, aStart, aEnd)
	}
	if len(succeeded) > 0 {
		b.Queue(resetWebhookEndpoints, sortedIDs(succeeded))
	}
	for _, id := range sortedIDs(exhausted) {
		b.Queue(countExhaustedWebhookEndpoint, id, disableAfter[id], webhooks.DisabledFailing)
	}
	for _, id := range sortedIDs(gone) {
		b.Queue(disableGoneWebhookEndpoint, id, webhooks.DisabledGone)
	}
}

// sortedIDs sorts ids in place, keeping duplicates (an endpoint with two exhausted deliveries counts
// two failures).
func sortedIDs(ids []uuid.UUID) []uuid.UUID {
	slices.SortFunc(ids, func(a, b uuid.UUID) int { return bytes.Compare(a[:], b[:]) })
	return ids
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
		ids := make([]uuid.UUID, len(list))
		for i, d := range list {
			ids[i] = d.id
		}
		jobs, err := s.jobs(ids, func(i int) int { return list[i].attempt })
		if err != nil {
			return err
		}
		b := &pgx.Batch{}
		if _, err := outbox.QueueAll(ctx, b, jobs); err != nil {
			return err
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
