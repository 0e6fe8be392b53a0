package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/fault"
	"github.com/trustlayer/trustlayer/services/verification/internal/webhooks"
)

// Webhooks implements webhooks.Store on a pgx pool.
type Webhooks struct {
	pool   *pgxpool.Pool
	events Events
	// claims and outcomes group the delivery workers' leases and records (webhooks_batch.go).
	claims   *coalescer[claimRequest, claimResult]
	outcomes *coalescer[webhooks.Attempted, struct{}]
}

var _ webhooks.Store = (*Webhooks)(nil)

// NewWebhooks returns the webhook store; events encodes the delivery jobs it commits.
func NewWebhooks(pool *pgxpool.Pool, events Events) *Webhooks {
	s := &Webhooks{pool: pool, events: events}
	s.claims = newCoalescer(maxCoalesced, coalescedRuns, s.claimDeliveries)
	s.outcomes = newCoalescer(maxCoalesced, coalescedRuns, s.recordOutcomes)
	return s
}

// webhookLockOrganization serialises an organization's creations of one kind inside tx, so that two
// concurrent requests cannot both pass a cap check. The lock is released at commit.
const webhookLockOrganization = `SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2::text, 0))`

// inTx runs fn in a transaction and commits when it returns nil.
func (s *Webhooks) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

const endpointColumns = `id, organization_id, url, description, event_types, consecutive_failures, disabled_at,
coalesce(disabled_reason, ''), created_at`

func scanEndpoint(row pgx.Row) (webhooks.Endpoint, error) {
	var e webhooks.Endpoint
	err := row.Scan(&e.ID, &e.OrganizationID, &e.URL, &e.Description, &e.EventTypes, &e.ConsecutiveFailures,
		&e.DisabledAt, &e.DisabledReason, &e.CreatedAt)
	return e, err
}

// CreateEndpoint stores an endpoint under the organization's cap.
func (s *Webhooks) CreateEndpoint(ctx context.Context, e webhooks.Endpoint, secret string, limit int) (webhooks.Endpoint, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, webhookLockOrganization, "webhook_endpoints", e.OrganizationID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_endpoints WHERE organization_id = $1 AND revoked_at IS NULL`,
			e.OrganizationID).Scan(&n); err != nil {
			return err
		}
		if n >= limit {
			return fault.ErrEndpointLimit
		}
		var err error
		e, err = scanEndpoint(tx.QueryRow(ctx, `
INSERT INTO webhook_endpoints (id, organization_id, url, description, event_types, secret)
VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+endpointColumns,
			e.ID, e.OrganizationID, e.URL, e.Description, e.EventTypes, secret))
		return err
	})
	return e, err
}

// ListEndpoints lists the organization's endpoints that are not revoked, oldest first.
func (s *Webhooks) ListEndpoints(ctx context.Context, organizationID uuid.UUID) ([]webhooks.Endpoint, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints
WHERE organization_id = $1 AND revoked_at IS NULL ORDER BY created_at, id`, organizationID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhooks.Endpoint, error) { return scanEndpoint(r) })
}

// RevokeEndpoint revokes an endpoint that is not revoked yet.
func (s *Webhooks) RevokeEndpoint(ctx context.Context, organizationID, id uuid.UUID) error {
	return webhookAffected(s.pool.Exec(ctx, `UPDATE webhook_endpoints SET revoked_at = now()
WHERE id = $1 AND organization_id = $2 AND revoked_at IS NULL`, id, organizationID))
}

// EnableEndpoint clears the disabled state and the failure count.
func (s *Webhooks) EnableEndpoint(ctx context.Context, organizationID, id uuid.UUID) (webhooks.Endpoint, error) {
	e, err := scanEndpoint(s.pool.QueryRow(ctx, `
UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = NULL, consecutive_failures = 0
WHERE id = $1 AND organization_id = $2 AND revoked_at IS NULL RETURNING `+endpointColumns, id, organizationID))
	return e, noRows(err, fault.ErrNotFound)
}

// MissingEndpoints returns the ids that name no live endpoint of the organization.
func (s *Webhooks) MissingEndpoints(ctx context.Context, organizationID uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `
SELECT id FROM unnest($2::uuid[]) AS wanted(id)
WHERE NOT EXISTS (SELECT 1 FROM webhook_endpoints e
                  WHERE e.id = wanted.id AND e.organization_id = $1 AND e.revoked_at IS NULL)`, organizationID, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
}

func webhookAffected(tag pgconn.CommandTag, err error) error {
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fault.ErrNotFound
	}
	return nil
}

const watchColumns = `id, organization_id, namespace, name, state, change_types, min_risk, endpoint_ids, created_at`

func scanWatch(row pgx.Row) (webhooks.Watch, error) {
	var w webhooks.Watch
	err := row.Scan(&w.ID, &w.OrganizationID, &w.Namespace, &w.Name, &w.State, &w.Filters.ChangeTypes,
		&w.Filters.MinRisk, &w.Filters.EndpointIDs, &w.CreatedAt)
	return w, err
}

// CreateWatch stores a watch unless the server is already watched or the cap is reached.
func (s *Webhooks) CreateWatch(ctx context.Context, w webhooks.Watch, limit int) (webhooks.Watch, error) {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, webhookLockOrganization, "webhook_watches", w.OrganizationID); err != nil {
			return err
		}
		var existing uuid.UUID
		err := tx.QueryRow(ctx, `SELECT id FROM webhook_watches
WHERE organization_id = $1 AND namespace = $2 AND name = $3 AND state <> 'archived'`,
			w.OrganizationID, w.Namespace, w.Name).Scan(&existing)
		switch {
		case err == nil:
			return &fault.WatchExistsError{WatchID: existing}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM webhook_watches WHERE organization_id = $1 AND state = 'active'`,
			w.OrganizationID).Scan(&n); err != nil {
			return err
		}
		if n >= limit {
			return fault.ErrWatchLimit
		}
		w, err = scanWatch(tx.QueryRow(ctx, `
INSERT INTO webhook_watches (id, organization_id, namespace, name, state, change_types, min_risk, endpoint_ids)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+watchColumns,
			w.ID, w.OrganizationID, w.Namespace, w.Name, w.State, w.Filters.ChangeTypes, w.Filters.MinRisk, w.Filters.EndpointIDs))
		return err
	})
	return w, err
}

// GetWatch returns the organization's active watch of a server.
func (s *Webhooks) GetWatch(ctx context.Context, organizationID uuid.UUID, namespace, name string) (webhooks.Watch, error) {
	w, err := scanWatch(s.pool.QueryRow(ctx, `SELECT `+watchColumns+` FROM webhook_watches
WHERE organization_id = $1 AND namespace = $2 AND name = $3 AND state = 'active'`, organizationID, namespace, name))
	return w, noRows(err, fault.ErrNotFound)
}

// ArchiveWatch archives the organization's watch of a server.
func (s *Webhooks) ArchiveWatch(ctx context.Context, organizationID uuid.UUID, namespace, name string) error {
	return webhookAffected(s.pool.Exec(ctx, `UPDATE webhook_watches SET state = 'archived', archived_at = now()
WHERE organization_id = $1 AND namespace = $2 AND name = $3 AND state <> 'archived'`, organizationID, namespace, name))
}
