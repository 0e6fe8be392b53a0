package store

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/trustlayer/trustlayer/services/scoring/internal/billing"
	"github.com/trustlayer/trustlayer/services/scoring/internal/fault"
)

// An account with its billing row, which exists only once the processor reported something about it.
const billingAccountSelect = `
SELECT a.id, coalesce(a.email, ''), a.plan, coalesce(b.customer_id, ''), coalesce(b.customer_email, ''),
       coalesce(b.subscription_id, ''), coalesce(b.subscription_status, ''), b.current_period_end,
       coalesce(b.cancel_at_period_end, false), b.subscription_event_at, coalesce(b.last_payment_result, ''),
       b.last_payment_at, coalesce(b.last_invoice_id, '')
FROM accounts a LEFT JOIN billing_accounts b ON b.account_id = a.id`

func scanBillingAccount(row pgx.Row) (billing.Account, error) {
	var a billing.Account
	err := row.Scan(&a.ID, &a.Email, &a.Plan, &a.CustomerID, &a.CustomerEmail, &a.SubscriptionID, &a.SubscriptionStatus,
		&a.CurrentPeriodEnd, &a.CancelAtPeriodEnd, &a.SubscriptionEventAt, &a.LastPaymentResult, &a.LastPaymentAt, &a.LastInvoiceID)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, fault.ErrNotFound
	}
	return a, err
}

// BillingAccount returns an account with its billing state.
func (s *Store) BillingAccount(ctx context.Context, accountID string) (billing.Account, error) {
	if uuid.Validate(accountID) != nil {
		return billing.Account{}, fault.ErrNotFound
	}
	return scanBillingAccount(s.pool.QueryRow(ctx, billingAccountSelect+` WHERE a.id = $1`, accountID))
}

// BillingAccountByEmail returns the account whose e-mail is email (lower case) or, when none is, the
// account most recently paid for by a customer with that e-mail (a trial account stays anonymous
// when its checkout e-mail already belongs to another account).
func (s *Store) BillingAccountByEmail(ctx context.Context, email string) (billing.Account, error) {
	a, err := scanBillingAccount(s.pool.QueryRow(ctx, billingAccountSelect+` WHERE a.email = $1`, email))
	if !errors.Is(err, fault.ErrNotFound) {
		return a, err
	}
	return scanBillingAccount(s.pool.QueryRow(ctx, billingAccountSelect+`
WHERE lower(b.customer_email) = $1 ORDER BY b.updated_at DESC LIMIT 1`, email))
}

// BeginEvent starts the transaction of one webhook event (billing.EventTx).
func (s *Store) BeginEvent(ctx context.Context) (billing.EventTx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return eventTx{tx}, nil
}

// eventTx is the SQL of billing.EventTx. The event's row, inserted first, is what makes a
// redelivery a duplicate: its primary key holds a concurrent delivery of the same event until the
// first one's transaction ends.
type eventTx struct{ pgx.Tx }

func (tx eventTx) RecordEvent(ctx context.Context, e billing.Event) (bool, error) {
	tag, err := tx.Exec(ctx, `
INSERT INTO billing_events (event_id, event_type, outcome, created_at) VALUES ($1, $2, 'pending', $3)
ON CONFLICT (event_id) DO NOTHING`, e.ID, e.Type, e.Created)
	return tag.RowsAffected() == 1, err
}

func (tx eventTx) SetPlan(ctx context.Context, accountID, plan string) error {
	_, err := tx.Exec(ctx, `UPDATE accounts SET plan = $2, updated_at = now() WHERE id = $1`, accountID, plan)
	return err
}

func (tx eventTx) NameAccount(ctx context.Context, accountID, email string) error {
	_, err := tx.Exec(ctx, `
UPDATE accounts SET email = $2, updated_at = now()
WHERE id = $1 AND email IS NULL AND NOT EXISTS (SELECT 1 FROM accounts WHERE email = $2)`, accountID, email)
	return err
}

func (tx eventTx) SaveBilling(ctx context.Context, accountID string, b billing.Billing) error {
	_, err := tx.Exec(ctx, `
INSERT INTO billing_accounts (account_id, customer_id, customer_email, subscription_id, subscription_status,
    current_period_end, cancel_at_period_end, subscription_event_at, last_payment_result, last_payment_at, last_invoice_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (account_id) DO UPDATE SET
    customer_id = EXCLUDED.customer_id, customer_email = EXCLUDED.customer_email,
    subscription_id = EXCLUDED.subscription_id, subscription_status = EXCLUDED.subscription_status,
    current_period_end = EXCLUDED.current_period_end, cancel_at_period_end = EXCLUDED.cancel_at_period_end,
    subscription_event_at = EXCLUDED.subscription_event_at, last_payment_result = EXCLUDED.last_payment_result,
    last_payment_at = EXCLUDED.last_payment_at, last_invoice_id = EXCLUDED.last_invoice_id, updated_at = now()`,
		accountID, b.CustomerID, b.CustomerEmail, b.SubscriptionID, b.SubscriptionStatus, b.CurrentPeriodEnd,
		b.CancelAtPeriodEnd, b.SubscriptionEventAt, b.LastPaymentResult, b.LastPaymentAt, b.LastInvoiceID)
	return err
}

func (tx eventTx) SetEventOutcome(ctx context.Context, eventID string, o billing.Outcome, accountID string) error {
	_, err := tx.Exec(ctx, `UPDATE billing_events SET outcome = $2, account_id = nullif($3, '')::uuid WHERE event_id = $1`,
		eventID, string(o), accountID)
	return err
}

// LockEventAccount finds and locks the event's account: by the account id the checkout put in the
// event, else by the subscription, else by the customer the account paid with.
func (tx eventTx) LockEventAccount(ctx context.Context, e billing.Event) (billing.Account, error) {
	if uuid.Validate(e.AccountID) == nil {
		a, err := scanBillingAccount(tx.QueryRow(ctx, billingAccountSelect+` WHERE a.id = $1 FOR UPDATE OF a`, e.AccountID))
		if !errors.Is(err, fault.ErrNotFound) {
			return a, err
		}
	}
	if e.SubscriptionID != "" {
		a, err := scanBillingAccount(tx.QueryRow(ctx, billingAccountSelect+`
WHERE b.subscription_id = $1 ORDER BY b.updated_at DESC LIMIT 1 FOR UPDATE OF a`, e.SubscriptionID))
		if !errors.Is(err, fault.ErrNotFound) {
			return a, err
		}
	}
	if e.CustomerID != "" {
		return scanBillingAccount(tx.QueryRow(ctx, billingAccountSelect+`
WHERE b.customer_id = $1 ORDER BY b.updated_at DESC LIMIT 1 FOR UPDATE OF a`, e.CustomerID))
	}
	return billing.Account{}, fault.ErrNotFound
}
