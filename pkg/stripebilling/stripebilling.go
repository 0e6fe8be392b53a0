// Package stripebilling is what the services share of Stripe: the stripe-go client against a
// configurable API base (Stripe, stripe-mock or a test's loopback server), the hosted Checkout
// Session of a subscription, and the verification of webhook deliveries with their objects decoded
// to the few fields billing reads. What a service does with an event (its plans, its accounts) stays
// in the service.
package stripebilling

import (
	"context"
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

// ErrProcessor is Stripe failing or refusing a call; the cause is logged, never returned.
var ErrProcessor = errors.New("payment processor unavailable")

// Errors of VerifyEvent: a delivery the service cannot trust or read (answer 400; Stripe delivers it
// again).
var (
	// ErrSignature is a webhook whose signature header is missing, malformed or does not match.
	ErrSignature = errors.New("invalid webhook signature")
	// ErrStale is a correctly signed webhook whose timestamp is outside the tolerance: a replay of an
	// old delivery, or a clock far off.
	ErrStale = errors.New("webhook timestamp outside the tolerance")
	// ErrInvalidEvent is a signed webhook body that is not an event the service can read.
	ErrInvalidEvent = errors.New("unreadable webhook event")
)

// Config configures the client. Names in messages (Validate) are the service's variables:
// <prefix>STRIPE_SECRET_KEY and so on.
type Config struct {
	// SecretKey authenticates API calls (sk_... or a restricted rk_... key that may write Checkout
	// Sessions).
	SecretKey string
	// WebhookSecret (whsec_...) verifies the Stripe-Signature header of webhook deliveries.
	WebhookSecret string
	// PriceID is the recurring price a checkout subscribes to.
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

// Configured reports whether any of the three Stripe secrets is set: billing is on with all three of
// SecretKey, WebhookSecret and PriceID, and off with none of them (Validate refuses the rest).
func (c Config) Configured() bool {
	return c.SecretKey != "" || c.WebhookSecret != "" || c.PriceID != ""
}

// Validate checks the settings as the service's variables name them (prefix is SCORING_ or
// VERIFICATION_): the two secrets and the price come together or not at all, each of Stripe's form,
// and the URLs are URLs. Stripe's secrets never appear in the messages.
func (c Config) Validate(prefix string) []error {
	var errs []error
	if c.Configured() {
		for _, v := range []struct{ name, value, form string }{
			{"STRIPE_SECRET_KEY", c.SecretKey, "sk_ or rk_"},
			{"STRIPE_WEBHOOK_SECRET", c.WebhookSecret, "whsec_"},
			{"STRIPE_PRICE_ID", c.PriceID, "price_"},
		} {
			ok := false
			for p := range strings.SplitSeq(v.form, " or ") {
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

// Client is a stripe-go client with the service's settings.
type Client struct {
	api *stripe.Client
	cfg Config
}

// callTimeout bounds one API call; stripe-go retries a failed call twice (with an idempotency key),
// so a checkout request waits at most about three times this.
const callTimeout = 20 * time.Second

// New returns the client of cfg.
func New(cfg Config) *Client {
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = webhook.DefaultTolerance
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	bc := &stripe.BackendConfig{
		HTTPClient:        &http.Client{Timeout: callTimeout},
		LeveledLogger:     logger{cfg.Log},
		MaxNetworkRetries: stripe.Int64(2),
	}
	if cfg.APIBase != "" {
		bc.URL = stripe.String(cfg.APIBase)
	}
	return &Client{api: stripe.NewClient(cfg.SecretKey, stripe.WithBackends(stripe.NewBackendsWithConfig(bc))), cfg: cfg}
}

// Config returns the client's settings (with their defaults).
func (c *Client) Config() Config { return c.cfg }

// CheckoutRequest is a hosted checkout of a subscription to the configured price.
type CheckoutRequest struct {
	// ClientReferenceID names the buyer in the service (an account, an organization); Stripe returns
	// it in checkout.session.completed.
	ClientReferenceID string
	// Metadata is set on the session; SubscriptionMetadata on the subscription it creates, so that
	// subscription and invoice events name the buyer too.
	Metadata             map[string]string
	SubscriptionMetadata map[string]string
	// Quantity of the price: 0 sends none (a usage-based, metered price takes none; a licensed
	// price needs one).
	Quantity int64
	// CustomerID reuses the customer of an earlier subscription; else Email, when set, prefills the form.
	CustomerID string
	Email      string
	// SuccessURL and CancelURL replace the configured ones when set.
	SuccessURL string
	CancelURL  string
}

// Session is an open hosted checkout.
type Session struct {
	ID        string
	URL       string
	ExpiresAt time.Time
}

// CreateCheckout opens a hosted Checkout Session in subscription mode for the configured price. It
// returns ErrProcessor when Stripe fails or refuses (the cause is logged with Stripe's status, code
// and request id), and the context's error when the caller went away.
func (c *Client) CreateCheckout(ctx context.Context, r CheckoutRequest) (Session, error) {
	item := &stripe.CheckoutSessionCreateLineItemParams{Price: stripe.String(c.cfg.PriceID)}
	if r.Quantity > 0 {
		item.Quantity = stripe.Int64(r.Quantity)
	}
	params := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		ClientReferenceID: stripe.String(r.ClientReferenceID),
		Metadata:          r.Metadata,
		LineItems:         []*stripe.CheckoutSessionCreateLineItemParams{item},
		SuccessURL:        stripe.String(first(r.SuccessURL, c.cfg.SuccessURL)),
		CancelURL:         stripe.String(first(r.CancelURL, c.cfg.CancelURL)),
	}
	if len(r.SubscriptionMetadata) > 0 {
		params.SubscriptionData = &stripe.CheckoutSessionCreateSubscriptionDataParams{Metadata: r.SubscriptionMetadata}
	}
	switch {
	case r.CustomerID != "":
		params.Customer = stripe.String(r.CustomerID)
	case r.Email != "":
		params.CustomerEmail = stripe.String(r.Email)
	}
	sess, err := c.api.V1CheckoutSessions.Create(ctx, params)
	if err != nil {
		if ctx.Err() != nil {
			return Session{}, ctx.Err()
		}
		attrs := []any{"client_reference_id", r.ClientReferenceID, "error", err.Error()}
		var se *stripe.Error
		if errors.As(err, &se) {
			attrs = append(attrs, "stripe_status", se.HTTPStatusCode, "stripe_code", string(se.Code), "stripe_request_id", se.RequestID)
		}
		c.cfg.Log.ErrorContext(ctx, "billing: stripe checkout session failed", attrs...)
		return Session{}, ErrProcessor
	}
	if sess.URL == "" || sess.ID == "" {
		c.cfg.Log.ErrorContext(ctx, "billing: stripe checkout session without id or url", "client_reference_id", r.ClientReferenceID)
		return Session{}, ErrProcessor
	}
	return Session{ID: sess.ID, URL: sess.URL, ExpiresAt: time.Unix(sess.ExpiresAt, 0).UTC()}, nil
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Event is a verified webhook event: its id, type and creation time, and its data.object undecoded
// (read it with CheckoutSessionOf, SubscriptionOf or InvoiceOf, as Type says).
type Event struct {
	ID      string
	Type    string
	Created time.Time
	Object  []byte
}

// VerifyEvent verifies a webhook delivery with stripe-go (HMAC-SHA256 over "timestamp.payload",
// compared in constant time; the timestamp within Tolerance). It returns ErrSignature, ErrStale or
// ErrInvalidEvent. The event's API version must be of stripe-go's release train
// (stripe.APIVersion): objects of another version could be read wrongly, so such events are refused
// rather than guessed at.
func (c *Client) VerifyEvent(payload []byte, signatureHeader string) (Event, error) {
	ev, err := webhook.ConstructEventWithOptions(payload, signatureHeader, c.cfg.WebhookSecret,
		webhook.ConstructEventOptions{Tolerance: c.cfg.Tolerance})
	switch {
	case errors.Is(err, webhook.ErrTooOld):
		return Event{}, ErrStale
	case errors.Is(err, webhook.ErrNotSigned), errors.Is(err, webhook.ErrInvalidHeader), errors.Is(err, webhook.ErrNoValidSignature):
		return Event{}, ErrSignature
	case err != nil:
		return Event{}, fmt.Errorf("%w: not a Stripe event of API version %s", ErrInvalidEvent, stripe.APIVersion)
	}
	if ev.ID == "" {
		return Event{}, fmt.Errorf("%w: event has no id", ErrInvalidEvent)
	}
	e := Event{ID: ev.ID, Type: string(ev.Type), Created: time.Unix(ev.Created, 0).UTC()}
	if ev.Data != nil {
		e.Object = ev.Data.Raw
	}
	return e, nil
}

// logger passes stripe-go's messages to slog. Its informational lines (one per request) go to
// debug; its errors to warn, because the caller logs the failure it returns with context.
type logger struct{ log *slog.Logger }

func (l logger) Debugf(format string, v ...any) { l.log.Debug("stripe: " + fmt.Sprintf(format, v...)) }
func (l logger) Infof(format string, v ...any)  { l.log.Debug("stripe: " + fmt.Sprintf(format, v...)) }
func (l logger) Warnf(format string, v ...any)  { l.log.Warn("stripe: " + fmt.Sprintf(format, v...)) }
func (l logger) Errorf(format string, v ...any) { l.log.Warn("stripe: " + fmt.Sprintf(format, v...)) }
