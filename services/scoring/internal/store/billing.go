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

// ApplyEvent applies a webhook event once (billing.Store): the event id, the account's plan and
// its billing row commit together, so a delivery that fails half-way is retried whole by the
// processor, and one that succeeded is a duplicate on every redelivery. The account row is locked
// for the transaction, so that concurrent events of one account apply one after the other.
func (s *Store) ApplyEvent(ctx context.Context, e billing.Event, apply func(*billing.Account) billing.Outcome) (billing.Applied, error) {
	out := billing.Applied{EventID: e.ID}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// A concurrent delivery of the same event waits here on the primary key until this one ends.
		tag, err := tx.Exec(ctx, `
INSERT INTO billing_events (event_id, event_type, outcome, created_at) VALUES ($1, $2, 'pending', $3)
ON CONFLICT (event_id) DO NOTHING`, e.ID, e.Type, e.Created)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			out.Outcome = billing.OutcomeDuplicate
			return nil
		}
		acct, err := eventAccount(ctx, tx, e)
		if errors.Is(err, fault.ErrNotFound) {
			out.Outcome = billing.OutcomeUnknownAccount
			_, err = tx.Exec(ctx, `UPDATE billing_events SET outcome = $2 WHERE event_id = $1`, e.ID, string(out.Outcome))
			return err
		}
		if err != nil {
			return err
		}
		before := acct
		out.AccountID, out.PlanBefore = acct.ID, acct.Plan
		out.Outcome = apply(&acct)
		out.PlanAfter = acct.Plan
		if acct.Plan != before.Plan {
			if _, err := tx.Exec(ctx, `UPDATE accounts SET plan = $2, updated_at = now() WHERE id = $1`, acct.ID, acct.Plan); err != nil {
				return err
			}
		}
		if acct.Email != before.Email && before.Email == "" {
			// The checkout's e-mail names an anonymous trial account, unless another account has it.
			if _, err := tx.Exec(ctx, `
UPDATE accounts SET email = $2, updated_at = now()
WHERE id = $1 AND email IS NULL AND NOT EXISTS (SELECT 1 FROM accounts WHERE email = $2)`, acct.ID, acct.Email); err != nil {
				return err
			}
		}
		b := acct.Billing
		if _, err := tx.Exec(ctx, `
INSERT INTO billing_accounts (account_id, customer_id, customer_email, subscription_id, subscription_status,
    current_period_end, cancel_at_period_end, subscription_event_at, last_payment_result, last_payment_at, last_invoice_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (account_id) DO UPDATE SET
    customer_id = EXCLUDED.customer_id, customer_email = EXCLUDED.customer_email,
    subscription_id = EXCLUDED.subscription_id, subscription_status = EXCLUDED.subscription_status,
    current_period_end = EXCLUDED.current_period_end, cancel_at_period_end = EXCLUDED.cancel_at_period_end,
    subscription_event_at = EXCLUDED.subscription_event_at, last_payment_result = EXCLUDED.last_payment_result,
    last_payment_at = EXCLUDED.last_payment_at, last_invoice_id = EXCLUDED.last_invoice_id, updated_at = now()`,
			acct.ID, b.CustomerID, b.CustomerEmail, b.SubscriptionID, b.SubscriptionStatus, b.CurrentPeriodEnd,
			b.CancelAtPeriodEnd, b.SubscriptionEventAt, b.LastPaymentResult, b.LastPaymentAt, b.LastInvoiceID); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE billing_events SET outcome = $2, account_id = $3 WHERE event_id = $1`, e.ID, string(out.Outcome), acct.ID)
		return err
	})
	if err != nil {
		return billing.Applied{}, err
	}
	return out, nil
}

// eventAccount finds and locks the event's account: by the account id the checkout put in the
// event, else by the subscription, else by the customer the account paid with.
func eventAccount(ctx context.Context, tx pgx.Tx, e billing.Event) (billing.Account, error) {
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
