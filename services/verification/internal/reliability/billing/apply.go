package billing

import (
	"time"

	"github.com/google/uuid"
)

// Event types the service acts on (Stripe's names). customer.subscription.created is handled like
// updated: the processor may deliver it, or an update, before checkout.session.completed.
const (
	EventCheckoutCompleted   = "checkout.session.completed"
	EventSubscriptionCreated = "customer.subscription.created"
	EventSubscriptionUpdated = "customer.subscription.updated"
	EventSubscriptionDeleted = "customer.subscription.deleted"
)

// Handled reports whether the service acts on events of this type.
func Handled(eventType string) bool {
	switch eventType {
	case EventCheckoutCompleted, EventSubscriptionCreated, EventSubscriptionUpdated, EventSubscriptionDeleted:
		return true
	}
	return false
}

// Event is a verified webhook event, reduced to what billing reads. OrganizationID comes from the
// checkout's client_reference_id or the metadata organization_id of the session or subscription
// (both set when the checkout was opened); when it is empty or names no organization the store
// falls back to SubscriptionID, then CustomerID.
type Event struct {
	ID      string
	Type    string
	Created time.Time

	OrganizationID string
	CustomerID     string
	SubscriptionID string

	// Settled is a completed checkout whose first payment is made.
	Settled bool

	// Subscription events: Stripe's status and the current billing period.
	SubscriptionStatus string
	PeriodStart        *time.Time
	PeriodEnd          *time.Time
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
	OutcomeUnknownWorkspace  Outcome = "unknown_workspace"
)

// Applied is the result of one webhook event.
type Applied struct {
	EventID        string
	OrganizationID uuid.UUID
	Outcome        Outcome
	PlanBefore     string
	PlanAfter      string
}

// Apply changes w as event e says, and returns what it did. It is the whole of billing's rules:
//
//   - checkout.session.completed records the customer and the subscription and, when the first
//     payment is settled, moves a free workspace to team (status active); an unsettled payment
//     leaves the plan and the status checkout_pending until a subscription event says more;
//   - subscription events record Stripe's status and the billing period, unless an event created
//     later was applied already (Stripe does not order deliveries), the subscription is canceled
//     already (final at Stripe), or the event is about a subscription other than the workspace's
//     running one: active and trialing make the workspace team (active); past_due keeps the plan
//     (Stripe retries the payment, the team keeps its limits meanwhile); canceled, unpaid,
//     incomplete_expired, paused and a deleted subscription return it to free (canceled); incomplete
//     leaves it (checkout_pending).
//
// An enterprise workspace is managed by an operator: its status is recorded, its plan never changes here.
func Apply(w *Workspace, e Event) Outcome {
	if e.CustomerID != "" {
		w.CustomerID = e.CustomerID
	}
	switch e.Type {
	case EventCheckoutCompleted:
		if e.SubscriptionID != "" && e.SubscriptionID != w.SubscriptionID {
			// A new subscription (a first checkout, or one after a cancellation) replaces the old one.
			w.SubscriptionID, w.SubscriptionEventAt, w.PeriodStart, w.PeriodEnd = e.SubscriptionID, nil, nil, nil
		}
		if !e.Settled {
			w.Status = StatusCheckoutPending
			return OutcomeRecorded
		}
		w.Status = StatusActive
		return setPlan(w, PlanTeam)

	case EventSubscriptionCreated, EventSubscriptionUpdated, EventSubscriptionDeleted:
		if w.SubscriptionID != "" && w.SubscriptionID != e.SubscriptionID && running(w.Status) {
			return OutcomeOtherSubscription
		}
		if w.SubscriptionID == e.SubscriptionID {
			if w.SubscriptionEventAt != nil && e.Created.Before(*w.SubscriptionEventAt) {
				return OutcomeOutOfOrder
			}
			if w.Status == StatusCanceled && w.SubscriptionEventAt != nil && e.Type != EventSubscriptionDeleted {
				return OutcomeOutOfOrder
			}
		}
		created := e.Created
		w.SubscriptionID, w.SubscriptionEventAt = e.SubscriptionID, &created
		w.PeriodStart, w.PeriodEnd = e.PeriodStart, e.PeriodEnd
		status := e.SubscriptionStatus
		if e.Type == EventSubscriptionDeleted {
			status = "canceled"
		}
		switch status {
		case "active", "trialing":
			w.Status = StatusActive
			return setPlan(w, PlanTeam)
		case "past_due":
			w.Status = StatusPastDue
			return OutcomeRecorded
		case "canceled", "unpaid", "incomplete_expired", "paused":
			w.Status = StatusCanceled
			return setPlan(w, PlanFree)
		}
		w.Status = StatusCheckoutPending
		return OutcomeRecorded
	}
	return OutcomeIgnored
}

// running reports whether a billing status is that of a subscription still in force.
func running(status string) bool { return status == StatusActive || status == StatusPastDue }

// setPlan moves a free or team workspace to plan.
func setPlan(w *Workspace, plan string) Outcome {
	if w.Plan == plan || w.Plan == PlanEnterprise {
		return OutcomeRecorded
	}
	w.Plan = plan
	if plan == PlanTeam {
		return OutcomeUpgraded
	}
	return OutcomeDowngraded
}
