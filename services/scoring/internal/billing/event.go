package billing

import (
	"time"
)

// Event types the service acts on (Stripe's names). customer.subscription.created is handled like
// updated: Stripe may deliver it, or an update, before checkout.session.completed.
const (
	EventCheckoutCompleted       = "checkout.session.completed"
	EventSubscriptionCreated     = "customer.subscription.created"
	EventSubscriptionUpdated     = "customer.subscription.updated"
	EventSubscriptionDeleted     = "customer.subscription.deleted"
	EventInvoicePaid             = "invoice.paid"
	EventInvoicePaymentFailed    = "invoice.payment_failed"
	paymentSucceeded             = "succeeded"
	paymentFailed                = "failed"
	subscriptionStatusActive     = "active"
	subscriptionStatusCanceled   = "canceled"
	subscriptionStatusIncomplete = "incomplete"
)

func handled(eventType string) bool {
	switch eventType {
	case EventCheckoutCompleted, EventSubscriptionCreated, EventSubscriptionUpdated, EventSubscriptionDeleted,
		EventInvoicePaid, EventInvoicePaymentFailed:
		return true
	}
	return false
}

// Event is a verified webhook event, reduced to what billing reads. AccountID comes from the
// checkout's client_reference_id or the subscription's metadata (both set when the checkout was
// opened); when it is empty or unknown the store falls back to SubscriptionID, then CustomerID.
type Event struct {
	ID      string
	Type    string
	Created time.Time

	AccountID      string
	CustomerID     string
	CustomerEmail  string
	SubscriptionID string

	// Checkout: PaymentSettled is a completed checkout whose first payment is made (payment_status
	// paid or no_payment_required); an asynchronous payment leaves it false until invoice.paid.
	PaymentSettled bool

	// Subscription events.
	SubscriptionStatus string
	CurrentPeriodEnd   *time.Time
	CancelAtPeriodEnd  bool

	// Invoice events.
	InvoiceID string
}

// Outcome is what applying an event did.
type Outcome string

// Outcomes, answered in the webhook's body and stored with the event id.
const (
	OutcomeUpgraded          Outcome = "upgraded"
	OutcomeDowngraded        Outcome = "downgraded"
	OutcomeRecorded          Outcome = "recorded"
	OutcomeDuplicate         Outcome = "duplicate"
	OutcomeIgnored           Outcome = "ignored"
	OutcomeOutOfOrder        Outcome = "out_of_order"
	OutcomeOtherSubscription Outcome = "other_subscription"
	OutcomeUnknownAccount    Outcome = "unknown_account"
)

// Applied is the result of one webhook event.
type Applied struct {
	EventID    string
	AccountID  string
	Outcome    Outcome
	PlanBefore string
	PlanAfter  string
}

// Apply changes acct as event e says, and returns what it did. It is the whole of billing's rules:
//
//   - checkout.session.completed records the customer and subscription and, when the first payment
//     is settled, moves a trial account to paid;
//   - subscription events record status, renewal date (current_period_end) and cancel_at_period_end,
//     unless an event created later was applied already (Stripe does not order deliveries) or the
//     event is about a subscription other than the account's live one; active and trialing keep or
//     make the account paid, past_due keeps the plan (the processor is retrying the payment), and
//     canceled, unpaid, incomplete_expired and paused return a paid account to trial;
//   - invoice.paid records a successful payment and makes a trial account paid unless its
//     subscription is over; invoice.payment_failed records the failure and leaves the plan (the
//     subscription events that follow decide it).
//
// Only trial and paid accounts change plan; commit and internal accounts are left to operators.
func Apply(acct *Account, e Event) Outcome {
	b := &acct.Billing
	if e.CustomerID != "" {
		b.CustomerID = e.CustomerID
	}
	if e.CustomerEmail != "" {
		b.CustomerEmail = e.CustomerEmail
		if acct.Email == "" {
			acct.Email = e.CustomerEmail
		}
	}
	switch e.Type {
	case EventCheckoutCompleted:
		if e.SubscriptionID != "" && e.SubscriptionID != b.SubscriptionID {
			// A new subscription (a first checkout, or one after a cancellation) replaces the old
			// one's state.
			b.SubscriptionID, b.SubscriptionStatus, b.SubscriptionEventAt = e.SubscriptionID, subscriptionStatusIncomplete, nil
			b.CurrentPeriodEnd, b.CancelAtPeriodEnd = nil, false
			if e.PaymentSettled {
				b.SubscriptionStatus = subscriptionStatusActive
			}
		}
		if e.PaymentSettled {
			return setPlan(acct, PlanPaid)
		}
		return OutcomeRecorded

	case EventSubscriptionCreated, EventSubscriptionUpdated, EventSubscriptionDeleted:
		if !live(b, e.SubscriptionID) {
			return OutcomeOtherSubscription
		}
		if b.SubscriptionID == e.SubscriptionID {
			if b.SubscriptionEventAt != nil && e.Created.Before(*b.SubscriptionEventAt) {
				return OutcomeOutOfOrder
			}
			// A canceled subscription is final at the processor: no later event revives it.
			if b.SubscriptionStatus == subscriptionStatusCanceled && e.Type != EventSubscriptionDeleted {
				return OutcomeOutOfOrder
			}
		}
		status := e.SubscriptionStatus
		if e.Type == EventSubscriptionDeleted {
			status = subscriptionStatusCanceled
		}
		created := e.Created
		b.SubscriptionID, b.SubscriptionStatus, b.SubscriptionEventAt = e.SubscriptionID, status, &created
		b.CurrentPeriodEnd, b.CancelAtPeriodEnd = e.CurrentPeriodEnd, e.CancelAtPeriodEnd
		switch planForStatus(status) {
		case PlanPaid:
			return setPlan(acct, PlanPaid)
		case PlanTrial:
			return setPlan(acct, PlanTrial)
		}
		return OutcomeRecorded

	case EventInvoicePaid, EventInvoicePaymentFailed:
		if e.SubscriptionID != "" && !live(b, e.SubscriptionID) {
			return OutcomeOtherSubscription
		}
		if b.LastPaymentAt != nil && e.Created.Before(*b.LastPaymentAt) {
			return OutcomeOutOfOrder
		}
		if b.SubscriptionID == "" {
			b.SubscriptionID = e.SubscriptionID
		}
		created := e.Created
		b.LastPaymentAt, b.LastInvoiceID = &created, e.InvoiceID
		if e.Type == EventInvoicePaymentFailed {
			b.LastPaymentResult = paymentFailed
			return OutcomeRecorded
		}
		b.LastPaymentResult = paymentSucceeded
		if planForStatus(b.SubscriptionStatus) == PlanTrial {
			return OutcomeRecorded
		}
		return setPlan(acct, PlanPaid)
	}
	return OutcomeIgnored
}

// live reports whether subscriptionID may change the account: it is the account's subscription, or
// the account has none that is still running.
func live(b *Billing, subscriptionID string) bool {
	return b.SubscriptionID == "" || b.SubscriptionID == subscriptionID || planForStatus(b.SubscriptionStatus) == PlanTrial
}

// planForStatus maps a Stripe subscription status to the plan it entitles: PlanPaid, PlanTrial, or ""
// for a status that leaves the plan as it is (incomplete: the first payment is pending; past_due:
// Stripe retries the payment and the customer keeps service meanwhile).
func planForStatus(status string) string {
	switch status {
	case "active", "trialing":
		return PlanPaid
	case "canceled", "unpaid", "incomplete_expired", "paused":
		return PlanTrial
	}
	return ""
}

// setPlan moves a trial or paid account to plan.
func setPlan(acct *Account, plan string) Outcome {
	if acct.Plan == plan || (acct.Plan != PlanTrial && acct.Plan != PlanPaid) {
		return OutcomeRecorded
	}
	acct.Plan = plan
	if plan == PlanPaid {
		return OutcomeUpgraded
	}
	return OutcomeDowngraded
}
