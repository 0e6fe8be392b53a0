package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v85"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/trustlayer/trustlayer/pkg/config"
)

// StripeConfig configures the Stripe processor.
type StripeConfig struct {
	// SecretKey authenticates API calls (sk_... or a restricted rk_... key that may write Checkout
	// Sessions).
	SecretKey string
	// WebhookSecret (whsec_...) verifies the Stripe-Signature header of webhook deliveries.
	WebhookSecret string
	// PriceID is the recurring price a checkout subscribes the account to.
	PriceID string
	// APIBase replaces https://api.stripe.com (stripe-mock, or a test's loopback server). Empty is Stripe.
	APIBase string
	// SuccessURL and CancelURL are where the hosted checkout sends the customer back.
	SuccessURL string
	CancelURL  string
	// Tolerance is how old a webhook's signed timestamp may be (default webhook.DefaultTolerance, 5
	// minutes, Stripe's own recommendation): an older, validly signed delivery is a replay.
	Tolerance time.Duration
	// Log receives stripe-go's own messages (at debug) and failed calls.
	Log *slog.Logger
}

// Metadata keys set on every checkout session and its subscription, so that every event about them
// names the account.
const (
	MetadataAccountID = "account_id"
	MetadataKeyID     = "key_id"
)

// Stripe is the Processor backed by stripe-go.
type Stripe struct {
	client *stripe.Client
	cfg    StripeConfig
}

// stripeTimeout bounds one API call; stripe-go retries a failed call twice (with an idempotency key),
// so a checkout request waits at most about three times this.
const stripeTimeout = 20 * time.Second

// NewStripe returns the Stripe processor.
func NewStripe(cfg StripeConfig) *Stripe {
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = webhook.DefaultTolerance
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	bc := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Timeout: stripeTimeout},
		LeveledLogger:     stripeLogger{cfg.Log},
		MaxNetworkRetries: stripe.Int64(2),
	}
	if cfg.APIBase != "" {
		bc.URL = stripe.String(cfg.APIBase)
	}
	return &Stripe{client: stripe.NewClient(cfg.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(bc))), cfg: cfg}
}

// CreateCheckout opens a hosted Checkout Session in subscription mode for the configured price. The
// account id travels as client_reference_id and as metadata of both the session and the
// subscription, so that checkout, subscription and invoice events all lead back to the account.
func (s *Stripe) CreateCheckout(ctx context.Context, r CheckoutRequest) (Checkout, error) {
	meta := map[string]string{MetadataAccountID: r.AccountID}
	if r.KeyID != "" {
		meta[MetadataKeyID] = r.KeyID
	}
	params := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		ClientReferenceID: stripe.String(r.AccountID),
		Metadata:          meta,
		// A usage-based (metered) price takes no quantity; see the README's billing section.
		LineItems:        []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String(s.cfg.PriceID)}},
		SubscriptionData: &stripe.CheckoutSessionCreateSubscriptionDataParams{Metadata: map[string]string{MetadataAccountID: r.AccountID}},
		SuccessURL:       stripe.String(s.cfg.SuccessURL),
		CancelURL:        stripe.String(s.cfg.CancelURL),
	}
	switch {
	case r.CustomerID != "":
		params.Customer = stripe.String(r.CustomerID)
	case r.Email != "":
		params.CustomerEmail = stripe.String(r.Email)
	}
	sess, err := s.client.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return Checkout{}, ctx.Err()
		}
		attrs := []any{"account_id", r.AccountID, "error", err.Error()}
		var se *stripe.Error
		if errors.As(err, &se) {
			attrs = append(attrs, "stripe_status", se.HTTPStatusCode, "stripe_code", string(se.Code), "stripe_request_id", se.RequestID)
		}
		s.cfg.Log.ErrorContext(ctx, "billing: stripe checkout session failed", attrs...)
		return Checkout{}, ErrProcessor
	}
	if sess.URL == "" || sess.ID == "" {
		s.cfg.Log.ErrorContext(ctx, "billing: stripe checkout session without id or url", "account_id", r.AccountID)
		return Checkout{}, ErrProcessor
	}
	return Checkout{ID: sess.ID, URL: sess.URL, ExpiresAt: time.Unix(sess.ExpiresAt, 0).UTC()}, nil
}

// ParseEvent verifies a webhook delivery with stripe-go (HMAC-SHA256 over "timestamp.payload",
// compared in constant time; the timestamp within Tolerance) and reduces it to an Event. The event's
// API version must be of stripe-go's release train (stripe.APIVersion): objects of another version
// could be read wrongly, so such events are refused rather than guessed at.
func (s *Stripe) ParseEvent(payload []byte, signatureHeader string) (Event, error) {
	ev, err := webhook.ConstructEventWithOptions(payload, signatureHeader, s.cfg.WebhookSecret,
		webhook.ConstructEventOptions{Tolerance: s.cfg.Tolerance})
	switch {
	case errors.Is(err, webhook.ErrTooOld):
		return Event{}, ErrStale
	case errors.Is(err, webhook.ErrNotSigned), errors.Is(err, webhook.ErrInvalidHeader), errors.Is(err, webhook.ErrNoValidSignature):
		return Event{}, ErrSignature
	case err != nil:
		return Event{}, fmt.Errorf("%w: not a Stripe event of API version %s", ErrInvalidEvent, stripe.APIVersion)
	}
	e := Event{ID: ev.ID, Type: string(ev.Type), Created: time.Unix(ev.Created, 0).UTC()}
	if e.ID == "" {
		return Event{}, fmt.Errorf("%w: event has no id", ErrInvalidEvent)
	}
	if !handled(e.Type) || ev.Data == nil {
		return e, nil
	}
	if err := readObject(&e, ev.Data.Raw); err != nil {
		return Event{}, fmt.Errorf("%w: %s object: %v", ErrInvalidEvent, e.Type, err)
	}
	return e, nil
}

// readObject fills e from the event's data.object.
func readObject(e *Event, raw json.RawMessage) error {
	switch e.Type {
	case EventCheckoutCompleted:
		var cs stripe.CheckoutSession
		if err := json.Unmarshal(raw, &cs); err != nil {
			return err
		}
		e.AccountID = cs.ClientReferenceID
		if e.AccountID == "" {
			e.AccountID = cs.Metadata[MetadataAccountID]
		}
		if cs.Customer != nil {
			e.CustomerID = cs.Customer.ID
		}
		e.CustomerEmail = normalizeEmail(cs.CustomerEmail)
		if cs.CustomerDetails != nil && cs.CustomerDetails.Email != "" {
			e.CustomerEmail = normalizeEmail(cs.CustomerDetails.Email)
		}
		if cs.Subscription != nil {
			e.SubscriptionID = cs.Subscription.ID
		}
		e.PaymentSettled = cs.Status == stripe.CheckoutSessionStatusComplete &&
			(cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusPaid || cs.PaymentStatus == stripe.CheckoutSessionPaymentStatusNoPaymentRequired)
	case EventSubscriptionCreated, EventSubscriptionUpdated, EventSubscriptionDeleted:
		var sub stripe.Subscription
		if err := json.Unmarshal(raw, &sub); err != nil {
			return err
		}
		e.SubscriptionID, e.SubscriptionStatus = sub.ID, string(sub.Status)
		e.AccountID = sub.Metadata[MetadataAccountID]
		e.CancelAtPeriodEnd = sub.CancelAtPeriodEnd
		if sub.Customer != nil {
			e.CustomerID = sub.Customer.ID
		}
		// Since API version 2025-03-31 the billing period is per item; the subscription renews when
		// its last item's period ends.
		var end int64
		if sub.Items != nil {
			for _, it := range sub.Items.Data {
				if it != nil && it.CurrentPeriodEnd > end {
					end = it.CurrentPeriodEnd
				}
			}
		}
		if end > 0 {
			t := time.Unix(end, 0).UTC()
			e.CurrentPeriodEnd = &t
		}
	case EventInvoicePaid, EventInvoicePaymentFailed:
		var inv stripe.Invoice
		if err := json.Unmarshal(raw, &inv); err != nil {
			return err
		}
		e.InvoiceID = inv.ID
		if inv.Customer != nil {
			e.CustomerID = inv.Customer.ID
		}
		if p := inv.Parent; p != nil && p.SubscriptionDetails != nil {
			e.AccountID = p.SubscriptionDetails.Metadata[MetadataAccountID]
			if p.SubscriptionDetails.Subscription != nil {
				e.SubscriptionID = p.SubscriptionDetails.Subscription.ID
			}
		}
	}
	return nil
}

// stripeLogger passes stripe-go's messages to slog. Its informational lines (one per request) go to
// debug; its errors to warn, because the caller logs the failure it returns with context.
type stripeLogger struct{ log *slog.Logger }

func (l stripeLogger) Debugf(format string, v ...any) {
	l.log.Debug("stripe: " + fmt.Sprintf(format, v...))
}
func (l stripeLogger) Infof(format string, v ...any) {
	l.log.Debug("stripe: " + fmt.Sprintf(format, v...))
}
func (l stripeLogger) Warnf(format string, v ...any) {
	l.log.Warn("stripe: " + fmt.Sprintf(format, v...))
}
func (l stripeLogger) Errorf(format string, v ...any) {
	l.log.Warn("stripe: " + fmt.Sprintf(format, v...))
}

// Configured reports whether any Stripe setting is set: billing is on with all three of SecretKey,
// WebhookSecret and PriceID, and off with none of them.
func (c StripeConfig) Configured() bool {
	return c.SecretKey != "" || c.WebhookSecret != "" || c.PriceID != ""
}

// Validate checks the settings as the service's variables name them (prefix is SCORING_): the three
// secrets and the price come together or not at all, each of the processor's form, and the URLs are
// URLs. Stripe's secrets never appear in the messages.
func (c StripeConfig) Validate(prefix string) []error {
	var errs []error
	if c.Configured() {
		for _, v := range []struct{ name, value, form string }{
			{"STRIPE_SECRET_KEY", c.SecretKey, "sk_ or rk_"},
			{"STRIPE_WEBHOOK_SECRET", c.WebhookSecret, "whsec_"},
			{"STRIPE_PRICE_ID", c.PriceID, "price_"},
		} {
			ok := false
			for _, p := range strings.Split(v.form, " or ") {
				ok = ok || (strings.HasPrefix(v.value, p) && len(v.value) > len(p))
			}
			switch {
			case v.value == "":
				errs = append(errs, config.Invalid(prefix+v.name, "required when any of %sSTRIPE_SECRET_KEY, %sSTRIPE_WEBHOOK_SECRET, %sSTRIPE_PRICE_ID is set", prefix, prefix, prefix))
			case !ok:
				errs = append(errs, config.Invalid(prefix+v.name, "must start with %s", v.form))
			}
		}
	}
	for _, v := range []struct{ name, value string }{
		{"STRIPE_API_BASE", c.APIBase}, {"STRIPE_SUCCESS_URL", c.SuccessURL}, {"STRIPE_CANCEL_URL", c.CancelURL},
	} {
		if v.value == "" {
			continue
		}
		if err := config.CheckURL(prefix+v.name, v.value, "http", "https"); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
