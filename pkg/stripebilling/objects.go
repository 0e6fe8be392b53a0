package stripebilling

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"
)

// Event types of a subscription's life (Stripe's names).
const (
	EventCheckoutCompleted    = "checkout.session.completed"
	EventSubscriptionCreated  = "customer.subscription.created"
	EventSubscriptionUpdated  = "customer.subscription.updated"
	EventSubscriptionDeleted  = "customer.subscription.deleted"
	EventInvoicePaid          = "invoice.paid"
	EventInvoicePaymentFailed = "invoice.payment_failed"
)

// CheckoutSession is what billing reads of a checkout.session object.
type CheckoutSession struct {
	ID                string
	ClientReferenceID string
	Metadata          map[string]string
	CustomerID        string
	// CustomerEmail is the e-mail the customer paid with (customer_details, else customer_email),
	// lower-cased.
	CustomerEmail  string
	SubscriptionID string
	// Settled is a completed checkout whose first payment is made (payment_status paid or
	// no_payment_required); an asynchronous payment leaves it false until invoice.paid.
	Settled bool
}

// CheckoutSessionOf decodes the data.object of a checkout.session event.
func CheckoutSessionOf(e Event) (CheckoutSession, error) {
	var cs stripe.CheckoutSession
	if err := decode(e, &cs); err != nil {
		return CheckoutSession{}, err
	}
	out := CheckoutSession{ID: cs.ID, ClientReferenceID: cs.ClientReferenceID, Metadata: cs.Metadata,
		CustomerEmail: NormalizeEmail(cs.CustomerEmail)}
	if cs.CustomerDetails != nil && cs.CustomerDetails.Email != "" {
		out.CustomerEmail = NormalizeEmail(cs.CustomerDetails.Email)
	}
	if cs.Customer != nil {
		out.CustomerID = cs.Customer.ID
	}
	if cs.Subscription != nil {
		out.SubscriptionID = cs.Subscription.ID
	}
	out.Settled = cs.Status == stripe.CheckoutSessionStatusComplete &&
		(cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusPaid || cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusNoPaymentRequired)
	return out, nil
}

// Subscription is what billing reads of a subscription object.
type Subscription struct {
	ID         string
	Status     string
	CustomerID string
	Metadata   map[string]string
	// CancelAtPeriodEnd is a subscription that ends when its current period does.
	CancelAtPeriodEnd bool
	// CurrentPeriodStart and CurrentPeriodEnd bound the billing period. Since API version
	// 2025-03-31 the period is per item; the subscription renews when its last item's period ends,
	// so these are the period of the item that ends last (nil without items).
	CurrentPeriodStart *time.Time
	CurrentPeriodEnd   *time.Time
}

// SubscriptionOf decodes the data.object of a customer.subscription event.
func SubscriptionOf(e Event) (Subscription, error) {
	var sub stripe.Subscription
	if err := decode(e, &sub); err != nil {
		return Subscription{}, err
	}
	out := Subscription{ID: sub.ID, Status: string(sub.Status), Metadata: sub.Metadata, CancelAtPeriodEnd: sub.CancelAtPeriodEnd}
	if sub.Customer != nil {
		out.CustomerID = sub.Customer.ID
	}
	var start, end int64
	if sub.Items != nil {
		for _, it := range sub.Items.Data {
			if it != nil && it.CurrentPeriodEnd > end {
				start, end = it.CurrentPeriodStart, it.CurrentPeriodEnd
			}
		}
	}
	if end > 0 {
		e := time.Unix(end, 0).UTC()
		out.CurrentPeriodEnd = &e
		if start > 0 {
			s := time.Unix(start, 0).UTC()
			out.CurrentPeriodStart = &s
		}
	}
	return out, nil
}

// Invoice is what billing reads of an invoice object.
type Invoice struct {
	ID         string
	CustomerID string
	// SubscriptionID and SubscriptionMetadata are those of the subscription the invoice bills
	// (parent.subscription_details), empty for another kind of invoice.
	SubscriptionID       string
	SubscriptionMetadata map[string]string
}

// InvoiceOf decodes the data.object of an invoice event.
func InvoiceOf(e Event) (Invoice, error) {
	var inv stripe.Invoice
	if err := decode(e, &inv); err != nil {
		return Invoice{}, err
	}
	out := Invoice{ID: inv.ID}
	if inv.Customer != nil {
		out.CustomerID = inv.Customer.ID
	}
	if p := inv.Parent; p != nil && p.SubscriptionDetails != nil {
		out.SubscriptionMetadata = p.SubscriptionDetails.Metadata
		if p.SubscriptionDetails.Subscription != nil {
			out.SubscriptionID = p.SubscriptionDetails.Subscription.ID
		}
	}
	return out, nil
}

// decode reads the event's object into v; ErrInvalidEvent when it is missing or not of that shape.
func decode(e Event, v any) error {
	if len(e.Object) == 0 {
		return fmt.Errorf("%w: %s event without an object", ErrInvalidEvent, e.Type)
	}
	if err := json.Unmarshal(e.Object, v); err != nil {
		return fmt.Errorf("%w: %s object: %v", ErrInvalidEvent, e.Type, err)
	}
	return nil
}

// NormalizeEmail trims and lower-cases an e-mail address.
func NormalizeEmail(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
