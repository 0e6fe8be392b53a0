package app

import (
	"context"
	"errors"
	"time"

	"github.com/trustlayer/trustlayer/pkg/config"
	"github.com/trustlayer/trustlayer/pkg/platform"
	"github.com/trustlayer/trustlayer/pkg/serve"
	"github.com/trustlayer/trustlayer/pkg/stripebilling"
	verificationv1 "github.com/trustlayer/trustlayer/proto/verification/v1"
	"github.com/trustlayer/trustlayer/services/verification/internal/api"
	"github.com/trustlayer/trustlayer/services/verification/internal/reliability/billing"
	"github.com/trustlayer/trustlayer/services/verification/internal/store"
	"github.com/trustlayer/trustlayer/services/verification/internal/web"
)

// ReliabilityBillingSettings are the variables of agent reliability's billing and pages, read behind
// EnvPrefix. Billing is on with all three of STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET and
// STRIPE_PRICE_ID, and off (checkout and webhook answer 503 billing_not_configured) with none.
type ReliabilityBillingSettings struct {
	// StripeSecretKey authenticates calls to Stripe (sk_... or a restricted rk_... key that may
	// write Checkout Sessions).
	StripeSecretKey string `env:"STRIPE_SECRET_KEY"`
	// StripeWebhookSecret (whsec_...) verifies the Stripe-Signature of webhook deliveries.
	StripeWebhookSecret string `env:"STRIPE_WEBHOOK_SECRET"`
	// StripePriceID is the recurring price of the team plan (quantity 1 per workspace).
	StripePriceID string `env:"STRIPE_PRICE_ID"`
	// StripeAPIBase replaces https://api.stripe.com (stripe-mock, a test's server).
	StripeAPIBase string `env:"STRIPE_API_BASE"`
	// StripeSuccessURL and StripeCancelURL are where the hosted checkout sends the person back;
	// required when billing is on.
	StripeSuccessURL string `env:"STRIPE_SUCCESS_URL"`
	StripeCancelURL  string `env:"STRIPE_CANCEL_URL"`
	// StripeWebhookTolerance is how old a delivery's signed timestamp may be (Stripe's recommendation, 5m).
	StripeWebhookTolerance time.Duration `env:"STRIPE_WEBHOOK_TOLERANCE" envDefault:"5m"`
}

func (s *ReliabilityBillingSettings) stripe() stripebilling.Config {
	return stripebilling.Config{SecretKey: s.StripeSecretKey, WebhookSecret: s.StripeWebhookSecret, PriceID: s.StripePriceID,
		APIBase: s.StripeAPIBase, SuccessURL: s.StripeSuccessURL, CancelURL: s.StripeCancelURL, Tolerance: s.StripeWebhookTolerance}
}

// Validate checks the settings; prefix names the variables.
func (s *ReliabilityBillingSettings) Validate(prefix string) error {
	c := s.stripe()
	errs := c.Validate(prefix)
	if c.Configured() {
		if s.StripeSuccessURL == "" {
			errs = append(errs, config.Invalid(prefix+"STRIPE_SUCCESS_URL", "required when billing is configured"))
		}
		if s.StripeCancelURL == "" {
			errs = append(errs, config.Invalid(prefix+"STRIPE_CANCEL_URL", "required when billing is configured"))
		}
	}
	if s.StripeWebhookTolerance < time.Second || s.StripeWebhookTolerance > time.Hour {
		errs = append(errs, config.Invalid(prefix+"STRIPE_WEBHOOK_TOLERANCE", "must be between 1s and 1h"))
	}
	return errors.Join(errs...)
}

// registerReliabilityBilling adds the routes of agent reliability's billing and pages: the billing
// status, the checkout, the dashboard and Stripe's webhook.
func registerReliabilityBilling(ctx context.Context, cfg Config, p *platform.Platform) error {
	var proc billing.Processor
	if sc := cfg.Billing.stripe(); sc.Configured() {
		sc.Log = p.Log
		proc = billing.NewStripe(stripebilling.New(sc))
	}
	svc := billing.New(store.NewReliabilityBilling(p.Pool), proc, p.Log)
	p.Server.Handle("POST "+api.BillingWebhookPath, api.BillingWebhook(svc, p.Log))
	return p.Server.Register(&verificationv1.ReliabilityBillingService_ServiceDesc,
		api.NewReliabilityBilling(svc, api.DashboardRenderer{Render: web.RenderDashboard, ContentType: web.DashboardContentType}),
		serve.Gateway(verificationv1.RegisterReliabilityBillingServiceHandlerClient, verificationv1.NewReliabilityBillingServiceClient))
}
