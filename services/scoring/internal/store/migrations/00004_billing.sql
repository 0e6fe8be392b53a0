-- +goose Up
-- An account's subscription at the payment processor (Stripe), as its webhooks last reported it. The
-- plan itself stays in accounts.plan: the scoring path reads only that, and billing changes it in the
-- same transaction as this row. One subscription per account: a new checkout after a cancellation
-- replaces the row's subscription.
CREATE TABLE billing_accounts (
    account_id             uuid PRIMARY KEY REFERENCES accounts (id),
    customer_id            text        NOT NULL DEFAULT '',
    customer_email         text        NOT NULL DEFAULT '',
    subscription_id        text        NOT NULL DEFAULT '',
    subscription_status    text        NOT NULL DEFAULT '',
    current_period_end     timestamptz,
    cancel_at_period_end   boolean     NOT NULL DEFAULT false,
    -- The creation time of the newest subscription event applied: Stripe does not deliver events in
    -- order, and an older state must not overwrite a newer one.
    subscription_event_at  timestamptz,
    last_payment_result    text        NOT NULL DEFAULT '' CHECK (last_payment_result IN ('', 'succeeded', 'failed')),
    last_payment_at        timestamptz,
    last_invoice_id        text        NOT NULL DEFAULT '',
    updated_at             timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX billing_accounts_customer ON billing_accounts (customer_id) WHERE customer_id <> '';
CREATE INDEX billing_accounts_subscription ON billing_accounts (subscription_id) WHERE subscription_id <> '';
CREATE INDEX billing_accounts_email ON billing_accounts (lower(customer_email)) WHERE customer_email <> '';

-- Every webhook event applied, by the processor's event id: a redelivery (Stripe retries for days, and
-- may send an event twice) finds its id here and changes nothing. The row commits in the same
-- transaction as the event's effect, so an event is applied exactly once. Kept as the audit trail of
-- plan changes (a few rows per customer per month).
CREATE TABLE billing_events (
    event_id    text PRIMARY KEY,
    event_type  text        NOT NULL,
    account_id  uuid,
    outcome     text        NOT NULL,
    created_at  timestamptz NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX billing_events_account ON billing_events (account_id, received_at) WHERE account_id IS NOT NULL;

-- +goose Down
DROP TABLE billing_events, billing_accounts;
