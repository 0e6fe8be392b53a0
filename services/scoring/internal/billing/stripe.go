package billing

import (
	"context"

	"github.com/trustlayer/trustlayer/pkg/stripebilling"
)

// StripeConfig configures the Stripe processor: the shared client's settings (pkg/stripebilling),
// with Configured and Validate as the service's SCORING_STRIPE_* variables name them.
type StripeConfig = stripebilling.Config

// Metadata keys set on every checkout session and its subscription, so that every event about them
// names the account.
const (
	MetadataAccountID = "account_id"
	MetadataKeyID     = "key_id"
)

// Stripe is the Processor backed by stripe-go, through pkg/stripebilling.
type Stripe struct {
	client *stripebilling.Client
}

// NewStripe returns the Stripe processor.
func NewStripe(cfg StripeConfig) *Stripe {
	return &Stripe{client: stripebilling.New(cfg)}
}

// CreateCheckout opens a hosted Checkout Session in subscription mode for the configured price. The
// account id travels as client_reference_id and as metadata of both the session and the
// subscription, so that checkout, subscription and invoice events all lead back to the account.
// A usage-based (metered) price takes no quantity; see the README's billing section.
func (s *Stripe) CreateCheckout(ctx context.Context, r CheckoutRequest) (Checkout, error) {
	meta := map[string]string{MetadataAccountID: r.AccountID}
	if r.KeyID != "" {
		meta[MetadataKeyID] = r.KeyID
	}
	sess, err := s.client.CreateCheckout(ctx, stripebilling.CheckoutRequest{
		ClientReferenceID: r.AccountID, Metadata: meta,
		SubscriptionMetadata: map[string]string{MetadataAccountID: r.AccountID},
		CustomerID:           r.CustomerID, Email: r.Email,
	})
	if err != nil {
		return Checkout{}, err
	}
	return Checkout{ID: sess.ID, URL: sess.URL, ExpiresAt: sess.ExpiresAt}, nil
}

// ParseEvent verifies a webhook delivery (stripebilling.Client.VerifyEvent: HMAC-SHA256 over
// "timestamp.payload", compared in constant time; the timestamp within Tolerance; stripe-go's API
// version) and reduces it to an Event.
func (s *Stripe) ParseEvent(payload []byte, signatureHeader string) (Event, error) {
	ev, err := s.client.VerifyEvent(payload, signatureHeader)
	if err != nil {
		return Event{}, err
	}
	e := Event{ID: ev.ID, Type: ev.Type, Created: ev.Created}
	if !handled(e.Type) {
		return e, nil
	}
	if err := readObject(&e, ev); err != nil {
		return Event{}, err
	}
	return e, nil
}

// readObject fills e from the event's data.object.
func readObject(e *Event, ev stripebilling.Event) error {
	switch e.Type {
	case EventCheckoutCompleted:
		cs, err := stripebilling.CheckoutSessionOf(ev)
		if err != nil {
			return err
		}
		e.AccountID = cs.ClientReferenceID
		if e.AccountID == "" {
			e.AccountID = cs.Metadata[MetadataAccountID]
		}
		e.CustomerID, e.CustomerEmail, e.SubscriptionID, e.PaymentSettled = cs.CustomerID, cs.CustomerEmail, cs.SubscriptionID, cs.Settled
	case EventSubscriptionCreated, EventSubscriptionUpdated, EventSubscriptionDeleted:
		sub, err := stripebilling.SubscriptionOf(ev)
		if err != nil {
			return err
		}
		e.SubscriptionID, e.SubscriptionStatus = sub.ID, sub.Status
		e.AccountID = sub.Metadata[MetadataAccountID]
		e.CancelAtPeriodEnd, e.CustomerID, e.CurrentPeriodEnd = sub.CancelAtPeriodEnd, sub.CustomerID, sub.CurrentPeriodEnd
	case EventInvoicePaid, EventInvoicePaymentFailed:
		inv, err := stripebilling.InvoiceOf(ev)
		if err != nil {
			return err
		}
		e.InvoiceID, e.CustomerID, e.SubscriptionID = inv.ID, inv.CustomerID, inv.SubscriptionID
		e.AccountID = inv.SubscriptionMetadata[MetadataAccountID]
	}
	return nil
}
