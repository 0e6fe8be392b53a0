package billing

import (
	"context"
	"errors"

	"github.com/trustlayer/trustlayer/pkg/stripebilling"
)

// MetadataOrganizationID is the metadata key set on every checkout session and its subscription,
// so that every event about them names the workspace.
const MetadataOrganizationID = "organization_id"

// Stripe is the Processor backed by pkg/stripebilling: a checkout subscribes to the configured
// price of the team plan, quantity 1.
type Stripe struct{ client *stripebilling.Client }

// NewStripe returns the Stripe processor.
func NewStripe(client *stripebilling.Client) *Stripe { return &Stripe{client: client} }

// CreateCheckout opens a hosted checkout of the team plan. The organization travels as
// client_reference_id and as metadata of both the session and the subscription.
func (s *Stripe) CreateCheckout(ctx context.Context, r CheckoutRequest) (Checkout, error) {
	org := r.OrganizationID.String()
	meta := map[string]string{MetadataOrganizationID: org}
	sess, err := s.client.CreateCheckout(ctx, stripebilling.CheckoutRequest{
		ClientReferenceID: org, Metadata: meta, SubscriptionMetadata: meta, Quantity: 1, CustomerID: r.CustomerID,
	})
	if errors.Is(err, stripebilling.ErrProcessor) {
		return Checkout{}, ErrProcessor
	}
	if err != nil {
		return Checkout{}, err
	}
	return Checkout{ID: sess.ID, URL: sess.URL, Plan: PlanTeam, ExpiresAt: sess.ExpiresAt}, nil
}

// ParseEvent verifies a webhook delivery and reduces the events billing acts on to an Event.
func (s *Stripe) ParseEvent(payload []byte, signatureHeader string) (Event, error) {
	ev, err := s.client.VerifyEvent(payload, signatureHeader)
	switch {
	case errors.Is(err, stripebilling.ErrStale):
		return Event{}, ErrStale
	case errors.Is(err, stripebilling.ErrSignature):
		return Event{}, ErrSignature
	case err != nil:
		return Event{}, ErrInvalidEvent
	}
	e := Event{ID: ev.ID, Type: ev.Type, Created: ev.Created}
	switch ev.Type {
	case EventCheckoutCompleted:
		cs, err := stripebilling.CheckoutSessionOf(ev)
		if err != nil {
			return Event{}, ErrInvalidEvent
		}
		e.OrganizationID = cs.ClientReferenceID
		if e.OrganizationID == "" {
			e.OrganizationID = cs.Metadata[MetadataOrganizationID]
		}
		e.CustomerID, e.SubscriptionID, e.Settled = cs.CustomerID, cs.SubscriptionID, cs.Settled
	case EventSubscriptionCreated, EventSubscriptionUpdated, EventSubscriptionDeleted:
		sub, err := stripebilling.SubscriptionOf(ev)
		if err != nil {
			return Event{}, ErrInvalidEvent
		}
		e.OrganizationID = sub.Metadata[MetadataOrganizationID]
		e.CustomerID, e.SubscriptionID, e.SubscriptionStatus = sub.CustomerID, sub.ID, sub.Status
		e.PeriodStart, e.PeriodEnd = sub.CurrentPeriodStart, sub.CurrentPeriodEnd
		if e.SubscriptionID == "" {
			return Event{}, ErrInvalidEvent
		}
	}
	return e, nil
}
