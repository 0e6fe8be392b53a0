package store

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/billing"
)

// ReliabilityBilling is agent reliability's billing store (billing.Store): the workspaces' plan and
// billing state, the webhook events applied, the usage counts and the dashboard's reads.
type ReliabilityBilling struct{ pool *pgxpool.Pool }

// NewReliabilityBilling returns the billing store.
func NewReliabilityBilling(pool *pgxpool.Pool) *ReliabilityBilling {
	return &ReliabilityBilling{pool: pool}
}

const billingWorkspaceColumns = `organization_id, plan, billing_status, coalesce(stripe_customer_id, ''),
coalesce(stripe_subscription_id, ''), current_period_start, current_period_end, subscription_event_at`

func scanBillingWorkspace(row pgx.Row) (billing.Workspace, error) {
	var w billing.Workspace
	err := row.Scan(&w.OrganizationID, &w.Plan, &w.Status, &w.CustomerID, &w.SubscriptionID, &w.PeriodStart, &w.PeriodEnd, &w.SubscriptionEventAt)
	return w, err
}

// freeWorkspace is a workspace without a row.
func freeWorkspace(org uuid.UUID) billing.Workspace {
	return billing.Workspace{OrganizationID: org, Plan: billing.PlanFree, Status: billing.StatusNone}
}

// Workspace reads a workspace's billing state; without a row it is free, status none.
func (s *ReliabilityBilling) Workspace(ctx context.Context, org uuid.UUID) (billing.Workspace, error) {
	w, err := scanBillingWorkspace(s.pool.QueryRow(ctx, `SELECT `+billingWorkspaceColumns+`
FROM reliability_workspaces WHERE organization_id = $1`, org))
	if errors.Is(err, pgx.ErrNoRows) {
		return freeWorkspace(org), nil
	}
	return w, err
}

// Usage counts the workspace's targets and its runs created in [from, to) (the index
// reliability_runs_list serves the range).
func (s *ReliabilityBilling) Usage(ctx context.Context, org uuid.UUID, from, to time.Time) (int, int, error) {
	var targets, scans int
	err := s.pool.QueryRow(ctx, `SELECT
  (SELECT count(*) FROM reliability_targets WHERE organization_id = $1),
  (SELECT count(*) FROM reliability_runs WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3)`,
		org, from, to).Scan(&targets, &scans)
	return targets, scans, err
}

// MarkCheckoutPending records an opened checkout, unless a subscription is running.
func (s *ReliabilityBilling) MarkCheckoutPending(ctx context.Context, org uuid.UUID) error {
	_, err := s.pool.Exec(ctx, `
INSERT INTO reliability_workspaces (organization_id, billing_status, updated_at) VALUES ($1, 'checkout_pending', now())
ON CONFLICT (organization_id) DO UPDATE SET billing_status = 'checkout_pending', updated_at = now()
WHERE reliability_workspaces.billing_status NOT IN ('active', 'past_due')`, org)
	return err
}

// BeginEvent starts the transaction of one webhook event.
func (s *ReliabilityBilling) BeginEvent(ctx context.Context) (billing.EventTx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &billingEventTx{tx: tx}, nil
}

type billingEventTx struct{ tx pgx.Tx }

// Seen serializes deliveries of one event id on a transaction-scoped advisory lock (the row is
// written only at the end, with its outcome, since the table is append-only), then looks it up.
func (t *billingEventTx) Seen(ctx context.Context, eventID string) (bool, error) {
	if _, err := t.tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('reliability_billing_event:' || $1, 0))`, eventID); err != nil {
		return false, err
	}
	var seen bool
	err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM reliability_billing_events WHERE event_id = $1)`, eventID).Scan(&seen)
	return seen, err
}

// LockWorkspace finds and locks the event's workspace: by organization (its row is created for an
// existing organization), else by subscription, else by customer.
func (t *billingEventTx) LockWorkspace(ctx context.Context, e billing.Event) (billing.Workspace, bool, error) {
	if org, err := uuid.Parse(e.OrganizationID); err == nil {
		var exists bool
		if err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM organizations WHERE id = $1)`, org).Scan(&exists); err != nil {
			return billing.Workspace{}, false, err
		}
		if exists {
			if _, err := t.tx.Exec(ctx, `INSERT INTO reliability_workspaces (organization_id, updated_at) VALUES ($1, now())
ON CONFLICT (organization_id) DO NOTHING`, org); err != nil {
				return billing.Workspace{}, false, err
			}
			w, err := scanBillingWorkspace(t.tx.QueryRow(ctx, `SELECT `+billingWorkspaceColumns+`
FROM reliability_workspaces WHERE organization_id = $1 FOR UPDATE`, org))
			return w, err == nil, err
		}
	}
	for _, by := range []struct{ column, value string }{
		{"stripe_subscription_id", e.SubscriptionID}, {"stripe_customer_id", e.CustomerID},
	} {
		if by.value == "" {
			continue
		}
		// The column names are the two constants above, never input.
		w, err := scanBillingWorkspace(t.tx.QueryRow(ctx, `SELECT `+billingWorkspaceColumns+`
FROM reliability_workspaces WHERE `+by.column+` = $1 ORDER BY updated_at DESC LIMIT 1 FOR UPDATE`, by.value))
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		return w, err == nil, err
	}
	return billing.Workspace{}, false, nil
}

// SaveWorkspace writes a workspace's plan and billing state.
func (t *billingEventTx) SaveWorkspace(ctx context.Context, w billing.Workspace) error {
	_, err := t.tx.Exec(ctx, `UPDATE reliability_workspaces SET plan = $2, billing_status = $3,
stripe_customer_id = nullif($4, ''), stripe_subscription_id = nullif($5, ''), current_period_start = $6,
current_period_end = $7, subscription_event_at = $8, updated_at = now() WHERE organization_id = $1`,
		w.OrganizationID, w.Plan, w.Status, w.CustomerID, w.SubscriptionID, w.PeriodStart, w.PeriodEnd, w.SubscriptionEventAt)
	return err
}

// RecordEvent stores the applied event with its outcome.
func (t *billingEventTx) RecordEvent(ctx context.Context, e billing.Event, o billing.Outcome, org uuid.UUID) error {
	var orgID *uuid.UUID
	if org != uuid.Nil {
		orgID = &org
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO reliability_billing_events (event_id, event_type, organization_id, outcome, event_created_at, received_at)
VALUES ($1, $2, $3, $4, $5, now())`, e.ID, e.Type, orgID, string(o), e.Created)
	return err
}

func (t *billingEventTx) Commit(ctx context.Context) error   { return t.tx.Commit(ctx) }
func (t *billingEventTx) Rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }
